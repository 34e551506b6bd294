"""The training loop the training binaries share: resumable, Ctrl-C-safe, logged.

`tools/train.py`, `tools/distill.py` and `tools/pretrain.py` train a model into a
model directory with the same guarantees (see `tasks.training.training_state`): the state
is saved every `checkpoint_every_steps` steps and at every epoch's end, a
killed run resumes at its last saved step on the same batches with the same
command, `Ctrl-C` saves and exits with status 130, and a failed save stops
with one line. The best model by the task's validation metric is kept as
`best_model.keras`; TensorBoard gets the epoch logs (`logs/train`,
`logs/validation`) and the per-step loss and learning rate.
"""

import functools
import os
import sys

import keras

from nlpzoo.tasks.io.atomic_files import FailedWrite
from nlpzoo.tasks.training.callbacks import (
    BestModelCheckpoint,
    EarlyStoppingOnBest,
    NonFiniteLoss,
    StepLogger,
    StopOnNonFiniteLoss,
)
from nlpzoo.tasks.training.training_state import TrainingInterrupted, TrainingState, fit_resumable
from nlpzoo.zoo.runs import directory as md
from nlpzoo.tasks.io.console import fit_verbosity
from nlpzoo.tools.cli.errors import UserError


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
    total_steps = steps_per_epoch * epochs
    resume_hint = f"the same command resumes from the saved state in {state.backup_dir}"
    # First: a NaN loss stops the run before anything saves the broken weights.
    callbacks = [StopOnNonFiniteLoss(), *callbacks]
    try:
        with state.stop_on_interrupt("stopping after this step (the state is then saved); "
                                     "Ctrl-C again to stop at once"):
            fit_resumable(model, make_stream, steps_per_epoch, epochs, state,
                          callbacks=callbacks, validation_data=validation_data,
                          shuffle=False, verbose=fit_verbosity())
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
