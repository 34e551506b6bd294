"""Training callbacks: keep the best model and the training state, written atomically; log
the training loss and learning rate per step."""

import datetime
import functools
import math
import os

import keras
import numpy as np
import tensorflow as tf

from nlpzoo.layers.keras_internals import loss_tracker, save_without_optimizer_state
from nlpzoo.tasks.io.atomic_files import json_writer, write_files_together
from nlpzoo.tasks.io.json_text import read_json_file
from nlpzoo.tasks.training.layerwise_optimizer import LayerwiseAdamW
from nlpzoo.tasks.training.optimization import learning_rate_at
from nlpzoo.tasks.training.step_clock import StepClock


class BestModelCheckpoint(keras.callbacks.Callback):
    """Saves the model to `path` (a `.keras` file) whenever `monitor` improves.

    The file holds the model and its compile config, not the optimizer's
    state (`layers.keras_internals.save_without_optimizer_state`): the size
    of the weights, not three times it.

    The file is written beside the target and renamed over it, so an
    interrupted save never leaves a half-written model. The best value and
    epoch, the epoch's validation logs and the time of the save (UTC) go to
    `path + ".json"`; the model and that record change together or not at
    all: a save that fails (disk full, permission denied) raises
    `FailedWrite` and leaves the previous best model and record as they were.

    A run killed after the model or its record was renamed into place but
    before the epoch's training state was saved trains that epoch again:
    given `completed_epochs` (the epochs the restored state has finished), a
    record from a later epoch gives way to the best it replaced (kept in the
    record as "previous"), so the epoch trained again saves its model anew.

    Args:
        path: where the best model goes, ending in `.keras`.
        monitor: the logged metric, e.g. "val_accuracy".
        mode: "max" or "min".
        completed_epochs: when resuming, the epochs whose end the restored
            training state includes.

    Examples:
    >>> callback = BestModelCheckpoint("/tmp/no-such-run/best.keras", "val_accuracy", "max")
    >>> callback.best, callback.best_epoch
    (-inf, None)
    """

    def __init__(self, path, monitor, mode="max", completed_epochs=None):
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
            saved = read_json_file(record, dict)
            if completed_epochs is not None and saved["epoch"] > completed_epochs:
                saved = saved.get("previous") or {"value": self.best, "epoch": None}
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
            "validation": {name: float(logged) if math.isfinite(float(logged)) else None
                           for name, logged in sorted(logs.items()) if name.startswith("val_")},
            "previous": (None if self.best_epoch is None
                         else {"value": self.best, "epoch": self.best_epoch}),
        }
        # No optimizer state: the file is the finished model; resuming reads checkpoints/.
        write_files_together([(self.path, functools.partial(save_without_optimizer_state,
                                                              self.model)),
                              (self.path + ".json", json_writer(record))])
        # Only once both are on disk: a failed save leaves the earlier best in force.
        self.best, self.best_epoch = record["value"], record["epoch"]


class EarlyStoppingOnBest(keras.callbacks.Callback):
    """Stops training once the best epoch of a `BestModelCheckpoint` is `patience` epochs old.

    Keras's `EarlyStopping` counts epochs without improvement in memory and
    starts counting again in every `fit`, so a resumed run would wait
    `patience` more epochs. Here the count is the distance to the best epoch
    on record, the same before and after a resume. Place it after the
    `BestModelCheckpoint` it reads.

    Args:
        best_checkpoint: the `BestModelCheckpoint` of the run.
        patience: epochs without improvement before stopping (≥ 1).

    Examples:
    >>> best = BestModelCheckpoint("/tmp/no-such-run/best.keras", "val_accuracy", "max")
    >>> EarlyStoppingOnBest(best, patience=2).patience
    2
    """

    def __init__(self, best_checkpoint, patience):
        super().__init__()
        if patience < 1:
            raise ValueError(f"patience must be at least 1, got {patience}")
        self.best_checkpoint = best_checkpoint
        self.patience = int(patience)

    def on_epoch_end(self, epoch, logs=None):
        best_epoch = self.best_checkpoint.best_epoch
        if best_epoch is not None and epoch + 1 - best_epoch >= self.patience:
            self.model.stop_training = True
            print(f"Epoch {epoch + 1}: early stopping: {self.best_checkpoint.monitor} has "
                  f"not improved for {epoch + 1 - best_epoch} epochs (best: epoch "
                  f"{best_epoch})", flush=True)


