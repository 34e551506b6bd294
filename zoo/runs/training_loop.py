"""The training loop the training binaries share: resumable, Ctrl-C-safe, logged.

`tools/train.py`, `tools/distill.py` and `tools/pretrain.py` train a model into a
model directory, and `tools/multitask.py` task models on one encoder
(`train_entries_resumably`), with the same guarantees (see `tasks.training.training_state`): the state
is saved every `checkpoint_every_steps` steps and at every epoch's end, a
killed run resumes at its last saved step on the same batches with the same
command, `Ctrl-C` saves and exits with status 130, and a failed save stops
with one line. The best model by the task's validation metric is kept as
`best_model.keras`; TensorBoard gets the epoch logs (`logs/train`,
`logs/validation`) and the per-step loss and learning rate.
"""

import contextlib
import functools
import os
import sys

import keras
import numpy as np

from nlpzoo.tasks.io.atomic_files import FailedWrite
from nlpzoo.tasks.training.callbacks import (
    BestModelCheckpoint,
    EarlyStoppingOnBest,
    NonFiniteLoss,
    PaddingFractionLogger,
    StepLogger,
    StopOnNonFiniteLoss,
)
from nlpzoo.tasks.training.layer_mix_logger import LayerMixLogger
from nlpzoo.tasks.training.shared_encoder_training import SharedEncoderModels, StepLog
from nlpzoo.tasks.training.training_state import TrainingInterrupted, TrainingState, fit_resumable
from nlpzoo.zoo.runs import directory as md
from nlpzoo.tasks.io.console import fit_verbosity
from nlpzoo.tasks.io.errors import UserError


def training_stream(make_pass, passes, skip):
    """`passes` passes over the data, repeated, with the first `skip` batches dropped.

    `make_pass(index)` builds pass `index` in its own fixed order (a
    `(seed, index)` shuffle), so that the stream, and hence the batches a
    resumed run replays, are a pure function of the seed. Bucketing makes
    the number of batches vary a little from one order to the next, so an
    epoch (a counted number of steps) is not exactly a pass: one spare pass
    beyond the epochs keeps the stream long enough before it repeats.

    Examples:
    >>> import tensorflow as tf
    >>> make_pass = lambda index: tf.data.Dataset.range(3).map(lambda x: x + 10 * index)
    >>> [int(x) for x in training_stream(make_pass, 2, skip=2).take(5)]
    [2, 10, 11, 12, 0]
    """
    stream = functools.reduce(lambda first, second: first.concatenate(second),
                              [make_pass(index) for index in range(passes)])
    return stream.repeat().skip(skip)


