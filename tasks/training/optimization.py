"""Learning-rate schedules and the optimizer for fine-tuning and pretraining."""

import keras
from keras import ops

from nlpzoo.layers.keras_internals import (
    configured_learning_rate,
    gradient_clipping,
    replace_gradient_clipping,
    uses_weight_decay,
)
from nlpzoo.tasks.training.layerwise_optimizer import LayerwiseAdamW

# The names `learning_rate_schedule` and `create_optimizer` take.
SCHEDULES = ("linear", "cosine", "slanted_triangular", "constant")
# Variables AdamW leaves out of its weight decay, as BERT does (biases, LayerNorm scales and
# offsets), matched by name. Keras keeps this out of an optimizer's config.
NO_WEIGHT_DECAY = ("bias", "gamma", "beta")


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


@keras.saving.register_keras_serializable(package="nlpzoo")
class SlantedTriangular(keras.optimizers.schedules.LearningRateSchedule):
    """ULMFiT's slanted triangular learning rate (Howard & Ruder 2018, eq. 3).

    A short linear rise over the first `warmup_steps` (the paper's
    cut = ⌊T · cut_frac⌋) and a long linear fall to `total_steps` (T), from
    and to η_max / `ratio` rather than 0:

        p = t / cut                      for t < cut,
        p = 1 − (t − cut) / (T − cut)    otherwise;
        η_t = η_max · (1 + p · (ratio − 1)) / ratio.

    Past `total_steps` the rate stays at η_max / ratio (p is clipped at 0).

    Args:
        peak_learning_rate: η_max, reached at step `warmup_steps`.
        warmup_steps: cut, the length of the rise (0: start at the peak).
        total_steps: T; needs warmup_steps < total_steps.
        ratio: how much smaller the lowest rate is than the peak (32 in the paper).

    Examples:
    >>> schedule = SlantedTriangular(3.2e-3, warmup_steps=10, total_steps=110, ratio=32)
    >>> [round(float(schedule(step)), 6) for step in (0, 5, 10, 60, 110, 200)]
    [0.0001, 0.00165, 0.0032, 0.00165, 0.0001, 0.0001]
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps, ratio=32.0):
        self.peak_learning_rate = float(peak_learning_rate)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.ratio = float(ratio)
        if not 0 <= self.warmup_steps < self.total_steps:
            raise ValueError(
                f"need 0 <= warmup_steps ({warmup_steps}) < total_steps ({total_steps})"
            )
        if self.ratio < 1:
            raise ValueError(f"ratio must be >= 1, got {ratio}")

    def __call__(self, step):
        step = ops.cast(step, "float32")
        cut = float(self.warmup_steps)
        rising = step / max(cut, 1.0)  # unused when cut is 0
        falling = 1.0 - (step - cut) / float(self.total_steps - self.warmup_steps)
        fraction = ops.clip(ops.where(step < cut, rising, falling), 0.0, 1.0)
        return self.peak_learning_rate * (1.0 + fraction * (self.ratio - 1.0)) / self.ratio

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "ratio": self.ratio,
        }


@keras.saving.register_keras_serializable(package="nlpzoo")
class StartingAt(keras.optimizers.schedules.LearningRateSchedule):
    """`schedule` started at optimizer step `start_step`: the rate at step `start_step + t`
    is `schedule(t)` (and `schedule(0)` before it).

    What a second `fit` of a model compiled without `total_steps` gets: its
    own warm-up and decay, over its own steps (`schedule_for_fit`).

    Examples:
    >>> schedule = StartingAt(WarmupLinearDecay(1e-3, 10, 110), start_step=100)
    >>> [round(float(schedule(step)), 6) for step in (0, 105, 160)]
    [0.0, 0.0005, 0.0005]
    """

    def __init__(self, schedule, start_step):
        if isinstance(schedule, dict):
            schedule = keras.saving.deserialize_keras_object(schedule)
        self.schedule = schedule
        self.start_step = int(start_step)

    def __call__(self, step):
        return self.schedule(ops.maximum(ops.cast(step, "float32") - self.start_step, 0.0))

    def get_config(self):
        return {"schedule": keras.saving.serialize_keras_object(self.schedule),
                "start_step": self.start_step}


@keras.saving.register_keras_serializable(package="nlpzoo")
class PerUpdate(keras.optimizers.schedules.LearningRateSchedule):
    """`schedule` counted in updates of an optimizer that accumulates gradients over
    `accumulation_steps` batches: the rate at batch count `s` is `schedule(s // n)`.

    Keras evaluates an optimizer's schedule at its count of batches (`apply`
    calls), also under `gradient_accumulation_steps`; update u (0-based) is
    applied on batch count u·n + n − 1, where this gives `schedule(u)`: the
    rate a run of n-times larger batches applies at its step u. The wrapped
    schedule's steps (warm-up, total) are updates. `per_update` wraps only
    where it is needed.

    Examples:
    >>> schedule = PerUpdate(WarmupLinearDecay(1e-3, 10, 110), accumulation_steps=4)
    >>> [round(float(schedule(batches)), 6) for batches in (0, 20, 23, 24, 43)]
    [0.0, 0.0005, 0.0005, 0.0006, 0.001]
    """

    def __init__(self, schedule, accumulation_steps):
        if isinstance(schedule, dict):
            schedule = keras.saving.deserialize_keras_object(schedule)
        self.schedule = schedule
        self.accumulation_steps = int(accumulation_steps)
        if self.accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {accumulation_steps}")

    def __call__(self, step):
        return self.schedule(ops.floor_divide(step, self.accumulation_steps))

    def get_config(self):
        return {"schedule": keras.saving.serialize_keras_object(self.schedule),
                "accumulation_steps": self.accumulation_steps}


def per_update(rate, accumulation_steps):
    """`rate` as an optimizer accumulating over `accumulation_steps` batches needs it:
    a schedule counted in updates (`PerUpdate`), a fixed rate as it is.

    Examples:
    >>> per_update(1e-3, 4), type(per_update(WarmupLinearDecay(1e-3, 1, 9), 4)).__name__
    (0.001, 'PerUpdate')
    >>> schedule = WarmupLinearDecay(1e-3, 1, 9)
    >>> per_update(schedule, 1) is schedule
    True
    """
    schedule = isinstance(rate, keras.optimizers.schedules.LearningRateSchedule)
    if accumulation_steps > 1 and schedule:
        return PerUpdate(rate, accumulation_steps)
    return rate


def schedule_for_fit(name, peak_learning_rate, total_steps, warmup_fraction=0.1,
                     warmup_steps=None, start_step=0):
    """`(schedule, one line saying what it is)`: the command line's schedule for one `fit`.

    What `EncoderTaskModel.fit` gives a model compiled without `total_steps`
    once the steps are known: `name` (one of `SCHEDULES`) over `total_steps`,
    warming up over `warmup_steps`, by default `warmup_fraction` of them
    (`int(fraction × total)`, as tools/train.py does), started at optimizer
    step `start_step` (`StartingAt`) when the optimizer has already stepped.

    Examples:
    >>> schedule, line = schedule_for_fit("linear", 1e-3, total_steps=100)
    >>> line
    'learning rate: linear, warm-up over 10 steps to 0.001 then decay to step 100'
    >>> [round(float(schedule(step)), 6) for step in (5, 10, 55)]
    [0.0005, 0.001, 0.0005]
    """
    if warmup_steps is None:
        warmup_steps = int(warmup_fraction * total_steps)
    warmup_steps = min(int(warmup_steps), int(total_steps) - (name != "linear"))
    schedule = learning_rate_schedule(name, peak_learning_rate, total_steps, max(warmup_steps, 0))
    if start_step:
        schedule = StartingAt(schedule, start_step)
    first = f" from step {start_step}" if start_step else ""
    line = (f"learning rate: {name}{first}, warm-up over {warmup_steps} steps to "
            f"{peak_learning_rate:g} then decay to step {start_step + total_steps}")
    return schedule, line


def learning_rate_schedule(name, peak_learning_rate, total_steps=None, warmup_steps=0,
                           ratio=32.0):
    """The learning rate an optimizer takes: a schedule by name, or a float.

    - "linear": `WarmupLinearDecay` (BERT): linear warm-up from 0 over
      `warmup_steps`, linear decay to 0 at `total_steps`;
    - "cosine": linear warm-up from 0 over `warmup_steps`, then cosine decay
      from the peak to 0 at `total_steps` (Keras's `CosineDecay`);
    - "slanted_triangular": ULMFiT's `SlantedTriangular` (the warm-up is its
      cut; the rate runs from and to peak / `ratio`);
    - "constant": the peak rate throughout (`warmup_steps` is ignored).

    Without `total_steps` every schedule is the constant peak rate. "cosine"
    and "slanted_triangular" need warmup_steps < total_steps.

    Args:
        name: one of `SCHEDULES`.
        peak_learning_rate: the highest rate.
        total_steps: the number of training steps (None: constant rate).
        warmup_steps: the length of the warm-up.
        ratio: "slanted_triangular" only: peak / lowest rate.

    Raises:
        ValueError: an unknown name, or steps the schedule cannot take.

    Examples:
    >>> schedule = learning_rate_schedule("cosine", 1e-3, total_steps=110, warmup_steps=10)
    >>> [round(float(schedule(step)), 6) for step in (0, 5, 10, 60, 110, 200)]
    [0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0]
    >>> learning_rate_schedule("cosine", 1e-3), learning_rate_schedule("constant", 1e-3, 100)
    (0.001, 0.001)
    """
    if name not in SCHEDULES:
        raise ValueError(f"unknown learning-rate schedule {name!r}; valid: "
                         f"{', '.join(SCHEDULES)}")
    peak_learning_rate = float(peak_learning_rate)
    if not total_steps or name == "constant":
        return peak_learning_rate
    if name == "linear":
        return WarmupLinearDecay(peak_learning_rate, warmup_steps, total_steps)
    if name == "slanted_triangular":
        return SlantedTriangular(peak_learning_rate, warmup_steps, total_steps, ratio=ratio)
    if not 0 <= warmup_steps < total_steps:
        raise ValueError(f"the cosine schedule needs 0 <= warmup_steps ({warmup_steps}) < "
                         f"total_steps ({total_steps})")
    # Keras's CosineDecay is exactly this: a linear warm-up from initial_learning_rate
    # (0.0, a float so its dtype is float32) to warmup_target, then 0.5·(1 + cos(π·t/D))
    # over D = decay_steps, clamped at the end.
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0, decay_steps=int(total_steps) - int(warmup_steps), alpha=0.0,
        warmup_target=peak_learning_rate, warmup_steps=int(warmup_steps))


def create_optimizer(learning_rate, total_steps=None, warmup_steps=0, weight_decay=0.01,
                     head_learning_rate=None, layer_lr_decay=1.0, num_layers=None,
                     schedule="linear", clip_norm=1.0, gradient_accumulation_steps=1):
    """AdamW as BERT uses it: no weight decay on biases and LayerNorm parameters.

    The gradients are clipped to a global norm of `clip_norm` (BERT's 1.0; 0 or
    None: not clipped).

    `gradient_accumulation_steps=n` > 1: the gradients of n batches are
    summed and their mean applied once, every n-th batch (Keras's own
    accumulation): the update of one n-times larger batch when the loss is
    a mean over equally many examples per batch (a loss averaged over each
    batch's real tokens weights the batches equally instead). Clipping and
    weight decay act on that mean, once per update; `total_steps` and
    `warmup_steps` count updates (`PerUpdate`), and so does
    `optimizer.iterations` (`tasks.training.step_clock`).

    Sparse gradients are summed into dense ones (`sum_sparse_gradients`).

    With `total_steps` the rate follows `schedule` (one of `SCHEDULES`, see
    `learning_rate_schedule`; "linear" is BERT's `WarmupLinearDecay`) and
    peaks at `learning_rate`; without, it is constant. `head_learning_rate`
    (the peak rate of everything outside the encoder) and `layer_lr_decay`
    (ξ < 1: block l of `num_layers` at ξ^(num_layers − 1 − l) × the rate)
    give a `LayerwiseAdamW`; the head's rate follows the same schedule, scaled.

    Examples:
    >>> create_optimizer(1e-4, total_steps=100).__class__.__name__
    'AdamW'
    >>> optimizer = create_optimizer(1e-4, head_learning_rate=1e-3)
    >>> type(optimizer).__name__, optimizer.multiplier("emissions/kernel")
    ('LayerwiseAdamW', 10.0)
    >>> optimizer = create_optimizer(3.2e-3, total_steps=110, warmup_steps=10,
    ...                              schedule="slanted_triangular")
    >>> [round(float(learning_rate_at(optimizer, step)), 6) for step in (0, 10, 110)]
    [0.0001, 0.0032, 0.0001]
    >>> unclipped = create_optimizer(1e-4, clip_norm=0)
    >>> create_optimizer(1e-4).global_clipnorm, unclipped.global_clipnorm
    (1.0, None)
    >>> accumulating = create_optimizer(1e-3, total_steps=110, warmup_steps=10,
    ...                                 gradient_accumulation_steps=4)
    >>> rate = learning_rate_at(accumulating, 5)  # update 5: batches 20 to 23
    >>> accumulating.gradient_accumulation_steps, round(float(rate), 6)
    (4, 0.0005)
    """
    if clip_norm is not None and clip_norm < 0:
        raise ValueError(f"clip_norm must be >= 0 (0: no clipping), got {clip_norm}")
    if int(gradient_accumulation_steps) != gradient_accumulation_steps or (
            gradient_accumulation_steps < 1):
        raise ValueError("gradient_accumulation_steps must be a whole number >= 1 (1: off), "
                         f"got {gradient_accumulation_steps}")
    accumulation = int(gradient_accumulation_steps)
    schedule = per_update(
        learning_rate_schedule(schedule, learning_rate, total_steps, warmup_steps), accumulation)
    options = dict(learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9,
                   beta_2=0.999, epsilon=1e-6,
                   global_clipnorm=float(clip_norm) if clip_norm else None,
                   gradient_accumulation_steps=accumulation if accumulation > 1 else None)
    head_multiplier = 1.0 if head_learning_rate is None else head_learning_rate / learning_rate
    if head_multiplier == 1 and layer_lr_decay == 1:
        optimizer = keras.optimizers.AdamW(**options)
    else:
        optimizer = LayerwiseAdamW(head_multiplier=head_multiplier, layer_decay=layer_lr_decay,
                                   num_layers=num_layers, **options)
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    sum_sparse_gradients(optimizer)
    return optimizer


def sum_sparse_gradients(optimizer):
    """Makes `optimizer` add up each sparse gradient (`tf.IndexedSlices`: an embedding
    matrix's, one slice per token) into the dense gradient before clipping and updating.

    Keras 3 passes the slices on as they are, and with a token twice in a
    batch Adam's second moment then takes the sum of the slices' squares, not
    the square of their sum, and the clipping norm the sum of squared slices:
    not the gradient's (keras-team/keras#19992 shows Adam's moments are dense
    updates anyway, so this costs no extra update). The dense sum is what
    BERT's optimizer and an accumulated gradient use, so that gradient
    accumulation over n batches equals one n-times larger batch.

    Examples:
    >>> import tensorflow as tf
    >>> optimizer = keras.optimizers.Adam(0.1)
    >>> sum_sparse_gradients(optimizer)
    >>> embeddings = keras.Variable(tf.zeros((3, 1)))
    >>> twice = tf.IndexedSlices(tf.constant([[1.0], [1.0]]), tf.constant([0, 0]), [3, 1])
    >>> optimizer.apply([twice], [embeddings])
    >>> [round(float(v), 4) for v in optimizer.variables[-1].numpy().ravel()]  # (1 + 1)²
    [0.004, 0.0, 0.0]
    """
    import tensorflow as tf

    clip = gradient_clipping(optimizer)

    def dense_then_clipped(gradients):
        return clip([tf.convert_to_tensor(gradient) if isinstance(gradient, tf.IndexedSlices)
                     else gradient for gradient in gradients])

    replace_gradient_clipping(optimizer, dense_then_clipped)


def copy_optimizer(optimizer):
    """A new, unbuilt optimizer like `optimizer` (`create_optimizer`'s): class, schedule,
    per-part rates and the variables left out of weight decay.

    Keras's config round trip (`keras.optimizers.deserialize(serialize(...))`)
    keeps the first three but not the last: the copy would decay biases and
    LayerNorm parameters too. This one applies `NO_WEIGHT_DECAY` again when
    the original excludes them, and `sum_sparse_gradients`. A `LossScaleOptimizer` is copied with its inner
    optimizer.

    Examples:
    >>> original = create_optimizer(1e-4, total_steps=100, head_learning_rate=1e-3)
    >>> copy = copy_optimizer(original)
    >>> bias = keras.Variable([0.0], name="bias")
    >>> type(copy).__name__, copy.multiplier("crf/transitions"), uses_weight_decay(copy, bias)
    ('LayerwiseAdamW', 10.0, False)
    """
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    copy = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    copy_inner = getattr(copy, "inner_optimizer", copy)
    excluded = [name for name in NO_WEIGHT_DECAY
                if not uses_weight_decay(inner, keras.Variable([0.0], name=name))]
    if excluded:
        copy_inner.exclude_from_weight_decay(var_names=excluded)
    sum_sparse_gradients(copy_inner)
    return copy


def learning_rate_at(optimizer, step):
    """The (base) learning rate `optimizer` applies at 0-based `step`, an update.

    A schedule is evaluated at `step` (under gradient accumulation, the
    schedule `PerUpdate` wraps: the rate of update `step`); a fixed rate (a float, or the variable
    that `ReduceLROnPlateau` changes) is returned as it stands now. A
    `LossScaleOptimizer` (mixed_float16) is looked through. Per-part factors
    (`LayerwiseAdamW.multiplier`) are not applied.

    Examples:
    >>> optimizer = keras.optimizers.AdamW(WarmupLinearDecay(1e-3, 10, 110))
    >>> [round(float(learning_rate_at(optimizer, step)), 6) for step in (5, 60)]
    [0.0005, 0.0005]
    >>> round(float(learning_rate_at(keras.optimizers.AdamW(2e-5), 1000)), 8)
    2e-05
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    # Not `optimizer.learning_rate`: that is the rate at the *next* step
    # (`optimizer.iterations`), not at an arbitrary one.
    rate = configured_learning_rate(optimizer)
    if isinstance(rate, PerUpdate):
        rate = rate.schedule
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        return rate(step)
    if callable(rate) and not isinstance(rate, keras.Variable):
        return rate()
    # A variable's current value: under a strategy it is mirrored, which float() refuses.
    return ops.convert_to_tensor(rate.numpy() if isinstance(rate, keras.Variable) else rate)
