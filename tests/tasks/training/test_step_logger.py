"""The per-step learning-rate log: each step's value read back from the event file."""

import glob

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from nlpzoo.tasks.training.callbacks import StepLogger
from nlpzoo.tasks.training.layerwise_optimizer import LayerwiseAdamW
from nlpzoo.tasks.training.optimization import WarmupLinearDecay

PEAK, WARMUP, TOTAL = 1e-2, 3, 9


def _scalars(log_dir):
    """{tag: {step: value}} of every tensor summary under log_dir."""
    accumulator = EventAccumulator(log_dir, size_guidance={"tensors": 0})
    accumulator.Reload()
    return {tag: {event.step: float(tf.make_ndarray(event.tensor_proto))
                  for event in accumulator.Tensors(tag)}
            for tag in accumulator.Tags()["tensors"]}


def _expected(step):
    """The rate applied at (1-based) logged step `step`: the schedule at step − 1."""
    t = step - 1
    return PEAK * (t / WARMUP if t < WARMUP else max(0.0, (TOTAL - t) / (TOTAL - WARMUP)))


def _fit(optimizer, log_dir, steps, **fit_options):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="head")])
    model.compile(optimizer=optimizer, loss="mse", **fit_options.pop("compile", {}))
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2 * steps, 4)), rng.normal(size=(2 * steps, 2))
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[
        StepLogger(log_dir), keras.callbacks.TensorBoard(log_dir, update_freq="batch")],
        **fit_options)
    return model


@pytest.mark.parametrize("steps_per_execution", [1, 3])
def test_every_step_logs_the_rate_it_applied(tmp_path, steps_per_execution):
    log_dir = str(tmp_path)
    _fit(keras.optimizers.AdamW(WarmupLinearDecay(PEAK, WARMUP, TOTAL)), log_dir, steps=TOTAL,
         compile={"steps_per_execution": steps_per_execution})
    scalars = _scalars(log_dir)
    logged = scalars[StepLogger.tag]
    assert sorted(logged) == list(range(1, TOTAL + 1))
    np.testing.assert_allclose([logged[s] for s in sorted(logged)],
                               [_expected(s) for s in range(1, TOTAL + 1)], rtol=1e-6, atol=1e-12)
    assert logged[1] == 0.0 and logged[WARMUP + 1] == pytest.approx(PEAK)
    assert StepLogger.head_tag not in scalars  # a plain AdamW has no head rate
    assert len(glob.glob(str(tmp_path / "events.out.tfevents.*"))) >= 1


def test_the_head_rate_of_a_layerwise_optimizer(tmp_path):
    optimizer = LayerwiseAdamW(head_multiplier=10.0, learning_rate=WarmupLinearDecay(
        PEAK, WARMUP, TOTAL))
    _fit(optimizer, str(tmp_path), steps=5)
    scalars = _scalars(str(tmp_path))
    steps = range(1, 6)
    np.testing.assert_allclose([scalars[StepLogger.tag][s] for s in steps],
                               [_expected(s) for s in steps], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose([scalars[StepLogger.head_tag][s] for s in steps],
                               [10 * _expected(s) for s in steps], rtol=1e-6, atol=1e-12)


def test_a_fixed_rate_is_logged_as_it_is_and_a_second_fit_goes_on(tmp_path):
    model = _fit(keras.optimizers.SGD(0.05), str(tmp_path / "a"), steps=3)
    # A second fit (as after a restart) continues the step count, in a new writer.
    model.fit(np.zeros((4, 4)), np.zeros((4, 2)), batch_size=2, verbose=0,
              callbacks=[StepLogger(str(tmp_path / "b"))])
    assert _scalars(str(tmp_path / "a"))[StepLogger.tag] == pytest.approx(
        {1: 0.05, 2: 0.05, 3: 0.05})
    assert _scalars(str(tmp_path / "b"))[StepLogger.tag] == pytest.approx(
        {4: 0.05, 5: 0.05})


def test_batches_between_writes_read_nothing_from_the_device(tmp_path, monkeypatch):
    """The step count is read once per epoch (and at the start), not after every batch."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="head")])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    model.optimizer.build(model.trainable_variables)
    iterations = model.optimizer.iterations
    reads = []
    original = type(iterations).numpy

    def counted(variable):
        if variable is iterations:
            reads.append(1)
        return original(variable)

    monkeypatch.setattr(type(iterations), "numpy", counted)
    model.fit(np.zeros((24, 4)), np.zeros((24, 2)), batch_size=2, epochs=2, verbose=0,
              callbacks=[StepLogger(str(tmp_path), every_steps=100)])
    assert len(reads) <= 3  # the start and each epoch's start, for 24 batches
    # and the epoch-end writes still name the right steps
    assert sorted(_scalars(str(tmp_path))[StepLogger.tag]) == [12, 24]
