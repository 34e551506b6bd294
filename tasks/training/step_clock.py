"""The optimizer's step count in callbacks, without reading it from the device every batch.

What "step" means here, and in every callback and the resumable loop: one
optimizer *update* (Keras's public `optimizer.iterations`). With gradient
accumulation (`create_optimizer(gradient_accumulation_steps=n)`) an update
takes n batches, and the run counts what a run of n-times larger batches
counts: its total steps, warm-up, checkpoint, logging and unfreezing
intervals are updates. Batches appear in two places only: Keras's `fit`
(`steps_per_epoch` batches) and the position in the training stream; both
are the updates times n, since training state is saved at update boundaries
only (`StepClock.ends_update`). `accumulation_steps` gives n.
"""

from nlpzoo.layers.keras_internals import batches_taken


def accumulation_steps(optimizer):
    """How many batches one update of `optimizer` takes (its `gradient_accumulation_steps`;
    1 without accumulation). A `LossScaleOptimizer` is looked through.

    Examples:
    >>> import keras
    >>> accumulation_steps(keras.optimizers.Adam()), accumulation_steps(
    ...     keras.optimizers.Adam(gradient_accumulation_steps=4))
    (1, 4)
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    return int(getattr(optimizer, "gradient_accumulation_steps", None) or 1)


def at_update_boundary(optimizer):
    """Whether `optimizer` has applied every batch it took: no accumulated update is half
    done (always true without accumulation). Only then may its state be saved or read back.

    Examples:
    >>> import keras
    >>> at_update_boundary(keras.optimizers.Adam(gradient_accumulation_steps=4))
    True
    """
    steps = int(optimizer.iterations.numpy())
    return batches_taken(optimizer) == steps * accumulation_steps(optimizer)


class StepClock:
    """Tells a callback the optimizer step (update) each batch ends on.

    `optimizer.iterations` lives on the device: reading it after every batch
    (`.numpy()`) makes the host wait for that step, every step. Read once at
    each epoch's start (the batches taken, `layers.keras_internals.batches_taken`),
    the count of a batch's end is that value plus the batch's index in the
    epoch plus one (`on_train_batch_end(batch, ...)`: Keras passes the index
    of the last step the call covers, so this holds with `steps_per_execution`
    > 1 too, and a resumed or cut epoch starts from the restored count).
    With gradient accumulation over n batches, the update count is that
    batch count // n, and a batch ends an update when it is a multiple of n.

    Examples:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.optimizer.iterations.assign(40)
    >>> clock = StepClock()
    >>> clock.start_epoch(model)
    >>> clock.after_batch(0), clock.after_batch(9), clock.ends_update(0)
    (41, 50, True)
    >>> import numpy as np
    >>> model.compile(keras.optimizers.SGD(gradient_accumulation_steps=2), "mse")
    >>> _ = model.fit(np.ones((4, 1)), np.ones((4, 1)), batch_size=1, verbose=0)
    >>> clock.start_epoch(model)  # 4 batches taken: 2 updates
    >>> [(clock.after_batch(batch), clock.ends_update(batch)) for batch in (0, 1, 2)]
    [(2, False), (3, True), (3, False)]
    """

    def __init__(self):
        self._epoch_start = None
        self._accumulation = 1

    def start_epoch(self, model):
        """Reads the step count once, as the epoch starts (call from `on_epoch_begin`)."""
        self._epoch_start = batches_taken(model.optimizer)
        self._accumulation = accumulation_steps(model.optimizer)

    def batches_after(self, batch):
        """The batches taken once the batch `batch` (its index in the epoch) is done."""
        if self._epoch_start is None:
            raise RuntimeError("StepClock.start_epoch was not called at the epoch's start")
        return self._epoch_start + int(batch) + 1

    def after_batch(self, batch):
        """The step (update) count once the batch `batch` (its index in the epoch) is done."""
        return self.batches_after(batch) // self._accumulation

    def ends_update(self, batch):
        """Whether the batch `batch` completes an update (always, without accumulation)."""
        return self.batches_after(batch) % self._accumulation == 0