def train_resumably(model, *, model_dir, steps_per_epoch, epochs, validation_data,
                    make_pass=None, make_stream=None, monitor=None, mode=None,
                    task_callbacks=(), extra_callbacks=(), checkpoint_every_steps=500,
                    log_every_steps=50, early_stopping_patience=None, shard=None,
                    what="training"):
    """Trains `model` for `epochs` epochs into `model_dir`, or finishes a run killed there.

    Args:
        model: a compiled, built model.
        model_dir: the run's directory (`zoo.runs.directory` layout).
        steps_per_epoch: optimizer steps per epoch (pretraining: per checkpoint
            interval of its endless stream).
        epochs: epochs in all.
        validation_data: the validation dataset of each epoch (or None).
        make_pass: `make_pass(index)` → pass `index` of the training data
            (see `training_stream`); `epochs + 1` passes are built.
        make_stream: instead of `make_pass`, `make_stream(skip)` → the endless
            training stream with its first `skip` batches dropped.
        monitor, mode: the logged validation metric that picks the best
            model, and "max" or "min" (`Task.monitor`); None keeps no best model.
        task_callbacks: the task's own callbacks (`Task.callbacks`); they run
            first, as they add the validation metrics the others read.
        extra_callbacks: more callbacks, after the logging ones.
        checkpoint_every_steps: save the state every this many steps (0: at
            epoch ends only).
        log_every_steps: the per-step TensorBoard series' interval.
        early_stopping_patience: stop after this many epochs without a better
            validation metric (None: never).
        shard: applied to the training stream and validation data (a
            tf.distribute sharding policy); none by default.
        what: the word for the run in messages ("training", "pretraining").

    Returns:
        The `BestModelCheckpoint` (its `best_epoch`), or None without `monitor`.

    Raises:
        UserError: a save failed (the state on disk is the last whole one).
        SystemExit: 130 after `Ctrl-C`, the state saved.
    """
    shard = shard or (lambda dataset: dataset)
    if make_stream is None:
        make_stream = functools.partial(training_stream, make_pass, epochs + 1)
    state = TrainingState(md.path(model_dir, md.CHECKPOINTS), steps_per_epoch,
                          checkpoint_every_steps)
    saved = state.read()
    logs = md.path(model_dir, md.LOGS)
    best_checkpoint = None
    if monitor is not None:
        best_checkpoint = BestModelCheckpoint(
            md.path(model_dir, md.BEST_MODEL), monitor, mode,
            completed_epochs=saved["step"] // steps_per_epoch if saved else None)
    callbacks = list(task_callbacks) + [
        *([best_checkpoint] if best_checkpoint else []),
        keras.callbacks.TensorBoard(logs),
        PaddingFractionLogger(logs),
        LayerMixLogger(logs),
        StepLogger(os.path.join(logs, "train"), log_every_steps),
        *extra_callbacks,
    ]
    if early_stopping_patience and best_checkpoint:
        callbacks.append(EarlyStoppingOnBest(best_checkpoint, early_stopping_patience))
    total_steps = steps_per_epoch * epochs
    if saved:
        print(f"resuming from step {saved['step']} of {total_steps} (epoch "
              f"{saved['epoch'] + 1}, step {saved['step_in_epoch']} of {steps_per_epoch}), "
              f"saved {saved.get('date', 'earlier')}", flush=True)
    fit_or_exit(model, lambda skip: shard(make_stream(skip)), steps_per_epoch, epochs, state,
                callbacks=callbacks,
                validation_data=None if validation_data is None else shard(validation_data),
                what=what)
    return best_checkpoint


def fit_or_exit(model, make_stream, steps_per_epoch, epochs, state, *, callbacks,
                validation_data, what="training"):
    """`fit_resumable` as a binary runs it: Ctrl-C saves and exits 130, a failed save is one line.

    Args:
        model, make_stream, steps_per_epoch, epochs, state, callbacks: as
            `tasks.training.training_state.fit_resumable` takes them.
        validation_data: each epoch's validation data (or None).
        what: the word for the run in messages ("training", "pretraining").

    Raises:
        UserError: a save failed (the state on disk is the last whole one), or the
            loss became NaN or infinite (nothing saved from then on).
        SystemExit: 130 after `Ctrl-C`, the state saved.
    """
    # First: a NaN loss stops the run before anything saves the broken weights.
    callbacks = [StopOnNonFiniteLoss(), *callbacks]
    with _ending_cleanly(state, steps_per_epoch * epochs, what):
        fit_resumable(model, make_stream, steps_per_epoch, epochs, state,
                      callbacks=callbacks, validation_data=validation_data,
                      shuffle=False, verbose=fit_verbosity())


@contextlib.contextmanager
def _ending_cleanly(state, total_steps, what):
    """Runs a resumable loop: Ctrl-C saves and exits 130, a failed save or a NaN loss is
    one line (a `UserError`) that says what is kept."""
    resume_hint = f"the same command resumes from the saved state in {state.backup_dir}"
    try:
        with state.stop_on_interrupt("stopping after this step (the state is then saved); "
                                     "Ctrl-C again to stop at once"):
            yield
    except NonFiniteLoss as error:
        kept = (f"the last good state (step {state.last_saved_step}) is kept in "
                f"{state.backup_dir}" if state.last_saved_step else "no state was saved")
        raise UserError(f"{error}: {what} stopped ({kept}; no final metrics written); "
                        "a lower --learning_rate may help")
    except FailedWrite as error:
        raise UserError(f"{error}; {what} stopped: once that is fixed, {resume_hint}")
    except TrainingInterrupted as interrupted:
        print(f"interrupted at step {interrupted.step} of {total_steps}: {resume_hint}",
              file=sys.stderr, flush=True)
        sys.exit(130)  # the shell's code for a run stopped by Ctrl-C
    if state.stop_requested:  # Ctrl-C after the last save: only what follows training is left
        print(f"interrupted after {what}: {resume_hint}", file=sys.stderr, flush=True)
        sys.exit(130)


def train_entries_resumably(entries, plan, optimizer, *, model_dir, make_stream, end_epoch,
                            checkpoint_every_steps=500, log_every_steps=50, verbose=False,
                            announce=None):
    """Multi-task training (tools/multitask.py) into `model_dir`, or the rest of a killed run.

    The guarantees of `train_resumably`, for task models that share one
    encoder and one optimizer and are trained batch by batch as `plan` says:
    the state (every model, the optimizer, the dropout states: a
    `SharedEncoderModels`) is saved every `checkpoint_every_steps` steps and
    at every epoch's end, after `end_epoch`; a resumed run continues at the
    step after the saved one, on the same batches (each entry's stream skips
    the batches the plan drew from it before).

    Args:
        entries: objects with `name`, `model`, `loss_mean` (a `keras.metrics.Mean`)
            and `step` (the entry's train step on a batch, `train_step`).
        plan: for each epoch, the entry index of each of its batches.
        optimizer: the shared optimizer (`shared_optimizer`).
        model_dir: the run's directory (`zoo.runs.directory` layout).
        make_stream: `make_stream(entry, skip)` → the entry's endless training
            stream with its first `skip` batches dropped.
        end_epoch: `end_epoch(epoch, batches)` after an epoch's last step
            (validation, best models, epoch logs); returns the epoch line.
        checkpoint_every_steps: save the state every this many steps (0: at
            epoch ends only).
        log_every_steps: the per-step TensorBoard series' interval (`StepLog`).
        verbose: print the progress within each epoch.
        announce: a line printed once `Ctrl-C` saves and stops.

    Raises:
        UserError: a save failed, or a loss became NaN or infinite.
        SystemExit: 130 after `Ctrl-C`, the state saved.

    Examples:
    >>> import tempfile, types
    >>> import tensorflow as tf
    >>> from nlpzoo.tasks.training.shared_encoder_training import shared_optimizer, train_step
    >>> shared, entries = keras.layers.Dense(2), []
    >>> for name in ("a", "b"):
    ...     inputs = keras.Input((3,))
    ...     model = keras.Model(inputs, keras.layers.Dense(1)(shared(inputs)))
    ...     model.compile("sgd", "mse")
    ...     entries.append(types.SimpleNamespace(name=name, model=model,
    ...                                          loss_mean=keras.metrics.Mean()))
    >>> optimizer = shared_optimizer([entry.model for entry in entries])
    >>> for entry in entries:
    ...     entry.step = train_step(entry.model, optimizer, entry.loss_mean)
    >>> data = tf.data.Dataset.from_tensors((tf.ones((2, 3)), tf.ones((2, 1))))
    >>> plan = [np.array([0, 1, 0]), np.array([1, 1, 0])]  # each batch's entry, per epoch
    >>> train_entries_resumably(
    ...     entries, plan, optimizer, model_dir=tempfile.mkdtemp(),
    ...     make_stream=lambda entry, skip: data.repeat().skip(skip),
    ...     end_epoch=lambda epoch, batches: f"epoch {epoch + 1}: {len(batches)} batches")
    epoch 1: 3 batches
    epoch 2: 3 batches
    >>> int(optimizer.iterations.numpy())
    6
    """
    ends = np.cumsum([len(batches) for batches in plan])
    total_steps = int(ends[-1])
    state = TrainingState(md.path(model_dir, md.CHECKPOINTS), len(plan[0]),
                          checkpoint_every_steps)
    state.set_model(SharedEncoderModels([entry.model for entry in entries], optimizer))
    record = state.restore(state.model)
    step = record["step"] if record else 0
    drawn = np.concatenate(plan)[:step]
    streams = {entry.name: iter(make_stream(entry, int(np.sum(drawn == number))))
               for number, entry in enumerate(entries)}
    if record:
        epoch = int(np.searchsorted(ends, step, side="right"))
        print(f"resuming from step {step} of {total_steps} (epoch {epoch + 1}), saved "
              f"{record.get('date', 'earlier')}", flush=True)
    step_log = StepLog(md.path(model_dir, md.LOGS), entries, optimizer, log_every_steps)
    with _ending_cleanly(state, total_steps, "multi-task training"):
        if announce:
            print(announce, flush=True)
        for epoch, batches in enumerate(plan):
            done = step - int(ends[epoch] - len(batches))  # of this epoch, before resuming
            if done >= len(batches):
                continue
            _train_epoch(entries, batches, done, streams, state, step_log, verbose,
                         f"epoch {epoch + 1}/{len(plan)}")
            step = int(ends[epoch])
            for entry in entries:  # before any best model is saved from broken weights
                loss = float(entry.loss_mean.result())
                if not np.isfinite(loss):
                    raise NonFiniteLoss(step, f"{loss} for {entry.name}")
            print(("\n" if verbose else "") + end_epoch(epoch, batches), flush=True)
            state.save()
            if state.stop_requested:
                raise TrainingInterrupted(step)
    step_log.close()


def _train_epoch(entries, batches, done, streams, state, step_log, verbose, what):
    """Trains an epoch's batches from its `done`-th on; saves the state as due in it."""
    for entry in entries:
        entry.model.reset_metrics()
        entry.loss_mean.reset_state()
    step_log.epoch_begins()
    for count in range(done + 1, len(batches) + 1):
        entry = entries[batches[count - 1]]
        entry.step(next(streams[entry.name]))
        step = int(state.model.optimizer.iterations.numpy())
        step_log.after_step(step, epoch_ends=count == len(batches))
        if count < len(batches):  # the epoch's end saves after its validation
            if state.stop_requested:
                state.save()
                raise TrainingInterrupted(step)
            if state.every_steps and step % state.every_steps == 0:
                state.save()
        if verbose and (count % 10 == 0 or count == len(batches)):
            print(f"\r{what}: step {count}/{len(batches)}", end="", flush=True)
