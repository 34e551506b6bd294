"""Training that survives a kill: the state saved every N steps, a `fit` that resumes mid-epoch.

Keras's `BackupAndRestore` saves at epoch ends (or every N batches) but
restores only the epoch: a run killed in the middle of an epoch trains that
epoch again from its first batch, on a data order and dropout masks that
start over. Here the state is the optimizer's step count `s`, and a resumed
run continues at step `s + 1` exactly as the uninterrupted run would have:

- `TrainingState` (a callback) saves the weights with the optimizer's
  variables (moments, step count, hence the learning-rate schedule), and the
  dropout layers' random-generator states, every `every_steps` steps and at
  every epoch's end, after the epoch's validation and best-model save.
  Each save writes `state-<step>.weights.h5`, then `training_state.json`
  naming it (an atomic rename: the commit point), then removes older
  weights; a kill at any moment leaves one whole, consistent state.
- `fit_resumable` restores that state and trains the rest: the data
  position is the step count itself (the training stream is rebuilt by the
  caller and `skip(s)` batches are dropped from it, so with seeded
  shuffling the same batches follow), the rest of a cut epoch is one short
  `fit`, then whole epochs as usual.
- With gradient accumulation a step is an update of n batches
  (`tasks.training.step_clock`): the state is saved at update boundaries
  only (the accumulators are then empty), and the stream position is s · n
  batches.
- `Ctrl-C` (SIGINT) inside `stop_on_interrupt()` asks for a stop: the step
  running (under accumulation: the update) finishes, the state is saved, and
  `TrainingInterrupted` is raised;
  during an epoch's validation the stop waits for the epoch's end (so the
  epoch counts). A second `Ctrl-C` stops at once.

Examples:
>>> import tempfile
>>> state = TrainingState(tempfile.mkdtemp(), steps_per_epoch=100, every_steps=25)
>>> state.read()  # nothing saved yet
>>> state.every_steps, state.steps_per_epoch
(25, 100)
"""

import contextlib
import datetime
import glob
import os
import signal
import sys

import keras
import numpy as np

from nlpzoo.tasks.io.atomic_files import FailedWrite, write_json_atomically, write_weights_atomically
from nlpzoo.tasks.io.json_text import read_json_file
from nlpzoo.tasks.training.step_clock import StepClock, accumulation_steps, at_update_boundary

STATE_FILE = "training_state.json"
# What a `keras.callbacks.BackupAndRestore` (this library's earlier format) leaves.
_KERAS_WEIGHTS, _KERAS_METADATA = "latest.weights.h5", "training_metadata.json"


class TrainingInterrupted(Exception):
    """Raised after a `Ctrl-C` once the training state of `step` is saved."""

    def __init__(self, step):
        super().__init__(f"interrupted at step {step}; the training state is saved")
        self.step = step


def _seed_states(model):
    """The random-generator state variables (dropout masks), in the model's own order.

    `save_weights` leaves them out; without them a resumed run draws other masks.
    """
    return [variable for variable in model.variables
            if variable.path.endswith("seed_generator_state")]


