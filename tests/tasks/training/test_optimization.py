"""Learning-rate schedules (each against its closed form) and the optimizer."""

import math

import keras
import numpy as np
import pytest

from nlpzoo.layers.keras_internals import configured_learning_rate, uses_weight_decay
from nlpzoo.tasks.training.layerwise_optimizer import LayerwiseAdamW
from nlpzoo.tasks.training.optimization import (SCHEDULES, SlantedTriangular, WarmupLinearDecay,
                                copy_optimizer, create_optimizer, learning_rate_at,
                                learning_rate_schedule)


def test_schedule_shape():
    schedule = WarmupLinearDecay(2e-3, warmup_steps=4, total_steps=12)
    rates = [float(schedule(step)) for step in range(14)]
    expected = [2e-3 * s / 4 for s in range(4)] + [2e-3 * (12 - s) / 8 for s in range(4, 12)] + [0, 0]
    np.testing.assert_allclose(rates, expected, atol=1e-9)
    assert WarmupLinearDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()


def test_schedule_rejects_bad_steps():
    with pytest.raises(ValueError):
        WarmupLinearDecay(1e-3, warmup_steps=5, total_steps=4)


def test_no_weight_decay_on_bias_and_layer_norm():
    optimizer = create_optimizer(1e-3, total_steps=10)
    dense = keras.layers.Dense(2)
    norm = keras.layers.LayerNormalization()
    dense.build((None, 2))
    norm.build((None, 2))
    for variable in dense.weights + norm.weights:
        excluded = uses_weight_decay(optimizer, variable) is False
        assert excluded == (variable.name in ("bias", "gamma", "beta")), variable.name



@pytest.mark.parametrize("head_learning_rate", [None, 1e-1])
def test_a_copy_steps_exactly_as_the_original(head_learning_rate):
    """A config round trip alone would decay the bias too; the copy must not (tools/multitask.py
    trains every task with a copy of the first model's optimizer)."""
    def one_step(optimizer):
        kernel = keras.Variable(np.full((2, 2), 0.5, "float32"), name="kernel")
        bias = keras.Variable(np.full((2,), 0.5, "float32"), name="bias")
        gradients = [np.full((2, 2), 0.1, "float32"), np.zeros((2,), "float32")]
        optimizer.apply(gradients, [kernel, bias])
        return np.array(kernel), np.array(bias)

    original = create_optimizer(1e-2, total_steps=10, weight_decay=0.1,
                                head_learning_rate=head_learning_rate)
    kernel, bias = one_step(original)
    copy_kernel, copy_bias = one_step(copy_optimizer(original))
    np.testing.assert_allclose(copy_kernel, kernel, rtol=1e-6)
    np.testing.assert_array_equal(copy_bias, np.full((2,), 0.5))  # no gradient, no decay
    np.testing.assert_array_equal(bias, copy_bias)
    assert type(copy_optimizer(original)) is type(original)
    assert copy_optimizer(original).get_config() == original.get_config()
    round_trip = keras.optimizers.deserialize(keras.optimizers.serialize(original))
    assert not np.array_equal(one_step(round_trip)[1], bias)  # what the copy guards against


# --- schedules by name ----------------------------------------------------------------------

PEAK, WARMUP, TOTAL = 2e-3, 8, 40
# Step 0, mid warm-up, the end of the warm-up (STLR's cut), mid decay, the end, past the end.
STEPS = (0, 3, WARMUP, 21, TOTAL, TOTAL + 7)


def _linear(t):
    return PEAK * (t / WARMUP if t < WARMUP else max(0.0, (TOTAL - t) / (TOTAL - WARMUP)))


def _cosine(t):
    if t < WARMUP:
        return PEAK * t / WARMUP
    t = min(t, TOTAL)
    return PEAK * 0.5 * (1 + math.cos(math.pi * (t - WARMUP) / (TOTAL - WARMUP)))


