"""Gradient accumulation: batch 4 accumulated over 2 batches makes the updates of batch 8.

The losses of each update, the learning rate of each update and the final
weights of 20 updates agree to 1e-5, with a warm-up + linear decay schedule,
weight decay and active clipping, with and without XLA; a run killed in the
middle resumes exactly, and the training state is only saved at updates' ends.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers.keras_internals import batches_taken
from nlpzoo.tasks.training.optimization import PerUpdate, create_optimizer, learning_rate_at
from nlpzoo.tasks.training.step_clock import StepClock, accumulation_steps
from nlpzoo.tasks.training.training_state import (
    STATE_FILE,
    TrainingInterrupted,
    TrainingState,
    fit_resumable,
)
from nlpzoo.zoo import build_model

UPDATES, BIG_BATCH, CLIP_NORM = 20, 8, 0.05
SCHEDULE = dict(learning_rate=3e-3, total_steps=UPDATES, warmup_steps=5, schedule="linear")


def _model(accumulation=1, jit_compile=False):
    keras.utils.set_random_seed(7)  # the same initial weights for every run
    return build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100,
                       num_layers=1, dropout=0.0, attention_dropout=0.0, clip_norm=CLIP_NORM,
                       gradient_accumulation_steps=accumulation, jit_compile=jit_compile,
                       **SCHEDULE)


def _data(examples=UPDATES * BIG_BATCH):
    rng = np.random.default_rng(0)
    features = {"token_ids": rng.integers(4, 100, (examples, 10)).astype("int32"),
                "segment_ids": np.zeros((examples, 10), "int32"),
                "padding_mask": np.ones((examples, 10), "int32")}
    return features, rng.integers(0, 3, (examples,)).astype("int32")


def _stream(batch_size):
    """The examples in one fixed order, in batches of `batch_size`, repeated."""
    return tf.data.Dataset.from_tensor_slices(_data()).batch(batch_size).repeat()


def _train(accumulation, jit_compile):
    """(loss of each update, final weights): one epoch per update, so that the epoch's
    loss (Keras's mean over its batches) is the update's."""
    model = _model(accumulation, jit_compile)
    history = model.fit(_stream(BIG_BATCH // accumulation), epochs=UPDATES,
                        steps_per_epoch=accumulation, verbose=0)
    return model, np.array(history.history["loss"]), [w.numpy() for w in model.weights]


@pytest.mark.parametrize("jit_compile", [False, True])
def test_two_batches_of_4_make_the_updates_of_one_batch_of_8(jit_compile):
    big_model, big_losses, big_weights = _train(1, jit_compile)
    model, losses, weights = _train(2, jit_compile)
    assert int(model.optimizer.iterations.numpy()) == UPDATES == int(
        big_model.optimizer.iterations.numpy())
    assert batches_taken(model.optimizer) == 2 * UPDATES
    np.testing.assert_allclose(losses, big_losses, atol=1e-5, rtol=0)
    assert len(weights) == len(big_weights)
    for weight, big_weight in zip(weights, big_weights):
        np.testing.assert_allclose(weight, big_weight, atol=1e-5, rtol=0)
    # Not trivially equal: the weights moved, and the losses changed from update to update.
    assert np.ptp(big_losses) > 1e-3
    assert max(np.abs(w - w0).max() for w, w0 in zip(weights, _initial_weights())) > 1e-3


def _initial_weights():
    model = _model()
    model(_data(2)[0])
    return [w.numpy() for w in model.weights]


def test_clipping_is_active_in_the_equivalence_run():
    """The first update's gradient norm is far above CLIP_NORM: clipping changes the step."""
    model = _model()
    features, labels = _data(BIG_BATCH)
    with tf.GradientTape() as tape:
        loss = model.compute_loss(y=labels, y_pred=model(features, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    assert float(tf.linalg.global_norm(gradients)) > 5 * CLIP_NORM


def test_the_learning_rate_of_each_update_is_the_big_batch_runs():
    big = create_optimizer(**{**SCHEDULE, "learning_rate": 1e-3})
    small = create_optimizer(**{**SCHEDULE, "learning_rate": 1e-3}, gradient_accumulation_steps=4)
    for update in range(UPDATES + 2):
        expected = float(learning_rate_at(big, update))
        assert float(learning_rate_at(small, update)) == pytest.approx(expected, abs=1e-9)
        # Keras evaluates the schedule at the batch count; update u is applied on the
        # last of its 4 batches, 4u + 3, and every batch of the update sees the same rate.
        schedule = small._learning_rate  # noqa: SLF001 (test only)
        for batch in range(4 * update, 4 * update + 4):
            assert float(schedule(batch)) == pytest.approx(expected, abs=1e-9)


def test_the_applied_learning_rate_follows_updates():
    """optimizer.learning_rate (what the update step uses) at each batch of a real run."""
    model = _model(accumulation=2)
    rates = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            rates.append(float(self.model.optimizer.learning_rate.numpy()))

    model.fit(_stream(4), epochs=1, steps_per_epoch=8, verbose=0, callbacks=[Record()])
    big = create_optimizer(**SCHEDULE)
    expected = [float(learning_rate_at(big, batch // 2)) for batch in range(8)]
    np.testing.assert_allclose(rates, expected, atol=1e-9)


def test_per_update_round_trips_through_the_optimizer_config():
    optimizer = create_optimizer(**SCHEDULE, gradient_accumulation_steps=3)
    copy = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert copy.gradient_accumulation_steps == 3
    assert isinstance(copy._learning_rate, PerUpdate)  # noqa: SLF001 (test only)
    assert float(learning_rate_at(copy, 4)) == pytest.approx(
        float(learning_rate_at(optimizer, 4)))


def test_create_optimizer_refuses_a_bad_count():
    with pytest.raises(ValueError, match="whole number >= 1"):
        create_optimizer(1e-3, gradient_accumulation_steps=0)
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100,
                    gradient_accumulation_steps=1.5)


def test_step_clock_counts_updates_and_their_ends():
    model = _model(accumulation=3)
    model.fit(_stream(4), epochs=1, steps_per_epoch=7, verbose=0)  # 2 updates + 1 batch
    clock = StepClock()
    clock.start_epoch(model)
    assert accumulation_steps(model.optimizer) == 3
    assert [clock.after_batch(b) for b in range(4)] == [2, 3, 3, 3]
    assert [clock.ends_update(b) for b in range(4)] == [False, True, False, False]


# --- saving and resuming -------------------------------------------------------------------

STEPS_PER_EPOCH, EPOCHS, ACCUMULATION = 3, 2, 2


def _stream_skipping(skip):
    return _stream(4).skip(skip)


def test_training_state_saves_only_at_updates_ends(tmp_path):
    model = _model(accumulation=2)
    model.fit(_stream(4), epochs=1, steps_per_epoch=3, verbose=0)  # 1 update + 1 batch
    state = TrainingState(str(tmp_path), steps_per_epoch=STEPS_PER_EPOCH)
    state.set_model(model)
    with pytest.raises(ValueError, match="middle of an accumulated update"):
        state.save()
    model.fit(_stream(4).skip(3), epochs=1, steps_per_epoch=1, verbose=0)
    state.save()
    assert state.read()["step"] == 2


def test_a_resumed_run_with_accumulation_ends_as_the_uninterrupted_one(tmp_path):
    reference = _model(accumulation=ACCUMULATION)
    fit_resumable(reference, _stream_skipping, STEPS_PER_EPOCH, EPOCHS,
                  TrainingState(str(tmp_path / "a"), STEPS_PER_EPOCH), verbose=0)
    assert int(reference.optimizer.iterations.numpy()) == STEPS_PER_EPOCH * EPOCHS
    assert batches_taken(reference.optimizer) == STEPS_PER_EPOCH * EPOCHS * ACCUMULATION

    class StopAt(keras.callbacks.Callback):
        """Asks for a stop at the batch after step 4's first batch: the stop waits for
        the update's end."""

        def __init__(self, state):
            super().__init__()
            self.state = state

        def on_train_batch_end(self, batch, logs=None):
            if batches_taken(self.model.optimizer) == 9:  # step 4, half accumulated
                self.state.stop_requested = True

    backup = str(tmp_path / "b")
    first = _model(accumulation=ACCUMULATION)
    state = TrainingState(backup, STEPS_PER_EPOCH, every_steps=1)
    with pytest.raises(TrainingInterrupted) as stopped:
        fit_resumable(first, _stream_skipping, STEPS_PER_EPOCH, EPOCHS, state,
                      callbacks=[StopAt(state)], verbose=0)
    assert stopped.value.step == 5  # the update running finished before the stop
    assert state.read()["step"] == 5 and batches_taken(first.optimizer) == 10
    # The accumulators are optimizer variables: saved, and empty at an update's end.
    accumulators = [v for v in first.optimizer.variables if "accumulator" in v.path]
    assert accumulators and all(not np.any(v.numpy()) for v in accumulators)

    resumed = _model(accumulation=ACCUMULATION)
    start = fit_resumable(resumed, _stream_skipping, STEPS_PER_EPOCH, EPOCHS,
                          TrainingState(backup, STEPS_PER_EPOCH), verbose=0)
    assert start == 5
    assert batches_taken(resumed.optimizer) == STEPS_PER_EPOCH * EPOCHS * ACCUMULATION
    for weight, expected in zip(resumed.weights, reference.weights):
        np.testing.assert_allclose(weight.numpy(), expected.numpy(), atol=1e-6, rtol=0)
    assert os.path.exists(os.path.join(backup, STATE_FILE))
