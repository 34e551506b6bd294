"""Fill-mask on the tiny BertForMaskedLM fixture equals Hugging Face `transformers`.

The reference, tests/fixtures/tiny_bert_mlm_reference.npz and
tiny_bert_mlm_pipeline.json, is `transformers`' logits at each [MASK] and its
fill-mask pipeline's top 10, written by tests/fixtures/make_fill_mask_reference.py.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.fill_mask.preprocessor import model_inputs
from nlpzoo.tasks.fill_mask.vocabulary_filter import continuation_token_flags, special_token_flags
from nlpzoo.zoo import load_pretrained
from tests.helpers.paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CHECKPOINT = os.path.join(FIXTURES, "tiny_bert_mlm")
# float32 on both sides; measured at most 3e-6 on logits, 1e-7 on probabilities.
PARITY_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def reference():
    arrays = np.load(os.path.join(FIXTURES, "tiny_bert_mlm_reference.npz"))
    with open(os.path.join(FIXTURES, "tiny_bert_mlm_pipeline.json"), encoding="utf-8") as f:
        pipeline = json.load(f)
    sentences = [str(sentence) for sentence in arrays["sentences"]]
    assert sentences == pipeline["sentences"]
    return arrays, pipeline, sentences


@pytest.fixture(scope="module")
def model():
    return load_pretrained(CHECKPOINT, "fill_mask", top_k=10)


def _softmax(logits):
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def test_token_ids_and_logits_equal_transformers(model, reference):
    arrays, _, sentences = reference
    features = model.preprocessor(tf.constant(sentences))
    logits = model.predict_on_batch(model_inputs(features))
    for index in range(len(sentences)):
        ids = arrays[f"input_ids_{index}"]
        expected = arrays[f"logits_{index}"]
        np.testing.assert_array_equal(features["token_ids"].numpy()[index, :len(ids)], ids)
        kept = int(features["num_masks_kept"][index])
        assert kept == len(expected) == int(features["num_masks"][index])
        np.testing.assert_allclose(logits[index, :kept], expected, atol=PARITY_TOLERANCE)


def test_top_k_equals_transformers_ranking_without_refused_tokens(model, reference):
    arrays, pipeline, sentences = reference
    vocabulary = model.preprocessor.vocabulary
    special, continuation = special_token_flags(vocabulary), continuation_token_flags(vocabulary)
    results = model.predict(sentences)
    assert len(results) == len(sentences)
    for index, (result, hf_masks) in enumerate(zip(results, pipeline["results"])):
        probabilities = _softmax(arrays[f"logits_{index}"].astype(np.float64))
        assert len(result["masks"]) == len(hf_masks) == len(probabilities)
        for slot, (mask, hf_mask, expected) in enumerate(
                zip(result["masks"], hf_masks, probabilities)):
            starts_word = not sentences[index].split("[MASK]")[slot].endswith("un")
            refused = special | (continuation if starts_word else False)
            order = [i for i in np.argsort(-expected, kind="stable") if not refused[i]][:10]
            assert [token["token_id"] for token in mask] == order
            np.testing.assert_allclose([token["probability"] for token in mask],
                                       expected[order], atol=PARITY_TOLERANCE)
            assert [token["token"] for token in mask] == [vocabulary[i] for i in order]
            # The pipeline's own scores, for the tokens it shares with ours.
            ours = {token["token_id"]: token["probability"] for token in mask}
            shared = [entry for entry in hf_mask if entry["token"] in ours]
            assert shared, "the pipeline's top 10 and ours share no token"
            for entry in shared:
                assert abs(ours[entry["token"]] - entry["score"]) < PARITY_TOLERANCE


def test_the_pipeline_proposes_special_tokens_that_we_never_do(model, reference):
    _, pipeline, sentences = reference
    vocabulary = model.preprocessor.vocabulary
    special = special_token_flags(vocabulary)
    hf_special = [entry for sentence in pipeline["results"] for mask in sentence for entry in mask
                  if special[entry["token"]]]
    assert hf_special, "the fixture should make transformers propose a special token"
    for result in model.predict(sentences):
        for mask in result["masks"]:
            assert not any(special[token["token_id"]] for token in mask)
