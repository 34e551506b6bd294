"""Learning-rate schedule and optimizer for fine-tuning and pretraining."""

import keras
from keras import ops


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


def create_optimizer(learning_rate, total_steps=None, warmup_steps=0, weight_decay=0.01):
    """AdamW as BERT uses it: no weight decay on biases and LayerNorm parameters.

    With `total_steps` the rate follows `WarmupLinearDecay`; without, it is constant.
    """
    schedule = learning_rate
    if total_steps:
        schedule = WarmupLinearDecay(learning_rate, warmup_steps, total_steps)
    optimizer = keras.optimizers.AdamW(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer
