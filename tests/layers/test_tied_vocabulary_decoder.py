"""`TiedVocabularyDecoder`: the output layer that `MaskedLMHead` and `SpanBoundaryHead` share."""


import keras
import numpy as np
import pytest

from nlpzoo.layers import MaskedLMHead, SpanBoundaryHead, TiedVocabularyDecoder
from tests.helpers.layer_checks import run_layer_test

V, E = 11, 6


def _embedding(vocabulary_size=V, width=E):
    embedding = keras.layers.Embedding(vocabulary_size, width)
    embedding.build()
    return embedding


def _features(seed=0):
    return np.random.default_rng(seed).normal(size=(2, 3, E)).astype("float32")


def test_layer_contract_untied():
    # Untied: a decoder alone must survive from_config and a .keras file.
    run_layer_test(TiedVocabularyDecoder, dict(vocabulary_size=V, tied=False), _features(),
                   expected_output_shape=(2, 3, V), float32_outputs=(0,))


def test_tied_logits_are_features_times_the_table_plus_bias():
    embedding = _embedding()
    decoder = TiedVocabularyDecoder(V, embedding_layer=embedding)
    decoder(_features())
    decoder.bias.assign(np.random.default_rng(1).normal(size=V).astype("float32"))
    expected = _features() @ np.asarray(embedding.embeddings).T + np.asarray(decoder.bias)
    np.testing.assert_allclose(np.asarray(decoder(_features())), expected, atol=1e-5)
    assert [w.name for w in decoder.weights] == ["bias"]  # the table stays its owner's
    assert decoder.embedding_dim == E and decoder.is_tied


def test_untied_has_its_own_kernel():
    decoder = TiedVocabularyDecoder(V, tied=False)
    logits = np.asarray(decoder(_features()))
    kernel, bias = (np.asarray(w) for w in decoder.get_weights())
    np.testing.assert_allclose(logits, _features() @ kernel + bias, atol=1e-5)
    assert not decoder.is_tied and decoder.get_embedding_layer() is None


def test_config_tie_and_errors():
    embedding = _embedding()
    config = TiedVocabularyDecoder(V, embedding_layer=embedding, name="decoder").get_config()
    assert config["tied"] is True and config["embedding_dim"] == E
    restored = TiedVocabularyDecoder.from_config(config)
    assert not restored.is_tied
    with pytest.raises(ValueError, match="tie"):
        restored(_features())
    with pytest.raises(ValueError, match="input_dim"):
        restored.tie(_embedding(vocabulary_size=V + 1))
    with pytest.raises(ValueError, match="output_dim"):
        restored.tie(_embedding(width=E + 1))
    with pytest.raises(TypeError, match="Embedding-like"):
        restored.tie(keras.layers.Dense(3))
    assert restored.tie(embedding).get_embedding_layer() is embedding
    with pytest.raises(ValueError, match="untied"):
        TiedVocabularyDecoder(V, tied=False).tie(embedding)
    with pytest.raises(ValueError, match="tied=False"):
        TiedVocabularyDecoder(V, embedding_layer=embedding, tied=False)


def test_float32_under_a_mixed_policy():
    decoder = TiedVocabularyDecoder(V, embedding_layer=_embedding(), dtype="mixed_bfloat16")
    logits = decoder(_features().astype("float32"))
    assert decoder.compute_dtype == "float32"
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"


def test_both_heads_decode_with_it():
    embedding = _embedding(width=4)
    for head in (MaskedLMHead(V, embedding_layer=embedding),
                 SpanBoundaryHead(V, embedding_layer=embedding)):
        assert isinstance(head.decoder, TiedVocabularyDecoder)
        assert head.get_embedding_layer() is embedding and head.is_tied
        assert head.tied and head.embedding_dim == 4