def _slanted_triangular(t, ratio=32.0):
    p = t / WARMUP if t < WARMUP else 1 - (t - WARMUP) / (TOTAL - WARMUP)
    p = max(p, 0.0)
    return PEAK * (1 + p * (ratio - 1)) / ratio


CLOSED_FORMS = {"linear": _linear, "cosine": _cosine, "slanted_triangular": _slanted_triangular,
                "constant": lambda t: PEAK}


def test_the_names():
    assert SCHEDULES == ("linear", "cosine", "slanted_triangular", "constant")
    assert set(CLOSED_FORMS) == set(SCHEDULES)


@pytest.mark.parametrize("name", SCHEDULES)
def test_each_schedule_follows_its_formula(name):
    schedule = learning_rate_schedule(name, PEAK, total_steps=TOTAL, warmup_steps=WARMUP)
    rates = [float(schedule(step)) if callable(schedule) else schedule for step in STEPS]
    expected = [CLOSED_FORMS[name](step) for step in STEPS]
    np.testing.assert_allclose(rates, expected, rtol=1e-6, atol=1e-10)


def test_the_formulas_hit_their_landmarks():
    # A check of the closed forms themselves: where each schedule must stand.
    assert _cosine(0) == _linear(0) == 0 and _cosine(WARMUP) == _linear(WARMUP) == PEAK
    assert _cosine((WARMUP + TOTAL) / 2) == pytest.approx(PEAK / 2)
    assert _cosine(TOTAL) == pytest.approx(0, abs=1e-18)
    assert _slanted_triangular(0) == _slanted_triangular(TOTAL) == PEAK / 32
    assert _slanted_triangular(WARMUP) == PEAK


def test_cosine_is_kerass_own_schedule():
    schedule = learning_rate_schedule("cosine", PEAK, total_steps=TOTAL, warmup_steps=WARMUP)
    assert type(schedule) is keras.optimizers.schedules.CosineDecay
    assert schedule(0).dtype == "float32"  # initial_learning_rate is 0.0, not the int 0


def test_slanted_triangular_without_warmup_starts_at_the_peak():
    schedule = SlantedTriangular(PEAK, warmup_steps=0, total_steps=10, ratio=4)
    np.testing.assert_allclose([float(schedule(t)) for t in (0, 5, 10, 11)],
                               [PEAK, PEAK * (1 + 0.5 * 3) / 4, PEAK / 4, PEAK / 4], rtol=1e-6)


def test_slanted_triangular_round_trips():
    schedule = SlantedTriangular(PEAK, warmup_steps=WARMUP, total_steps=TOTAL, ratio=16)
    assert schedule.get_config() == {"peak_learning_rate": PEAK, "warmup_steps": WARMUP,
                                     "total_steps": TOTAL, "ratio": 16.0}
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert type(restored) is SlantedTriangular
    assert restored.get_config() == schedule.get_config()
    np.testing.assert_allclose([float(restored(t)) for t in STEPS],
                               [_slanted_triangular(t, ratio=16) for t in STEPS], rtol=1e-6)


def test_without_total_steps_every_schedule_is_the_constant_peak():
    for name in SCHEDULES:
        assert learning_rate_schedule(name, PEAK, warmup_steps=WARMUP) == PEAK
    assert learning_rate_schedule("constant", PEAK, TOTAL, WARMUP) == PEAK  # warm-up ignored


def test_bad_names_and_steps_are_refused():
    with pytest.raises(ValueError, match="linear, cosine, slanted_triangular, constant"):
        learning_rate_schedule("triangle", PEAK, TOTAL)
    with pytest.raises(ValueError, match="triangle"):
        create_optimizer(PEAK, TOTAL, schedule="triangle")
    for name in ("cosine", "slanted_triangular"):
        with pytest.raises(ValueError, match="warmup_steps"):
            learning_rate_schedule(name, PEAK, total_steps=10, warmup_steps=10)
    with pytest.raises(ValueError, match="ratio"):
        SlantedTriangular(PEAK, 1, 10, ratio=0.5)


