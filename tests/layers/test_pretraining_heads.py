import math
import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from nlpzoo.layers.masked_lm_head import MaskedLMHead
from nlpzoo.layers.next_sentence_head import NextSentenceHead
from nlpzoo.layers.serialization import register
from nlpzoo.layers.span_boundary_head import SpanBoundaryHead
from tests.helpers.layer_checks import check_mixed_precision, run_layer_test

V, H, T, P = 23, 8, 7, 3


def _sequence(seed=0, batch=2):
    return np.random.default_rng(seed).normal(size=(batch, T, H)).astype("float32")


def _mlm_inputs(seed=0):
    positions = np.array([[1, 4, 0], [6, 2, 2]], "int32")
    return {"sequence_output": _sequence(seed), "mask_positions": positions}


def _sbo_inputs(seed=0):
    return {
        "sequence_output": _sequence(seed),
        "span_left": np.array([[0, 0, 3], [1, 1, 1]], "int32"),
        "span_right": np.array([[3, 3, 6], [5, 5, 5]], "int32"),
        "span_offset": np.array([[0, 1, 0], [0, 2, 12]], "int32"),  # 12: clipped
    }


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _layer_norm(x, norm, epsilon):
    gamma, beta = (np.asarray(w) for w in norm.get_weights())
    mean = x.mean(-1, keepdims=True)
    variance = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def _dense(x, dense):
    kernel, bias = (np.asarray(w) for w in dense.get_weights())
    return x @ kernel + bias


def _embedding(vocabulary_size=V, width=H, dtype=None):
    embedding = keras.layers.Embedding(vocabulary_size, width, dtype=dtype)
    embedding.build()
    return embedding


def _randomize(layer, seed):
    """Non-trivial LayerNorm and bias values, so the NumPy check sees them."""
    rng = np.random.default_rng(seed)
    layer.set_weights(
        [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in layer.get_weights()]
    )


# --- Layer contract (untied: a head alone must survive from_config/.keras) ---


def test_layer_contracts():
    run_layer_test(
        MaskedLMHead, dict(vocabulary_size=V, tied=False), _mlm_inputs(),
        expected_output_shape=(2, P, V), float32_outputs=(0,),
    )
    run_layer_test(
        SpanBoundaryHead,
        dict(vocabulary_size=V, tied=False, max_span_length=4, intermediate_dim=6),
        _sbo_inputs(), expected_output_shape=(2, P, V), float32_outputs=(0,),
    )
    run_layer_test(
        NextSentenceHead, {}, _sequence()[:, 0, :],
        expected_output_shape=(2, 2), float32_outputs=(0,),
    )


# --- Tied decoders equal a NumPy computation ---


def test_masked_lm_head_tied_matches_numpy():
    embedding = _embedding()
    head = MaskedLMHead(vocabulary_size=V, embedding_layer=embedding)
    inputs = _mlm_inputs(1)
    logits = np.asarray(head(**inputs))
    _randomize(head, 2)
    logits = np.asarray(head(**inputs))
    assert logits.dtype == np.float32 and logits.shape == (2, P, V)
    # Own weights only: transform (2), LayerNorm (2), bias (1).
    assert len(head.weights) == 5
    assert all("embeddings" not in w.path for w in head.weights)

    gathered = np.take_along_axis(
        inputs["sequence_output"], inputs["mask_positions"][:, :, None], axis=1
    )
    x = _layer_norm(_gelu(_dense(gathered, head.transform)), head.layer_norm, 1e-12)
    table = np.asarray(embedding.embeddings)
    expected = x @ table.T + np.asarray(head.decoder.bias)
    np.testing.assert_allclose(logits, expected, atol=1e-4, rtol=1e-4)


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def test_masked_lm_head_with_the_encoders_tanh_gelu_and_epsilon_matches_numpy():
    """ALBERT's head (gelu_new, the encoder's epsilon) and a wide epsilon that shows."""
    embedding = _embedding()
    head = MaskedLMHead(vocabulary_size=V, embedding_layer=embedding,
                        activation="gelu_approximate", layer_norm_epsilon=0.5)
    inputs = _mlm_inputs(3)
    head(**inputs)
    _randomize(head, 4)
    logits = np.asarray(head(**inputs))
    gathered = np.take_along_axis(
        inputs["sequence_output"], inputs["mask_positions"][:, :, None], axis=1
    )
    x = _layer_norm(_gelu_tanh(_dense(gathered, head.transform)), head.layer_norm, 0.5)
    expected = x @ np.asarray(embedding.embeddings).T + np.asarray(head.decoder.bias)
    np.testing.assert_allclose(logits, expected, atol=1e-5, rtol=1e-5)
    exact = _layer_norm(_gelu(_dense(gathered, head.transform)), head.layer_norm, 0.5)
    assert np.max(np.abs(x - exact)) > 1e-4  # the two forms differ where it is checked
    config = head.get_config()
    assert (config["activation"], config["layer_norm_epsilon"]) == ("gelu_approximate", 0.5)
    restored = MaskedLMHead.from_config(config).tie(embedding)
    restored(**inputs)
    restored.set_weights(head.get_weights())
    np.testing.assert_allclose(np.asarray(restored(**inputs)), logits, atol=1e-6)


