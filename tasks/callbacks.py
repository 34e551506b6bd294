"""Training callbacks: keep the best model and the training state, written atomically; log
the learning rate."""

import datetime
import json
import os

import keras
import numpy as np
import tensorflow as tf

from tasks.atomic_files import FailedWrite, json_writer, write_files_together
from tasks.layerwise_optimizer import LayerwiseAdamW
from tasks.optimization import learning_rate_at


class BestModelCheckpoint(keras.callbacks.Callback):
    """Saves the model to `path` (a `.keras` file) whenever `monitor` improves.

    The file is written beside the target and renamed over it, so an
    interrupted save never leaves a half-written model. The best value and
    epoch, the epoch's validation logs and the time of the save (UTC) go to
    `path + ".json"`; the model and that record change together or not at
    all: a save that fails (disk full, permission denied) raises
    `FailedWrite` and leaves the previous best model and record as they were.

    Args:
        path: where the best model goes, ending in `.keras`.
        monitor: the logged metric, e.g. "val_accuracy".
        mode: "max" or "min".

    Examples:
    >>> callback = BestModelCheckpoint("/tmp/no-such-run/best.keras", "val_accuracy", "max")
    >>> callback.best, callback.best_epoch
    (-inf, None)
    """

    def __init__(self, path, monitor, mode="max"):
        super().__init__()
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        self.path = path
        self.monitor = monitor
        self.mode = mode
        self.best = -np.inf if mode == "max" else np.inf
        self.best_epoch = None
        record = path + ".json"
        if os.path.exists(record):  # resuming: do not forget the earlier best
            with open(record) as f:
                saved = json.load(f)
            self.best, self.best_epoch = saved["value"], saved["epoch"]

    def _improved(self, value):
        return value > self.best if self.mode == "max" else value < self.best

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            raise KeyError(
                f"BestModelCheckpoint: metric {self.monitor!r} not in logs "
                f"({', '.join(sorted(logs or {}))})"
            )
        if not self._improved(float(value)):
            return
        record = {
            "monitor": self.monitor, "value": float(value), "epoch": epoch + 1,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "validation": {name: float(logged) for name, logged in sorted(logs.items())
                           if name.startswith("val_")},
        }
        write_files_together([(self.path, self.model.save),
                              (self.path + ".json", json_writer(record))])
        # Only once both are on disk: a failed save leaves the earlier best in force.
        self.best, self.best_epoch = record["value"], record["epoch"]


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """Keras's `BackupAndRestore`, whose saves never lose the previous training state.

    Keras writes the weights and the epoch counter in place, one after the
    other: a save that fails half-way (disk full) leaves a torn weights file,
    or new weights with the old epoch. Here both are written beside their
    targets and renamed together (`write_files_together`), so `backup_dir`
    always holds one whole, consistent state; a failed save raises
    `FailedWrite` and the previous state stays, ready to resume from.
    Restoring is Keras's own.

    Examples:
    >>> import tempfile
    >>> callback = AtomicBackupAndRestore(tempfile.mkdtemp())
    >>> callback.save_freq
    'epoch'
    """

    def _save_model(self):
        # Keras 3.15's private state: the paths and counters its _save_model writes.
        try:
            os.makedirs(self.backup_dir, exist_ok=True)
        except OSError as error:
            raise FailedWrite(self.backup_dir, error, previous_kept=False) from error
        metadata = {"epoch": self._current_epoch, "batch": self._last_batch_seen}
        write_files_together([
            (self._weights_path, lambda path: self.model.save_weights(path, overwrite=True)),
            (self._training_metadata_path, json_writer(metadata)),
        ])


class LearningRateLogger(keras.callbacks.Callback):
    """Writes the learning rate of every training step to TensorBoard.

    After each batch it writes, at step `optimizer.iterations` (1 after the
    first step), the rate applied by the step just taken: the schedule at
    `optimizer.iterations − 1`, or a fixed rate as it stands. Tag
    "learning_rate/step"; with a `LayerwiseAdamW` whose head multiplier is
    not 1, the head's rate goes to "learning_rate/head" as well. The tags do
    not clash with those of Keras's `TensorBoard` callback, so `log_dir` may
    be its `logs/train` folder. With `steps_per_execution` > 1, batches end
    every few steps: each step taken since the last batch is written then.

    The writer opens at the start of `fit`, is flushed at each epoch's end
    and closed at the end of training.

    Args:
        log_dir: the folder of the event file.

    Examples:
    >>> import tempfile
    >>> logger = LearningRateLogger(tempfile.mkdtemp())
    >>> logger.tag, logger.head_tag
    ('learning_rate/step', 'learning_rate/head')
    """

    tag = "learning_rate/step"
    head_tag = "learning_rate/head"

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
        self._writer = None
        self._last_step = None

    def on_train_begin(self, logs=None):
        self._writer = tf.summary.create_file_writer(self.log_dir)
        # A resumed run (BackupAndRestore) goes on from the restored iteration count.
        self._last_step = int(self.model.optimizer.iterations.numpy())

    def on_train_batch_end(self, batch, logs=None):
        optimizer = self.model.optimizer
        step = int(optimizer.iterations.numpy())
        inner = getattr(optimizer, "inner_optimizer", optimizer)
        head_multiplier = inner.head_multiplier if isinstance(inner, LayerwiseAdamW) else 1.0
        with self._writer.as_default():
            for taken in range(self._last_step + 1, step + 1):
                rate = float(learning_rate_at(optimizer, taken - 1))
                tf.summary.scalar(self.tag, rate, step=taken)
                if head_multiplier != 1:
                    tf.summary.scalar(self.head_tag, rate * head_multiplier, step=taken)
        self._last_step = max(self._last_step, step)

    def on_epoch_end(self, epoch, logs=None):
        self._writer.flush()

    def on_train_end(self, logs=None):
        self._writer.flush()
        self._writer.close()
        self._writer = None
