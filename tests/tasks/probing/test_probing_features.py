"""tasks.probing.features: every layer's first-subword vector of every word."""

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.probing import extract_word_features, random_encoder_like
from nlpzoo.tasks.words.pipeline import make_word_dataset
from nlpzoo.tasks.words.preprocessor import WordPreprocessor

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "open", "##s", "cafe", "un",
              "##like", "##ly"]
SENTENCES = [["cafe", "opens", "unlikely"], ["opens"], ["unlikely", "cafe"]]
# [CLS] cafe open ##s un ##like ##ly [SEP] / [CLS] open ##s [SEP] / [CLS] un ##like ##ly cafe [SEP]
TOKEN_IDS = [[2, 7, 5, 6, 8, 9, 10, 3], [2, 5, 6, 3], [2, 8, 9, 10, 7, 3]]
FIRST_SUBWORDS = [[1, 2, 4], [1], [1, 4]]
LABELS = [np.array([0, 1, 2]), np.array([1]), np.array([2, 0])]


def _encoder(num_layers=3):
    return Encoder(vocabulary_size=len(VOCABULARY), num_layers=num_layers, num_heads=2,
                   hidden_dim=8, intermediate_dim=16, max_sequence_length=32, dropout=0.0)


@pytest.fixture(scope="module")
def dataset():
    """The sentences tokenized once (tokenizing is the slow part of a small extraction)."""
    return make_word_dataset(SENTENCES, LABELS, WordPreprocessor(VOCABULARY, max_seq_length=16),
                             batch_size=2)


def _numpy_reference(encoder):
    """hidden_states of each sentence alone (no padding), gathered at FIRST_SUBWORDS."""
    rows = []
    for ids, starts in zip(TOKEN_IDS, FIRST_SUBWORDS):
        ids = np.array([ids], np.int32)
        states = encoder({"token_ids": ids, "segment_ids": np.zeros_like(ids),
                          "padding_mask": np.ones_like(ids)})["hidden_states"]
        states = np.stack([np.asarray(layer)[0] for layer in states], axis=1)  # [T, L+1, H]
        rows.append(states[starts])
    return np.concatenate(rows, axis=0)


def test_every_layer_of_every_first_subword_matches_a_numpy_gather(dataset):
    encoder = _encoder(num_layers=3)
    features = extract_word_features(encoder, dataset)
    assert features.vectors.shape == (6, 3 + 1, 8) and features.num_layers == 3 + 1
    assert features.vectors.dtype == np.float32
    assert features.labels.tolist() == [0, 1, 2, 1, 2, 0]
    np.testing.assert_allclose(features.vectors, _numpy_reference(encoder), atol=1e-5)
    # Not the last subword of each word: "opens" has two, "unlikely" three.
    last = np.stack([np.asarray(layer)[0] for layer in encoder(
        {"token_ids": np.array([TOKEN_IDS[0]]), "segment_ids": np.zeros((1, 8), "int32"),
         "padding_mask": np.ones((1, 8), "int32")})["hidden_states"]], axis=1)[[1, 3, 6]]
    assert not np.allclose(features.vectors[:3], last, atol=1e-3)


def test_words_past_max_seq_length_are_left_out():
    encoder = _encoder(num_layers=1)
    # 4 subwords fit: "cafe opens" (3) does, "unlikely" (3 more) does not.
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=6)
    features = extract_word_features(
        encoder, make_word_dataset(SENTENCES, LABELS, preprocessor, batch_size=8))
    assert features.labels.tolist() == [0, 1, 1, 2, 0]
    assert len(features) == 5 and features.vectors.shape == (5, 2, 8)


def test_vectors_are_float32_under_mixed_precision(dataset):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    encoder = _encoder(num_layers=1)
    features = extract_word_features(encoder, dataset)
    assert features.vectors.dtype == np.float32 and features.vectors.shape == (6, 2, 8)


def test_the_control_has_the_shape_and_settings_but_not_the_weights():
    encoder = Encoder(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8,
                      intermediate_dim=16, gelu_approximate=True, norm_first=True)
    control = random_encoder_like(encoder)
    assert control.get_config() == encoder.get_config()
    assert [w.shape for w in control.weights] == [w.shape for w in encoder.weights]
    token_embedding = control.token_embedding.embeddings.numpy()
    assert not np.allclose(token_embedding, encoder.token_embedding.embeddings.numpy())