def test_span_boundary_head_tied_matches_numpy():
    embedding = _embedding()
    head = SpanBoundaryHead(
        vocabulary_size=V, embedding_layer=embedding, max_span_length=4,
        position_embedding_dim=5, intermediate_dim=6,
    )
    inputs = _sbo_inputs(3)
    head(**inputs)
    _randomize(head, 4)
    logits = np.asarray(head(**inputs))
    assert logits.dtype == np.float32 and logits.shape == (2, P, V)

    sequence = inputs["sequence_output"]

    def gather(positions):
        return np.take_along_axis(sequence, positions[:, :, None], axis=1)

    offsets = np.clip(inputs["span_offset"], 0, 3)
    positions = np.asarray(head.position_embedding.embeddings)[offsets]
    x = np.concatenate(
        [gather(inputs["span_left"]), gather(inputs["span_right"]), positions], -1
    )
    x = _layer_norm(_gelu(_dense(x, head.hidden_dense)), head.hidden_norm, 1e-12)
    x = _layer_norm(_gelu(_dense(x, head.output_dense)), head.output_norm, 1e-12)
    expected = x @ np.asarray(embedding.embeddings).T + np.asarray(head.decoder.bias)
    np.testing.assert_allclose(logits, expected, atol=1e-4, rtol=1e-4)


def test_next_sentence_head_is_one_dense_layer():
    head = NextSentenceHead()
    pooled = _sequence(5)[:, 0, :]
    out = np.asarray(head(pooled))
    np.testing.assert_allclose(out, _dense(pooled, head.logits_dense), atol=1e-5)


# --- Mixed precision: logits float32, the tied table read unrounded ---


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_tied_logits_float32_under_mixed_precision(policy):
    embedding = _embedding(dtype=policy)
    mlm = MaskedLMHead(vocabulary_size=V, embedding_layer=embedding, dtype=policy)
    sbo = SpanBoundaryHead(vocabulary_size=V, embedding_layer=embedding, dtype=policy)
    mlm_logits = mlm(**_mlm_inputs())
    sbo_logits = sbo(**_sbo_inputs())
    for logits in (mlm_logits, sbo_logits):
        assert keras.backend.standardize_dtype(logits.dtype) == "float32"
        assert np.all(np.isfinite(np.asarray(logits)))
    assert mlm.transform.compute_dtype == keras.DTypePolicy(policy).compute_dtype

    # Inside a mixed-precision layer the decoder still reads the float32
    # table, not a rounded copy: decoding one-hot features (zero bias)
    # returns the table exactly.
    features = np.eye(H, dtype="float32")[None]
    out = np.asarray(_CallInside(mlm.decoder, dtype=policy)(features))
    np.testing.assert_array_equal(out[0], np.asarray(embedding.embeddings).T)


class _CallInside(keras.layers.Layer):
    """Calls `inner` from inside this layer's autocast scope."""

    def __init__(self, inner, **kwargs):
        super().__init__(**kwargs)
        self.inner = inner

    def call(self, x):
        return self.inner(x)


def test_untied_heads_float32_under_bfloat16():
    check_mixed_precision(
        MaskedLMHead, dict(vocabulary_size=V, tied=False), _mlm_inputs(),
        "mixed_bfloat16", (0,),
    )
    check_mixed_precision(
        NextSentenceHead, {}, _sequence()[:, 0, :], "mixed_bfloat16", (0,)
    )


# --- Tying: gradients reach the table; re-tying after from_config ---


def test_gradient_reaches_the_tied_table():
    embedding = _embedding()
    head = MaskedLMHead(vocabulary_size=V, embedding_layer=embedding)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(head(**_mlm_inputs())))
    gradient = tape.gradient(loss, embedding.embeddings)
    assert gradient is not None and np.abs(np.asarray(gradient)).sum() > 0


def test_from_config_needs_tie_and_validates():
    embedding = _embedding()
    head = MaskedLMHead(vocabulary_size=V, embedding_layer=embedding)
    config = head.get_config()
    assert config["tied"] is True and config["embedding_dim"] == H
    assert "embedding_layer" not in config

    restored = MaskedLMHead.from_config(config)
    assert not restored.is_tied
    with pytest.raises(ValueError, match="tie"):
        restored(**_mlm_inputs())
    with pytest.raises(ValueError, match="input_dim"):
        restored.tie(_embedding(vocabulary_size=V + 1))
    with pytest.raises(ValueError, match="output_dim"):
        restored.tie(_embedding(width=H + 1))
    assert restored.tie(embedding).get_embedding_layer() is embedding
    assert restored(**_mlm_inputs()).shape == (2, P, V)
    with pytest.raises(ValueError, match="untied"):
        MaskedLMHead(vocabulary_size=V, tied=False).tie(embedding)


@register
class TinyTiedPretrainer(keras.Model):
    """An owner of an embedding and two tied heads, re-tying them in __init__."""

    def __init__(self, vocabulary_size, hidden_dim, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size, self.hidden_dim = vocabulary_size, hidden_dim
        self.token_embedding = keras.layers.Embedding(vocabulary_size, hidden_dim)
        self.mlm_head = MaskedLMHead(vocabulary_size, embedding_layer=self.token_embedding)
        self.sbo_head = SpanBoundaryHead(
            vocabulary_size, embedding_layer=self.token_embedding, max_span_length=4
        )

    def call(self, inputs):
        hidden = self.token_embedding(inputs["token_ids"])
        return {
            "mlm": self.mlm_head(hidden, inputs["mask_positions"]),
            "sbo": self.sbo_head(
                hidden, inputs["span_left"], inputs["span_right"], inputs["span_offset"]
            ),
        }

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, hidden_dim=self.hidden_dim)
        return config


def test_owner_model_round_trip_keeps_heads_tied():
    model = TinyTiedPretrainer(V, H)
    rng = np.random.default_rng(6)
    inputs = {
        "token_ids": rng.integers(0, V, size=(2, T)).astype("int32"),
        "mask_positions": _mlm_inputs()["mask_positions"],
        **{k: v for k, v in _sbo_inputs().items() if k != "sequence_output"},
    }
    outputs = model(inputs)
    # The shared table is one variable of the model, not one per user.
    paths = [w.path for w in model.weights]
    assert len(paths) == len(set(paths))
    assert sum(w is model.token_embedding.embeddings for w in model.weights) == 1

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
    reloaded = loaded(inputs)
    for key in outputs:
        np.testing.assert_allclose(
            ops.convert_to_numpy(reloaded[key]), ops.convert_to_numpy(outputs[key]),
            atol=1e-5,
        )
    assert loaded.mlm_head.get_embedding_layer() is loaded.token_embedding
    assert loaded.sbo_head.get_embedding_layer() is loaded.token_embedding


def test_tied_heads_train_under_xla():
    model = TinyTiedPretrainer(V, H)
    rng = np.random.default_rng(7)
    inputs = {
        "token_ids": rng.integers(0, V, size=(2, T)).astype("int32"),
        "mask_positions": _mlm_inputs()["mask_positions"],
        **{k: v for k, v in _sbo_inputs().items() if k != "sequence_output"},
    }
    labels = {name: rng.integers(0, V, size=(2, P)) for name in ("mlm", "sbo")}
    model(inputs)
    before = np.array(model.token_embedding.embeddings.numpy(), copy=True)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss={"mlm": loss, "sbo": loss},
                  jit_compile=True)
    model.fit(inputs, labels, epochs=1, batch_size=2, verbose=0)
    assert model.jit_compile is True
    assert not np.array_equal(before, model.token_embedding.embeddings.numpy())
