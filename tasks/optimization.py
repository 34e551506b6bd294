"""Learning-rate schedule and optimizer for fine-tuning and pretraining."""

import keras
from keras import ops

from tasks.layerwise_optimizer import LayerwiseAdamW


@keras.saving.register_keras_serializable(package="nlpzoo")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak_learning_rate`, then linear decay to 0.

    The schedule of BERT: over `warmup_steps` the rate rises linearly, then it
    falls linearly to 0 at `total_steps` and stays there.

    Examples:
    >>> schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(step)), 6) for step in (0, 5, 10, 60, 110, 200)]
    [0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0]
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps):
        self.peak_learning_rate = float(peak_learning_rate)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        if self.total_steps < 1 or not 0 <= self.warmup_steps <= self.total_steps:
            raise ValueError(
                f"need 0 <= warmup_steps ({warmup_steps}) <= total_steps ({total_steps})"
            )

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.cast(max(self.warmup_steps, 1), "float32")
        decay = ops.cast(max(self.total_steps - self.warmup_steps, 1), "float32")
        rising = step / warmup
        falling = (self.total_steps - step) / decay
        fraction = ops.where(step < self.warmup_steps, rising, falling)
        return self.peak_learning_rate * ops.clip(fraction, 0.0, 1.0)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
        }


def create_optimizer(learning_rate, total_steps=None, warmup_steps=0, weight_decay=0.01,
                     head_learning_rate=None, layer_lr_decay=1.0, num_layers=None):
    """AdamW as BERT uses it: no weight decay on biases and LayerNorm parameters.

    With `total_steps` the rate follows `WarmupLinearDecay`; without, it is
    constant. `head_learning_rate` (the peak rate of everything outside the
    encoder) and `layer_lr_decay` (ξ < 1: block l of `num_layers` at
    ξ^(num_layers − 1 − l) × the rate) give a `LayerwiseAdamW`; the head's
    rate follows the same schedule, scaled.

    Examples:
    >>> create_optimizer(1e-4, total_steps=100).__class__.__name__
    'AdamW'
    >>> optimizer = create_optimizer(1e-4, head_learning_rate=1e-3)
    >>> type(optimizer).__name__, optimizer.multiplier("emissions/kernel")
    ('LayerwiseAdamW', 10.0)
    """
    schedule = learning_rate
    if total_steps:
        schedule = WarmupLinearDecay(learning_rate, warmup_steps, total_steps)
    options = dict(learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9,
                   beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0)
    head_multiplier = 1.0 if head_learning_rate is None else head_learning_rate / learning_rate
    if head_multiplier == 1 and layer_lr_decay == 1:
        optimizer = keras.optimizers.AdamW(**options)
    else:
        optimizer = LayerwiseAdamW(head_multiplier=head_multiplier, layer_decay=layer_lr_decay,
                                   num_layers=num_layers, **options)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer
