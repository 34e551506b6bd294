"""TrainingState / fit_resumable in-process: what a resumed run restores, and that it equals an
uninterrupted one step for step (tests/test_resume_after_kill.py does it with real kills)."""

import json
import os
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.training.callbacks import BestModelCheckpoint, EarlyStoppingOnBest
from nlpzoo.tasks.training.training_state import (
    STATE_FILE,
    TrainingInterrupted,
    TrainingState,
    fit_resumable,
)

STEPS_PER_EPOCH = 5


def _model(seed=3):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    hidden = keras.layers.Dropout(0.5)(hidden)  # a random state that must be restored
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    schedule = keras.optimizers.schedules.PolynomialDecay(0.05, 3 * STEPS_PER_EPOCH, 0.0)
    model.compile(keras.optimizers.Adam(schedule), "mse")
    return model


def _stream(skip):
    """Batch b of the stream is a pure function of b: what a fixed order per pass gives."""
    features = tf.random.stateless_normal((64, 6), seed=(1, 2))
    targets = tf.reduce_sum(features, axis=1, keepdims=True)
    batches = tf.data.Dataset.from_tensor_slices((features, targets)).batch(8)
    return batches.repeat().skip(skip)


class _StopAt(keras.callbacks.Callback):
    """Asks `state` to stop at `step`, as the SIGINT handler would."""

    def __init__(self, state, step):
        super().__init__()
        self.state, self.step = state, step

    def on_train_batch_begin(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) + 1 == self.step:
            self.state.stop_requested = True


def _weights(model):
    return [np.array(v) for v in model.weights]


@pytest.mark.parametrize("stop_at", [3, 7, STEPS_PER_EPOCH * 2])
def test_stopped_and_resumed_run_equals_the_uninterrupted_one(tmp_path, stop_at):
    reference = _model()
    fit_resumable(reference, _stream, STEPS_PER_EPOCH, 3,
                  TrainingState(str(tmp_path / "reference"), STEPS_PER_EPOCH), verbose=0)

    backup = str(tmp_path / "run")
    model = _model()
    state = TrainingState(backup, STEPS_PER_EPOCH, every_steps=2)
    with pytest.raises(TrainingInterrupted) as raised:
        fit_resumable(model, _stream, STEPS_PER_EPOCH, 3, state,
                      callbacks=[_StopAt(state, stop_at)], verbose=0)
    assert raised.value.step == stop_at == state.read()["step"]

    resumed = _model(seed=99)  # other initial weights and dropout seeds: all restored
    assert fit_resumable(resumed, _stream, STEPS_PER_EPOCH, 3,
                         TrainingState(backup, STEPS_PER_EPOCH, every_steps=2),
                         verbose=0) == stop_at
    assert int(resumed.optimizer.iterations.numpy()) == 3 * STEPS_PER_EPOCH
    for got, expected in zip(_weights(resumed), _weights(reference)):
        np.testing.assert_array_equal(got, expected)


def test_a_save_is_one_commit_and_leaves_one_state(tmp_path):
    backup = str(tmp_path / "state")
    model = _model()
    state = TrainingState(backup, STEPS_PER_EPOCH, every_steps=2)
    fit_resumable(model, _stream, STEPS_PER_EPOCH, 1, state, verbose=0)
    record = json.load(open(os.path.join(backup, STATE_FILE)))
    assert (record["step"], record["epoch"], record["step_in_epoch"]) == (5, 1, 0)
    assert len(record["seed_states"]) == 1  # the dropout layer's generator
    assert sorted(os.listdir(backup)) == [record["weights"], STATE_FILE]
    # Weights written but never committed (a kill before the record's rename) are ignored.
    model.save_weights(os.path.join(backup, "state-99.weights.h5"))
    assert state.read()["step"] == 5


def test_resume_refuses_weights_that_disagree_with_their_record(tmp_path):
    backup = str(tmp_path / "state")
    model = _model()
    state = TrainingState(backup, STEPS_PER_EPOCH)
    fit_resumable(model, _stream, STEPS_PER_EPOCH, 1, state, verbose=0)
    record_path = os.path.join(backup, STATE_FILE)
    record = json.load(open(record_path))
    json.dump(dict(record, step=4), open(record_path, "w"))
    with pytest.raises(ValueError, match="at step 5, their record says 4"):
        TrainingState(backup, STEPS_PER_EPOCH).restore(_model())


def test_ctrl_c_asks_for_a_stop_and_a_second_one_is_keyboard_interrupt(tmp_path):
    state = TrainingState(str(tmp_path), STEPS_PER_EPOCH)
    # Python's own handler, as a binary has it (other tests of the session may change it).
    outside = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with state.stop_on_interrupt():
            os.kill(os.getpid(), signal.SIGINT)
            assert state.stop_requested
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outside)


def test_a_best_model_record_newer_than_the_state_gives_way_to_the_previous(tmp_path):
    path = str(tmp_path / "best.keras")
    with open(path + ".json", "w") as f:
        json.dump({"monitor": "val_score", "value": 0.8, "epoch": 3,
                   "previous": {"value": 0.7, "epoch": 2}}, f)
    assert (BestModelCheckpoint(path, "val_score").best_epoch,
            BestModelCheckpoint(path, "val_score", completed_epochs=3).best) == (3, 0.8)
    resumed = BestModelCheckpoint(path, "val_score", completed_epochs=2)
    assert (resumed.best, resumed.best_epoch) == (0.7, 2)


def test_early_stopping_counts_from_the_best_epoch_on_record(tmp_path):
    best = BestModelCheckpoint(str(tmp_path / "best.keras"), "val_score")
    best.best, best.best_epoch = 0.9, 2  # as restored from the record after a resume
    stopping = EarlyStoppingOnBest(best, patience=2)
    stopping.set_model(_model())
    stopping.on_epoch_end(2)  # epoch 3: one epoch without improvement
    assert not stopping.model.stop_training
    stopping.on_epoch_end(3)  # epoch 4: two
    assert stopping.model.stop_training


def test_a_run_saved_by_the_earlier_epoch_checkpoints_resumes(tmp_path):
    """Runs interrupted before this format (Keras's BackupAndRestore files) go on."""
    backup = str(tmp_path / "state")
    model = _model()
    model.fit(_stream(0), steps_per_epoch=STEPS_PER_EPOCH, epochs=1, verbose=0,
              callbacks=[keras.callbacks.BackupAndRestore(backup, delete_checkpoint=False)])
    resumed = _model(seed=99)
    state = TrainingState(backup, STEPS_PER_EPOCH)
    record = state.restore(resumed)
    assert (record["step"], record["epoch"], record["step_in_epoch"]) == (STEPS_PER_EPOCH, 1, 0)
    for got, expected in zip(_weights(resumed), _weights(model)):
        if got.dtype.kind == "f":
            np.testing.assert_array_equal(got, expected)
    state.set_model(resumed)
    state.save()  # the new format replaces the old files
    assert sorted(os.listdir(backup)) == [f"state-{STEPS_PER_EPOCH}.weights.h5", STATE_FILE]