class TrainingState(keras.callbacks.Callback):
    """Saves and restores the training state in `backup_dir` (see the module docstring).

    Put it last among the callbacks: its epoch-end save then includes what
    the others did at that epoch's end (validation metrics, the best model,
    early stopping's decision).

    Args:
        backup_dir: the folder of the state (created when first saved).
        steps_per_epoch: optimizer steps (updates) per epoch.
        every_steps: also save every this many steps (None or 0: epoch ends only).

    Examples:
    >>> import tempfile
    >>> TrainingState(tempfile.mkdtemp(), steps_per_epoch=10).every_steps
    0
    """

    def __init__(self, backup_dir, steps_per_epoch, every_steps=None):
        super().__init__()
        if steps_per_epoch < 1:
            raise ValueError(f"steps_per_epoch must be at least 1, got {steps_per_epoch}")
        self.backup_dir = backup_dir
        self.steps_per_epoch = int(steps_per_epoch)
        self.every_steps = int(every_steps or 0)
        self.stop_requested = False
        self.last_saved_step = None
        self._clock = StepClock()  # the step of each batch's end, with no device read

    # -- reading and restoring ---------------------------------------------------------
    def read(self):
        """The saved record (a dict with "step", "weights", "finished", ...), or None."""
        record_path = os.path.join(self.backup_dir, STATE_FILE)
        if os.path.exists(record_path):
            return read_json_file(record_path, dict)
        legacy = os.path.join(self.backup_dir, _KERAS_METADATA)
        if os.path.exists(legacy) and os.path.exists(os.path.join(self.backup_dir,
                                                                  _KERAS_WEIGHTS)):
            epoch = read_json_file(legacy, dict)["epoch"]  # saved at epoch ends only
            return {"step": epoch * self.steps_per_epoch, "epoch": epoch, "step_in_epoch": 0,
                    "weights": _KERAS_WEIGHTS, "seed_states": None, "finished": False}
        return None

    def restore(self, model):
        """Loads the saved state into `model` (built and compiled); returns the record or None."""
        record = self.read()
        if record is None:
            return None
        optimizer = model.optimizer
        # Under the model's tf.distribute strategy, as fit would build its optimizer.
        strategy = getattr(model, "distribute_strategy", None)
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            if optimizer is not None and not optimizer.built:
                optimizer.build(model.trainable_variables)
            model.load_weights(os.path.join(self.backup_dir, record["weights"]))
            variables = _seed_states(model)
            saved = record.get("seed_states")
            if saved is not None and len(saved) == len(variables):
                for variable, value in zip(variables, saved):
                    variable.assign(np.asarray(value, dtype=variable.dtype))
        step = int(optimizer.iterations.numpy())
        if step != record["step"]:
            raise ValueError(f"{self.backup_dir}: the saved weights are at step {step}, "
                             f"their record says {record['step']}")
        if not at_update_boundary(optimizer):
            raise ValueError(f"{self.backup_dir}: the saved state is in the middle of an "
                             "accumulated update (saved by another program?)")
        self.last_saved_step = step
        return record

    # -- saving ------------------------------------------------------------------------
    def save(self, finished=False):
        """Saves the state at the optimizer's current step (atomically); under gradient
        accumulation only at an update's end (a `ValueError` elsewhere)."""
        optimizer = self.model.optimizer
        step = int(optimizer.iterations.numpy())
        if not at_update_boundary(optimizer):
            raise ValueError("TrainingState.save: the optimizer is in the middle of an "
                             "accumulated update; save at an update's end")
        try:
            os.makedirs(self.backup_dir, exist_ok=True)
        except OSError as error:
            raise FailedWrite(self.backup_dir, error, previous_kept=False) from error
        weights = f"state-{step}.weights.h5"
        write_weights_atomically(self.model, os.path.join(self.backup_dir, weights))
        record = {
            "step": step, "epoch": step // self.steps_per_epoch,
            "step_in_epoch": step % self.steps_per_epoch, "weights": weights,
            "finished": bool(finished),
            "seed_states": [np.asarray(v.numpy()).tolist() for v in _seed_states(self.model)],
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        try:
            write_json_atomically(record, os.path.join(self.backup_dir, STATE_FILE))
        except FailedWrite:
            # The record in force still names the previous weights: drop the new ones.
            if step != self.last_saved_step:
                try:
                    os.remove(os.path.join(self.backup_dir, weights))
                except OSError:
                    pass
            raise
        # Only now is the new state the one in force; the older files can go.
        for path in glob.glob(os.path.join(self.backup_dir, "state-*.weights.h5")):
            if os.path.basename(path) != weights:
                os.remove(path)
        for name in (_KERAS_WEIGHTS, _KERAS_METADATA):
            if os.path.exists(os.path.join(self.backup_dir, name)):
                os.remove(os.path.join(self.backup_dir, name))
        self.last_saved_step = step

    def on_epoch_begin(self, epoch, logs=None):
        self._clock.start_epoch(self.model)

    def on_train_batch_end(self, batch, logs=None):
        if not self._clock.ends_update(batch):
            return  # accumulating: a stop or a save waits for the update's end
        step = self._clock.after_batch(batch)
        if step % self.steps_per_epoch == 0:
            return  # the epoch's end saves it, once its validation has run
        if self.stop_requested:
            self.save()
            raise TrainingInterrupted(step)
        if self.every_steps and step % self.every_steps == 0:
            self.save()

    def on_epoch_end(self, epoch, logs=None):
        self.save(finished=bool(self.model.stop_training))
        if self.stop_requested:
            raise TrainingInterrupted(self.last_saved_step)

    def stop_on_interrupt(self, message=None):
        """Within it, a first `Ctrl-C` asks for a stop at the next step's end; a second stops now.

        Args:
            message: printed on the first `Ctrl-C` (to stderr), e.g. how to resume.
        """
        return stop_on_interrupt(self, message)


@contextlib.contextmanager
def stop_on_interrupt(target, message=None):
    """Within it, a first `Ctrl-C` (SIGINT) sets `target.stop_requested`; a second stops now.

    The loop that runs inside checks `target.stop_requested` where a stop
    leaves a whole state (after a step) and stops there; the second `Ctrl-C`
    raises `KeyboardInterrupt` as usual. The previous handler is back on exit.

    Args:
        target: any object; its `stop_requested` attribute is set to True.
        message: printed on the first `Ctrl-C` (to stderr), e.g. what is kept.

    Examples:
    >>> import os, signal, types
    >>> loop = types.SimpleNamespace(stop_requested=False)
    >>> with stop_on_interrupt(loop):
    ...     os.kill(os.getpid(), signal.SIGINT)
    >>> loop.stop_requested
    True
    """
    def ask_to_stop(signum, frame):
        target.stop_requested = True
        signal.signal(signal.SIGINT, previous)  # a second Ctrl-C: KeyboardInterrupt
        if message:
            print(message, flush=True, file=sys.stderr)

    previous = signal.signal(signal.SIGINT, ask_to_stop)
    try:
        yield target
    finally:
        signal.signal(signal.SIGINT, previous)


def fit_resumable(model, make_stream, steps_per_epoch, epochs, state, callbacks=(),
                  **fit_options):
    """Trains `model` to `epochs` epochs from the state `state` restores (or from step 0).

    Steps are optimizer updates: with gradient accumulation over n batches
    (`step_clock.accumulation_steps`) every `fit` takes n batches per step, and
    a resumed run skips n batches per step done.

    Args:
        model: a compiled, built model.
        make_stream: `make_stream(skip)` returns the endless training stream
            with its first `skip` batches dropped; built anew at each call
            (a seeded shuffle then replays the same order).
        steps_per_epoch: optimizer steps (updates) per epoch.
        epochs: epochs in all.
        state: the `TrainingState`, also added last to the callbacks.
        callbacks: the other callbacks.
        **fit_options: passed to every `model.fit` (validation_data, verbose, ...).

    Returns:
        The step training started from (0 for a new run).

    Raises:
        TrainingInterrupted: after a `Ctrl-C` inside `state.stop_on_interrupt()`.

    Examples:
    >>> import tempfile
    >>> import tensorflow as tf
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> data = tf.data.Dataset.from_tensors((tf.ones((2, 1)), tf.ones((2, 1))))
    >>> state = TrainingState(tempfile.mkdtemp(), steps_per_epoch=3)
    >>> fit_resumable(model, lambda skip: data.repeat().skip(skip), 3, 2, state, verbose=0)
    0
    >>> int(model.optimizer.iterations.numpy()), state.read()["step"]
    (6, 6)
    >>> fit_resumable(model, lambda skip: data.repeat().skip(skip), 3, 2, state, verbose=0)
    6
    """
    record = state.restore(model)
    start = record["step"] if record else 0
    if record and record.get("finished"):
        return start  # stopped early by the callbacks; only the final evaluation is left
    callbacks = list(callbacks) + [state]
    batches = accumulation_steps(model.optimizer)  # per step
    step = start
    while step < epochs * steps_per_epoch:
        epoch, done = divmod(step, steps_per_epoch)
        # The rest of a cut epoch alone, then every whole epoch in one fit.
        model.fit(make_stream(step * batches), initial_epoch=epoch,
                  epochs=epoch + 1 if done else epochs,
                  steps_per_epoch=(steps_per_epoch - done) * batches, callbacks=callbacks,
                  **fit_options)
        if model.stop_training:
            break
        step = int(model.optimizer.iterations.numpy())
    return start
