"""`SentenceEmbedder`: pooling and layer choice against NumPy, padding, saving, dtypes."""

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.sentence_embedding import SentenceEmbedder, build_embedding_model, parse_layer
from tests.helpers.embedding_checks import numpy_pooling, tiny_encoder

VOCABULARY_SIZE = 60
# Three texts of 7, 4 and 2 real tokens, right-padded to 9 ([CLS] … [SEP], then 0s).
TOKEN_IDS = np.array([[2, 11, 12, 13, 14, 15, 3, 0, 0],
                      [2, 21, 22, 3, 0, 0, 0, 0, 0],
                      [2, 3, 0, 0, 0, 0, 0, 0, 0]], "int32")


def _features(token_ids):
    token_ids = np.asarray(token_ids, "int32")
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": (token_ids > 0).astype("int32")}


@pytest.fixture(scope="module")
def encoder():
    keras.utils.set_random_seed(0)
    return tiny_encoder(VOCABULARY_SIZE)


@pytest.fixture(scope="module")
def hidden_states(encoder):
    """The encoder's hidden states [3 layers][B, T, H] on the padded batch, as NumPy."""
    outputs = encoder(_features(TOKEN_IDS))
    return [keras.ops.convert_to_numpy(state) for state in outputs["hidden_states"]]


def _embed(model, token_ids):
    return np.asarray(model.predict_on_batch(_features(token_ids)))


@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
@pytest.mark.parametrize("normalize", [True, False])
def test_pooling_matches_numpy_on_a_padded_batch(encoder, hidden_states, pooling, normalize):
    model = build_embedding_model(encoder, pooling=pooling, normalize=normalize)
    expected = numpy_pooling(hidden_states[-1], TOKEN_IDS > 0, pooling, normalize)
    np.testing.assert_allclose(_embed(model, TOKEN_IDS), expected, atol=1e-6)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(_embed(model, TOKEN_IDS), axis=1), 1.0,
                                   atol=1e-6)


@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
def test_padding_never_changes_an_embedding(encoder, pooling):
    model = build_embedding_model(encoder, pooling=pooling, layer=1)
    batch = _embed(model, TOKEN_IDS)
    for row, ids in enumerate(TOKEN_IDS):
        alone = ids[ids > 0][None, :]  # no padding at all
        long_padding = np.pad(ids, (0, 23))[None, :]  # much more padding
        np.testing.assert_allclose(_embed(model, alone)[0], batch[row], atol=1e-6)
        np.testing.assert_allclose(_embed(model, long_padding)[0], batch[row], atol=1e-6)
    # Garbage ids under the padding are never seen either.
    noisy = np.where(TOKEN_IDS > 0, TOKEN_IDS, 40)
    features = _features(TOKEN_IDS)
    features["token_ids"] = noisy
    np.testing.assert_allclose(model.predict_on_batch(features), batch, atol=1e-6)


@pytest.mark.parametrize("layer, state", [
    (0, 0), (1, 1), (2, 2), (-1, 2), (-2, 1), (-3, 0), ("1", 1), ("-3", 0), ("last", 2),
    (None, 2)])
def test_layer_selects_that_hidden_state(encoder, hidden_states, layer, state):
    model = build_embedding_model(encoder, layer=layer)
    expected = numpy_pooling(hidden_states[state], TOKEN_IDS > 0)
    np.testing.assert_allclose(_embed(model, TOKEN_IDS), expected, atol=1e-6)


def test_mean_last_4_pools_the_mean_of_the_last_four_layers(hidden_states):
    keras.utils.set_random_seed(0)
    deep = tiny_encoder(VOCABULARY_SIZE, num_layers=5)  # 6 hidden states: the last 4 of them
    states = [keras.ops.convert_to_numpy(s)
              for s in deep(_features(TOKEN_IDS))["hidden_states"]]
    model = build_embedding_model(deep, pooling="max", layer="mean_last_4")
    expected = numpy_pooling(np.mean(states[-4:], axis=0), TOKEN_IDS > 0, "max")
    np.testing.assert_allclose(_embed(model, TOKEN_IDS), expected, atol=1e-6)
    assert not np.allclose(expected, numpy_pooling(states[-1], TOKEN_IDS > 0, "max"), atol=1e-3)


def test_unset_layer_reads_the_encoders_own_layer_mix(encoder, hidden_states):
    mixed = Encoder.from_config({**encoder.get_config(), "layer_mix": "mean_last_4"})
    mixed.set_weights(encoder.get_weights())
    model = build_embedding_model(mixed)  # layer=None: the encoder's sequence_output
    expected = numpy_pooling(np.mean(hidden_states[-4:], axis=0), TOKEN_IDS > 0)
    np.testing.assert_allclose(_embed(model, TOKEN_IDS), expected, atol=1e-6)


@pytest.mark.parametrize("layer, message", [
    (3, "layer 3 is out of range: the encoder has hidden states 0 (embeddings) to 2"),
    (-4, "layer -4 is out of range"),
    ("scalar_mix", "'scalar_mix' is a learned mix"),
    ("first", "layer must be an index into the encoder's hidden states (0 embeddings, 2 last "
              "block, negative from the end) or one of last, mean_last_4; got 'first'"),
    (1.0, "got 1.0"),
    (True, "got True"),
])
def test_bad_layers_are_refused_with_what_is_valid(encoder, layer, message):
    with pytest.raises(ValueError) as error:
        build_embedding_model(encoder, layer=layer)
    assert message in str(error.value)


def test_bad_pooling_is_refused(encoder):
    with pytest.raises(ValueError, match="pooling must be one of cls, mean, max, got 'pooler'"):
        build_embedding_model(encoder, pooling="pooler")


def test_parse_layer_keeps_what_it_accepts():
    assert [parse_layer(x, 6) for x in (None, 0, 6, -7, " -1 ", "mean_last_4", "last")] == [
        None, 0, 6, -7, -1, "mean_last_4", "last"]


def test_keras_file_round_trip(encoder, tmp_path):
    model = build_embedding_model(encoder, pooling="max", normalize=False, layer=-2)
    path = str(tmp_path / "embedder.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, SentenceEmbedder)
    assert (loaded.pooling, loaded.normalize, loaded.layer) == ("max", False, -2)
    np.testing.assert_array_equal(_embed(loaded, TOKEN_IDS), _embed(model, TOKEN_IDS))


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_embeddings_are_float32_under_mixed_precision(policy):
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = build_embedding_model(tiny_encoder(VOCABULARY_SIZE), layer="mean_last_4")
    vectors = _embed(model, TOKEN_IDS)
    assert model.output.dtype == "float32" and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
