"""The optimizer's step count in callbacks, without reading it from the device every batch."""


class StepClock:
    """Tells a callback the optimizer step each batch ends on.

    `optimizer.iterations` lives on the device: reading it after every batch
    (`.numpy()`) makes the host wait for that step, every step. Read once at
    each epoch's start, the count of a batch's end is that value plus the
    batch's index in the epoch plus one (`on_train_batch_end(batch, ...)`:
    Keras passes the index of the last step the call covers, so this holds
    with `steps_per_execution` > 1 too, and a resumed or cut epoch starts
    from the restored count).

    Examples:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.optimizer.iterations.assign(40)
    >>> clock = StepClock()
    >>> clock.start_epoch(model)
    >>> clock.after_batch(0), clock.after_batch(9)
    (41, 50)
    """

    def __init__(self):
        self._epoch_start = None

    def start_epoch(self, model):
        """Reads the step count once, as the epoch starts (call from `on_epoch_begin`)."""
        self._epoch_start = int(model.optimizer.iterations.numpy())

    def after_batch(self, batch):
        """The step count once the batch `batch` (its index in the epoch) is done."""
        if self._epoch_start is None:
            raise RuntimeError("StepClock.start_epoch was not called at the epoch's start")
        return self._epoch_start + int(batch) + 1