class StepLogger(keras.callbacks.Callback):
    """Writes the training loss and learning rate of every `every_steps`-th step to TensorBoard.

    At step `s` (`optimizer.iterations` after the step, 1 after the first
    one) with `s` a multiple of `every_steps`, and at the last step of each
    epoch, it writes:

    - "learning_rate/step": the rate the step applied, the schedule at
      `s − 1` (or a fixed rate as it stands); with a `LayerwiseAdamW` whose
      head multiplier is not 1, the head's rate as "learning_rate/head";
    - "loss/step": the mean training loss of the steps since the last write
      (weighted by examples, as Keras's loss is), so with `every_steps=1`
      each step's own loss. Keras's running epoch mean would hide spikes.

    A step is an optimizer update (`tasks.training.step_clock`): with gradient
    accumulation its loss is the mean over the update's batches, the loss of
    the n-times larger batch, and the step axis is that run's.

    Between writes a batch costs no device read: the step count comes from
    a `StepClock` (one read per epoch), the loss tracker is read only when
    writing, and the schedule is evaluated on the host's CPU (on a GPU, an
    op there would wait for the step's kernels). `every_steps` bounds the
    event file's size and the schedule evaluations. The tags do not clash with those of Keras's
    `TensorBoard` callback, so `log_dir` may be its `logs/train` folder.
    A resumed run goes on from the restored step count.

    Args:
        log_dir: the folder of the event file.
        every_steps: write every this many steps (1: every step).

    Examples:
    >>> import tempfile
    >>> logger = StepLogger(tempfile.mkdtemp(), every_steps=50)
    >>> logger.every_steps, logger.tag, logger.loss_tag
    (50, 'learning_rate/step', 'loss/step')
    """

    tag = "learning_rate/step"
    head_tag = "learning_rate/head"
    loss_tag = "loss/step"

    def __init__(self, log_dir, every_steps=1):
        super().__init__()
        if every_steps < 1:
            raise ValueError(f"every_steps must be at least 1, got {every_steps}")
        self.log_dir = log_dir
        self.every_steps = int(every_steps)
        self._writer = None
        self._last_step = None
        self._loss_base = (0.0, 0.0)
        self._clock = StepClock()

    def on_train_begin(self, logs=None):
        self._writer = tf.summary.create_file_writer(self.log_dir)
        # A resumed run (BackupAndRestore) goes on from the restored iteration count.
        self._last_step = int(self.model.optimizer.iterations.numpy())

    def on_epoch_begin(self, epoch, logs=None):
        self._loss_base = (0.0, 0.0)  # Keras resets its loss mean at each epoch's start
        self._clock.start_epoch(self.model)

    def on_train_batch_end(self, batch, logs=None):
        optimizer = self.model.optimizer
        step = self._clock.after_batch(batch)
        steps_per_epoch = (self.params or {}).get("steps")
        epoch_ends = steps_per_epoch is not None and batch + 1 >= steps_per_epoch
        due = [taken for taken in range(self._last_step + 1, step + 1)
               if taken % self.every_steps == 0]
        if epoch_ends and step > self._last_step and (not due or due[-1] != step):
            due.append(step)
        if due:
            self._write(optimizer, due, step, logs)
        self._last_step = max(self._last_step, step)

    def _write(self, optimizer, steps, step, logs):
        inner = getattr(optimizer, "inner_optimizer", optimizer)
        head_multiplier = inner.head_multiplier if isinstance(inner, LayerwiseAdamW) else 1.0
        loss = self._window_loss(logs)
        with self._writer.as_default(), tf.device("CPU:0"):
            for taken in steps:
                rate = float(learning_rate_at(optimizer, taken - 1))
                tf.summary.scalar(self.tag, rate, step=taken)
                if head_multiplier != 1:
                    tf.summary.scalar(self.head_tag, rate * head_multiplier, step=taken)
            if loss is not None:
                tf.summary.scalar(self.loss_tag, loss, step=step)

    def _window_loss(self, logs):
        """The example-weighted mean loss since the last write, from Keras's loss mean."""
        tracker = loss_tracker(self.model)
        if tracker is None:
            return (logs or {}).get("loss")
        # .numpy(): under a strategy these are sync-on-read variables, which float() refuses;
        # read here, outside the replicas, they are summed over all of them.
        total, count = float(tracker.total.numpy()), float(tracker.count.numpy())
        base_total, base_count = self._loss_base
        self._loss_base = (total, count)
        if count <= base_count:
            return None
        return (total - base_total) / (count - base_count)

    def on_epoch_end(self, epoch, logs=None):
        self._writer.flush()

    def on_train_end(self, logs=None):
        self._writer.flush()
        self._writer.close()
        self._writer = None


