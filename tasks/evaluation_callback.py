"""A callback that evaluates the model at each epoch end and logs the scores."""

import keras


class EvaluationCallback(keras.callbacks.Callback):
    """Calls `evaluate(model)` at each epoch end; logs each result as `val_<name>`.

    The scores go into the epoch `logs`, so the callbacks after this one in the
    list (TensorBoard, `BestModelCheckpoint`, the history) see them: put it
    before those. Nothing is printed here; the progress bar prints the logs.

    Args:
        evaluate: a function `evaluate(model) -> {name: float}`, e.g. entity F1
            of the decoded validation set.

    Examples:
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> callback = EvaluationCallback(lambda model: {"weights": len(model.weights)})
    >>> callback.set_model(model)
    >>> logs = {"loss": 0.5}
    >>> callback.on_epoch_end(0, logs)
    >>> logs
    {'loss': 0.5, 'val_weights': 2.0}
    """

    def __init__(self, evaluate):
        super().__init__()
        self.evaluate = evaluate

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:  # nobody would see the scores
            return
        for name, value in self.evaluate(self.model).items():
            logs[f"val_{name}"] = float(value)
