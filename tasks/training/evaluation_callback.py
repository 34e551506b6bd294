"""A callback that evaluates the model at each epoch end and logs the scores."""

import keras
import tensorflow as tf

from nlpzoo.tasks.training.scalar_summaries import write_scalars
from nlpzoo.tasks.training.tensorboard_scores import entity_type_scalars


class EvaluationCallback(keras.callbacks.Callback):
    """Calls `evaluate(model)` at each epoch end; logs each result as `val_<name>`.

    The scores go into the epoch `logs`, so the callbacks after this one in the
    list (TensorBoard, `BestModelCheckpoint`, the history) see them: put it
    before those. Nothing is printed here; the progress bar prints the logs.

    With `log_dir`, the per-type scores among the results (`PER_f1`,
    `PER_precision`, ...) also go to TensorBoard there, grouped by type
    (`entity/PER/f1`, see `tasks.training.tensorboard_scores`), at step `epoch` as
    Keras's `TensorBoard` callback writes epoch scalars.

    Args:
        evaluate: a function `evaluate(model) -> {name: float}`, e.g. entity F1
            of the decoded validation set.
        logged: the names of the results to put in the logs; all when None.
        log_dir: a TensorBoard folder for the per-type scores (e.g.
            `logs/validation`); None: none written.

    Examples:
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> callback = EvaluationCallback(lambda model: {"weights": len(model.weights)})
    >>> callback.set_model(model)
    >>> logs = {"loss": 0.5}
    >>> callback.on_epoch_end(0, logs)
    >>> logs
    {'loss': 0.5, 'val_weights': 2.0}
    """

    def __init__(self, evaluate, logged=None, log_dir=None):
        super().__init__()
        self.evaluate = evaluate
        self.logged = None if logged is None else tuple(logged)
        self.log_dir = log_dir
        self._writer = None

    def on_train_begin(self, logs=None):
        if self.log_dir is not None:
            self._writer = tf.summary.create_file_writer(self.log_dir)

    def on_epoch_end(self, epoch, logs=None):
        if logs is None and self._writer is None:  # nobody would see the scores
            return
        scores = self.evaluate(self.model)
        names = scores if self.logged is None else self.logged
        if logs is not None:
            for name in names:  # an undefined score (None: a correlation) is NaN to Keras
                value = scores[name]
                logs[f"val_{name}"] = float("nan") if value is None else float(value)
        if self._writer is not None:
            write_scalars(self._writer, entity_type_scalars(scores, self.logged or ()), epoch)

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