@pytest.mark.parametrize("name", SCHEDULES)
def test_create_optimizer_with_each_schedule(name):
    optimizer = create_optimizer(PEAK, TOTAL, WARMUP, schedule=name)
    assert type(optimizer) is keras.optimizers.AdamW
    np.testing.assert_allclose([float(learning_rate_at(optimizer, t)) for t in STEPS],
                               [CLOSED_FORMS[name](t) for t in STEPS], rtol=1e-6, atol=1e-10)
    # The schedule survives the optimizer's own serialisation (a saved model's optimizer).
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    np.testing.assert_allclose([float(learning_rate_at(restored, t)) for t in STEPS],
                               [CLOSED_FORMS[name](t) for t in STEPS], rtol=1e-6, atol=1e-10)


def test_the_default_schedule_is_still_linear():
    optimizer = create_optimizer(PEAK, TOTAL, WARMUP)
    assert isinstance(configured_learning_rate(optimizer), WarmupLinearDecay)


@pytest.mark.parametrize("name", ["cosine", "slanted_triangular"])
def test_the_head_multiplier_scales_the_same_schedule(name):
    # Adam's first step with gradient 1 moves a variable by its rate (to 4e-5): the
    # encoder's by the schedule at step 0, the head's by 10 × that.
    optimizer = create_optimizer(PEAK, TOTAL, WARMUP, weight_decay=0.0,
                                 head_learning_rate=10 * PEAK, schedule=name)
    assert isinstance(optimizer, LayerwiseAdamW) and optimizer.head_multiplier == 10
    # Variables at an encoder path ("transformer/...") and at a head path.
    encoder = keras.layers.Dense(3, use_bias=False, name="transformer")
    head = keras.layers.Dense(3, use_bias=False, name="head")
    encoder.build((None, 1))
    head.build((None, 1))
    encoder, head = encoder.kernel, head.kernel
    assert (encoder.path, head.path) == ("transformer/kernel", "head/kernel")
    for _ in range(WARMUP + 1):  # to the peak: t = 0 .. WARMUP
        before = np.array(encoder), np.array(head)
        step = int(optimizer.iterations)
        optimizer.apply([np.ones((1, 3), "float32")] * 2, [encoder, head])
    rate = CLOSED_FORMS[name](WARMUP)
    assert step == WARMUP
    # After many steps of gradient 1, Adam's update is exactly the rate again.
    np.testing.assert_allclose(before[0] - np.array(encoder), rate, rtol=1e-4)
    np.testing.assert_allclose(before[1] - np.array(head), 10 * rate, rtol=1e-4)


@pytest.mark.parametrize("clip_norm, scale", [(0.5, 0.1), (10.0, 1.0), (0, 1.0)])
def test_gradients_are_clipped_to_the_global_norm_clip_norm(clip_norm, scale):
    """Adam's first moments after one step are 0.1 × the gradient it used: the gradient of
    norm 5 scaled to `clip_norm` when it is smaller (0.5 → × 0.1), untouched otherwise or
    with clipping off (0), by hand."""
    optimizer = create_optimizer(1e-3, clip_norm=clip_norm, weight_decay=0.0)
    kernel = keras.Variable(np.zeros((2,), "float32"), name="kernel")
    bias = keras.Variable(np.zeros((1,), "float32"), name="bias")
    optimizer.apply([np.array([3.0, 0.0], "float32"), np.array([4.0], "float32")],
                    [kernel, bias])
    momenta = [np.array(v) for v in optimizer.variables if "momentum" in v.path]
    np.testing.assert_allclose(np.concatenate(momenta), 0.1 * scale * np.array([3.0, 0.0, 4.0]),
                               rtol=1e-6)


def test_a_negative_clip_norm_is_refused():
    with pytest.raises(ValueError, match="clip_norm must be >= 0"):
        create_optimizer(1e-3, clip_norm=-1.0)