class NonFiniteLoss(RuntimeError):
    """Training produced a NaN or infinite loss; nothing was saved from that step on."""

    def __init__(self, step, loss):
        super().__init__(f"the training loss became {loss} at step {step}")
        self.step = step
        self.loss = loss


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Raises `NonFiniteLoss` as soon as the training loss is NaN or infinite.

    Put it first among the callbacks: it then stops the run before any other
    callback saves the broken weights as a checkpoint or as the best model
    (Keras's `TerminateOnNaN` only asks `fit` to stop, after which the run
    would end as if it had finished). The loss Keras logs is the epoch's
    running mean, so once a step's loss is NaN every later one is too.

    Examples:
    >>> callback = StopOnNonFiniteLoss()
    >>> callback.on_train_batch_end(0, {"loss": 0.5})
    >>> callback.on_train_batch_end(1, {"loss": float("nan")})
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.training.callbacks.NonFiniteLoss: the training loss became nan at step 2
    """

    def on_train_batch_end(self, batch, logs=None):
        self._check(logs, batch + 1)

    def on_epoch_end(self, epoch, logs=None):
        self._check(logs, None)

    def _check(self, logs, step):
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        loss = float(loss)
        if not np.isfinite(loss):
            if self.model is not None and getattr(self.model, "optimizer", None) is not None:
                step = int(self.model.optimizer.iterations.numpy())
            raise NonFiniteLoss(step, loss)


class PaddingFractionLogger(keras.callbacks.Callback):
    """Writes the model's padding fraction to TensorBoard as `debug/padding_fraction`.

    `model.padding_fraction` (`tasks.text.padding_fraction`) counts what the
    encoder computed on; it is not a Keras metric, so this callback resets
    it at each epoch's start and at validation's start, and writes each
    epoch's training figure to `<log_dir>/train` and the validation figure to
    `<log_dir>/validation` (the runs of Keras's `TensorBoard` callback), at
    step `epoch` as Keras's epoch scalars. The `debug/` group keeps it away
    from the figures a reader compares. A model without one is left alone.

    Args:
        log_dir: the run's TensorBoard folder (`<model_dir>/logs`).

    Examples:
    >>> PaddingFractionLogger("/tmp/no-such-run/logs").tag
    'debug/padding_fraction'
    """

    tag = "debug/padding_fraction"

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
        self._writers = {}
        self._figures = {}

    def _metric(self):
        return getattr(self.model, "padding_fraction", None)

    def _take(self, run):
        metric = self._metric()
        if metric is not None and float(metric.slots.numpy()) > 0:
            self._figures[run] = float(metric.result())
        if metric is not None:
            metric.reset_state()

    def on_epoch_begin(self, epoch, logs=None):
        self._figures = {}
        if self._metric() is not None:
            self._metric().reset_state()

    def on_test_begin(self, logs=None):
        self._take("train")

    def on_test_end(self, logs=None):
        self._take("validation")

    def on_epoch_end(self, epoch, logs=None):
        if "train" not in self._figures:  # no validation this epoch
            self._take("train")
        for run, value in self._figures.items():
            if run not in self._writers:
                self._writers[run] = tf.summary.create_file_writer(
                    os.path.join(self.log_dir, run))
            with self._writers[run].as_default():
                tf.summary.scalar(self.tag, value, step=epoch)
            self._writers[run].flush()

    def on_train_end(self, logs=None):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
