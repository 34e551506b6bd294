
import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers.span_classifier import SpanClassifier
from nlpzoo.layers.span_grid import SpanGrid
from nlpzoo.layers.span_representation import SpanRepresentation
from tests.helpers.layer_checks import run_layer_test

WORD_MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "int32")


def _brute_force_spans(num_words, max_width):
    return [
        (i, j)
        for i in range(num_words)
        for j in range(num_words)
        if i <= j and j - i + 1 <= max_width
    ]


def _num_spans(num_words, max_width):
    return len(_brute_force_spans(num_words, max_width))


def _spans(max_width=3, word_mask=WORD_MASK):
    """Every span of the padded length, the same for each row; real if both ends are."""
    batch, num_words = word_mask.shape
    starts, ends = np.array(_brute_force_spans(num_words, max_width), "int32").T
    return {
        "span_starts": np.tile(starts, (batch, 1)),
        "span_ends": np.tile(ends, (batch, 1)),
        "span_mask": (word_mask[:, starts] * word_mask[:, ends]).astype("int32"),
    }


def _inputs(hidden=4, max_width=3, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    batch, words = WORD_MASK.shape
    data = {"sequence": rng.normal(scale=scale, size=(batch, words, hidden))}
    data["sequence"] = data["sequence"].astype("float32")
    data.update(_spans(max_width))
    return data


def _call(layer, data):
    return np.asarray(layer(**data))


def _masked(reference, data):
    return reference * data["span_mask"][:, :, None]


# === Representation pieces against NumPy ===


def test_boundary_combinations():
    data = _inputs()
    layer = SpanRepresentation(combination="x,y,x*y,x-y,x+y")
    out = _call(layer, data)
    seq, b = data["sequence"], np.arange(2)[:, None]
    x, y = seq[b, data["span_starts"]], seq[b, data["span_ends"]]
    expected = np.concatenate([x, y, x * y, x - y, x + y], axis=-1)
    np.testing.assert_allclose(out, _masked(expected, data), atol=1e-6)
    assert layer.output_dim(4) == out.shape[-1] == 20


def test_start_end_ffnn_replace_boundary_vectors():
    data = _inputs()
    layer = SpanRepresentation(combination="x,y,x*y", start_end_ffnn_dim=5)
    out = _call(layer, data)
    seq, b = data["sequence"], np.arange(2)[:, None]

    def ffnn(dense, h):
        return np.maximum(h @ dense.kernel.numpy() + dense.bias.numpy(), 0.0)

    s = ffnn(layer.start_ffnn, seq[b, data["span_starts"]])
    e = ffnn(layer.end_ffnn, seq[b, data["span_ends"]])
    expected = np.concatenate([s, e, s * e], axis=-1)
    np.testing.assert_allclose(out, _masked(expected, data), atol=1e-5)
    assert out.shape[-1] == 15


def _numpy_pool(data, scorer=None):
    """Loop over every span; softmax of the scores inside it (uniform if None)."""
    seq = data["sequence"].astype("float64")
    starts, ends = data["span_starts"], data["span_ends"]
    out = np.zeros(starts.shape + (seq.shape[-1],))
    for b in range(starts.shape[0]):
        for s in range(starts.shape[1]):
            words = seq[b, starts[b, s] : ends[b, s] + 1]
            if scorer is None:
                scores = np.zeros(len(words))
            else:
                kernel, bias = scorer
                scores = words @ kernel[:, 0] + bias[0]
            p = np.exp(scores - scores.max())
            out[b, s] = (p / p.sum()) @ words
    return out


def test_mean_pooling():
    data = _inputs(hidden=5, max_width=4, scale=3.0)
    out = _call(SpanRepresentation(combination="", pooling="mean"), data)
    np.testing.assert_allclose(out, _masked(_numpy_pool(data), data), atol=1e-5)


@pytest.mark.parametrize("weight_scale", [1.0, 30.0])
def test_attention_pooling_matches_numpy_loops(weight_scale):
    """Random scorer weights; the large scale makes scores differ by hundreds."""
    data = _inputs(hidden=5, max_width=4, seed=3)
    layer = SpanRepresentation(combination="", pooling="attention", max_span_width=4)
    layer(**data)
    rng = np.random.default_rng(4)
    kernel = rng.normal(scale=weight_scale, size=(5, 1)).astype("float32")
    bias = rng.normal(size=(1,)).astype("float32")
    layer.attention_scorer.set_weights([kernel, bias])
    out = _call(layer, data)
    assert np.all(np.isfinite(out))
    expected = _numpy_pool(data, (kernel, bias))
    np.testing.assert_allclose(out, _masked(expected, data), atol=1e-5)


def test_attention_pooling_on_spans_in_any_order():
    """Pruned or shuffled spans work too; spans may start anywhere."""
    rng = np.random.default_rng(5)
    starts = rng.integers(0, 6, size=(2, 7))
    ends = np.minimum(starts + rng.integers(0, 3, size=(2, 7)), 5)
    data = {
        "sequence": rng.normal(size=(2, 6, 3)).astype("float32"),
        "span_starts": starts.astype("int32"),
        "span_ends": ends.astype("int32"),
        "span_mask": np.ones((2, 7), "int32"),
    }
    layer = SpanRepresentation(combination="", pooling="attention", max_span_width=3)
    layer(**data)
    kernel = rng.normal(size=(3, 1)).astype("float32")
    layer.attention_scorer.set_weights([kernel, np.zeros((1,), "float32")])
    expected = _numpy_pool(data, (kernel, np.zeros(1)))
    np.testing.assert_allclose(_call(layer, data), expected, atol=1e-5)


def test_attention_with_zero_scorer_equals_mean():
    data = _inputs(hidden=5, max_width=6, seed=6)  # L = T: all spans
    attention = SpanRepresentation(
        combination="", pooling="attention", max_span_width=6
    )
    attention(**data)
    attention.attention_scorer.set_weights(
        [np.zeros((5, 1), "float32"), np.full((1,), 0.7, "float32")]
    )
    mean = SpanRepresentation(combination="", pooling="mean")
    np.testing.assert_allclose(_call(attention, data), _call(mean, data), atol=1e-5)


def test_width_embedding_looks_up_width_minus_one():
    data = _inputs(max_width=3)
    layer = SpanRepresentation(combination="", width_embedding_dim=3, max_span_width=3)
    out = _call(layer, data)
    table = layer.width_embedding.embeddings.numpy()
    expected = table[data["span_ends"] - data["span_starts"]]
    np.testing.assert_allclose(out, _masked(expected, data), atol=1e-7)


def test_pieces_are_concatenated_in_documented_order():
    data = _inputs(hidden=4, max_width=3)
    full = SpanRepresentation(
        combination="x,y", pooling="mean", width_embedding_dim=2, max_span_width=3
    )
    out = _call(full, data)
    assert out.shape[-1] == full.output_dim(4) == 4 + 4 + 4 + 2
    boundary = _call(SpanRepresentation(combination="x,y"), data)
    np.testing.assert_allclose(out[..., :8], boundary, atol=1e-6)
    np.testing.assert_allclose(out[..., 8:12], _masked(_numpy_pool(data), data),
                               atol=1e-5)
    table = full.width_embedding.embeddings.numpy()
    width_ids = data["span_ends"] - data["span_starts"]
    np.testing.assert_allclose(out[..., 12:], _masked(table[width_ids], data))
    # Masked spans are all zero.
    assert not np.any(out[data["span_mask"] == 0])


def test_invalid_configurations():
    with pytest.raises(ValueError, match="unknown term"):
        SpanRepresentation(combination="x,y,x/y")
    with pytest.raises(ValueError, match="max_span_width"):
        SpanRepresentation(pooling="attention")
    with pytest.raises(ValueError, match="pooling"):
        SpanRepresentation(pooling="max")
    with pytest.raises(ValueError, match="empty"):
        SpanRepresentation(combination="")


def test_span_representation_layer_contract():
    data = _inputs(hidden=4, max_width=3)
    run_layer_test(
        SpanRepresentation,
        dict(
            combination="x,y,x*y",
            max_span_width=3,
            width_embedding_dim=2,
            start_end_ffnn_dim=3,
            pooling="attention",
        ),
        data,
        expected_output_shape=(2, _num_spans(6, 3), 3 * 3 + 4 + 2),
    )


def test_span_representation_mean_layer_contract():
    run_layer_test(
        SpanRepresentation,
        dict(combination="x-y", start_end_ffnn_dim=3, pooling="mean"),
        _inputs(hidden=4, max_width=2),
        expected_output_shape=(2, _num_spans(6, 2), 3 + 4),
        run_mixed_precision_check=False,  # covered by the test above
    )


# === Classifier ===


def test_span_classifier_layer_contract():
    rng = np.random.default_rng(7)
    run_layer_test(
        SpanClassifier,
        dict(num_classes=4, hidden_dim=6, dropout=0.1, activation="gelu"),
        rng.normal(size=(2, 5, 7)).astype("float32"),
        expected_output_shape=(2, 5, 4),
        float32_outputs=(0,),
    )


def test_span_classifier_matches_numpy():
    x = np.random.default_rng(8).normal(size=(2, 3, 5)).astype("float32")
    layer = SpanClassifier(num_classes=3, hidden_dim=4, dropout=0.5)
    out = np.asarray(layer(x))  # inference: no dropout
    h = x
    for dense in layer.hidden_layers:
        h = np.maximum(h @ dense.kernel.numpy() + dense.bias.numpy(), 0.0)
    expected = h @ layer.logits_dense.kernel.numpy() + layer.logits_dense.bias.numpy()
    np.testing.assert_allclose(out, expected, atol=1e-5)


# === Together: XLA and mixed precision ===


def _pipeline(max_width=3):
    word_mask = keras.Input(shape=(6,), dtype="int32", name="word_mask")
    sequence = keras.Input(shape=(6, 4), name="sequence")
    spans = SpanGrid(max_width)(word_mask)
    vectors = SpanRepresentation(
        combination="x,y",
        max_span_width=max_width,
        width_embedding_dim=2,
        start_end_ffnn_dim=3,
        pooling="attention",
    )(sequence=sequence, **spans)
    logits = SpanClassifier(num_classes=3, hidden_dim=5, dropout=0.1)(vectors)
    return keras.Model({"word_mask": word_mask, "sequence": sequence}, logits)


def test_pipeline_compiles_and_trains_under_xla():
    model = _pipeline()
    inputs = {"word_mask": WORD_MASK, "sequence": _inputs()["sequence"]}

    @tf.function(jit_compile=True)
    def call(batch):
        return model(batch)

    hlo = call.experimental_get_compiler_ir(inputs)(stage="hlo")
    assert "HloModule" in hlo and "gather" in hlo
    labels = np.random.default_rng(9).integers(0, 3, size=(2, 6 * 3))  # SpanGrid: T·L spans
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=True,
    )
    model.fit(inputs, labels, epochs=1, verbose=0, batch_size=2)
    assert model.jit_compile is True


def test_float32_logits_under_mixed_bfloat16():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = _pipeline()
    inputs = {"word_mask": WORD_MASK, "sequence": _inputs()["sequence"]}
    representation = model.layers[-2]
    assert isinstance(representation, SpanRepresentation)
    assert representation.compute_dtype == "bfloat16"
    logits = model(inputs)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.all(np.isfinite(np.asarray(logits)))


def test_attention_pooling_bfloat16_close_to_float32():
    data = _inputs(hidden=5, max_width=4, seed=10)
    layer32 = SpanRepresentation(combination="", pooling="attention", max_span_width=4)
    out32 = _call(layer32, data)
    layer16 = SpanRepresentation(
        combination="", pooling="attention", max_span_width=4, dtype="mixed_bfloat16"
    )
    layer16(**data)
    layer16.set_weights(layer32.get_weights())
    out16 = layer16(**data)
    assert keras.backend.standardize_dtype(out16.dtype) == "bfloat16"
    out16 = np.asarray(tf.cast(out16, "float32"))
    np.testing.assert_allclose(out16, out32, atol=0.05, rtol=0.02)
