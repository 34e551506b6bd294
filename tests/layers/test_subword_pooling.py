"""`SubwordPooling` (first, last, mean, max over each word's subwords) against NumPy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers import SUBWORD_POOLINGS, SubwordPooling
from tests.helpers.layer_checks import check_xla_compiles, run_layer_test


def _ragged_spans(rng, batch, length, max_words):
    """Random word spans, left-aligned and contiguous after [CLS] as the pipeline makes them:
    words of 1-4 subwords, then padded words (start = end = 0); row 0 starts with a word of
    one subword and one of three."""
    starts = np.zeros((batch, max_words), "int32")
    ends = np.zeros((batch, max_words), "int32")
    for b in range(batch):
        position = 1
        for w in range(rng.integers(3 if b == 0 else 1, max_words)):
            size = (1, 3)[w] if b == 0 and w < 2 else int(rng.integers(1, 5))
            if position + size > length - 1:
                break
            starts[b, w], ends[b, w] = position, position + size
            position += size
    return starts, ends


def _brute_force(sequence, starts, ends, mode):
    out = np.zeros(starts.shape + sequence.shape[2:], "float64")
    for b, w in np.ndindex(starts.shape):
        span = sequence[b, starts[b, w]:ends[b, w]].astype("float64")
        if len(span):
            out[b, w] = {"first": span[0], "last": span[-1], "mean": span.mean(0),
                         "max": span.max(0)}[mode]
    return out


def _data(seed=0, batch=4, length=16, max_words=6, width=5):
    rng = np.random.default_rng(seed)
    starts, ends = _ragged_spans(rng, batch, length, max_words)
    sequence = rng.normal(size=(batch, length, width)).astype("float32")
    return {"sequence": sequence, "starts": starts, "ends": ends}


@pytest.mark.parametrize("mode", SUBWORD_POOLINGS)
def test_matches_brute_force_on_ragged_spans(mode):
    for seed in range(5):
        data = _data(seed)
        # Positions outside every span hold huge values: any leak shows.
        outside = np.ones(data["sequence"].shape[:2], bool)
        for b, w in np.ndindex(data["starts"].shape):
            outside[b, data["starts"][b, w]:data["ends"][b, w]] = False
        data["sequence"][outside] = 1e4
        expected = _brute_force(data["sequence"], data["starts"], data["ends"], mode)
        pooled = np.asarray(SubwordPooling(mode)(**data))
        np.testing.assert_allclose(pooled, expected, rtol=1e-5, atol=1e-6, err_msg=mode)
        padded = data["ends"] <= data["starts"]
        assert padded.any() and not np.abs(pooled[padded]).any()  # padded words are zeros


@pytest.mark.parametrize("mode", SUBWORD_POOLINGS)
def test_negative_values_max_is_not_clipped_at_zero(mode):
    sequence = -np.arange(1, 9, dtype="float32").reshape(1, 4, 2)
    starts, ends = np.array([[1, 0]]), np.array([[4, 0]])
    expected = _brute_force(sequence, starts, ends, mode)
    np.testing.assert_allclose(SubwordPooling(mode)(sequence, starts, ends), expected)


@pytest.mark.parametrize("mode", SUBWORD_POOLINGS)
def test_layer_contract_bf16_and_xla(mode):
    data = _data(seed=7)
    layer = run_layer_test(SubwordPooling, {"mode": mode}, data,
                           expected_output_shape=(4, 6, 5),
                           run_training_check=False)  # no weights to train
    check_xla_compiles(layer, data)

    @tf.function(jit_compile=True)
    def compiled(sequence, starts, ends):
        return layer(sequence, starts, ends)

    np.testing.assert_allclose(compiled(**data).numpy(), np.asarray(layer(**data)),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", SUBWORD_POOLINGS)
def test_mixed_bfloat16_close_to_float32(mode):
    data = _data(seed=3)
    expected = _brute_force(data["sequence"], data["starts"], data["ends"], mode)
    layer = SubwordPooling(mode, dtype=keras.DTypePolicy("mixed_bfloat16"))
    pooled = layer(**data)
    assert keras.backend.standardize_dtype(pooled.dtype) == "bfloat16"
    np.testing.assert_allclose(np.asarray(pooled, "float32"), expected, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_gradient_reaches_the_span_only(jit_compile):
    sequence = tf.constant(np.arange(12, dtype="float32").reshape(1, 6, 2))
    starts, ends = tf.constant([[1, 3]]), tf.constant([[3, 6]])

    @tf.function(jit_compile=jit_compile)
    def gradient(layer, sequence):
        with tf.GradientTape() as tape:
            tape.watch(sequence)
            total = tf.reduce_sum(layer(sequence, starts, ends)[:, 0])
        return tape.gradient(total, sequence)

    gradients = {mode: gradient(SubwordPooling(mode), sequence).numpy()[0, :, 0].tolist()
                 for mode in SUBWORD_POOLINGS}
    assert gradients == {"first": [0, 1, 0, 0, 0, 0], "last": [0, 0, 1, 0, 0, 0],
                         "mean": [0, 0.5, 0.5, 0, 0, 0], "max": [0, 0, 1, 0, 0, 0]}


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="first, last, mean, max"):
        SubwordPooling("sum")
