"""The fill_mask task on the tiny BertForMaskedLM fixture: filters, masks, errors, loading."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.fill_mask.preprocessor import model_inputs
from nlpzoo.tasks.fill_mask.vocabulary_filter import (
    allowed_tokens,
    continuation_token_flags,
    special_token_flags,
    top_k_tokens,
)
from nlpzoo.tasks.registry import get_task
from nlpzoo.zoo import build_encoder, load_pretrained
from nlpzoo.zoo.checkpoints import (
    export_hf_checkpoint,
    head_tensors,
    load_pretrainer,
    read_tokenizer_settings,
    save_encoder_checkpoint,
)
from tests.helpers.paths import ROOT

CHECKPOINT = os.path.join(ROOT, "tests", "fixtures", "tiny_bert_mlm")
TEXTS = ["The capital of France is [MASK] .", "[MASK] [MASK] and the [MASK] !",
         "She was un[MASK] to read ."]


@pytest.fixture(scope="module")
def model():
    return load_pretrained(CHECKPOINT, "fill_mask")


def _logits(model, texts):
    features = model.preprocessor(tf.constant(texts))
    return features, model.predict_on_batch(model_inputs(features))


def test_probabilities_over_the_vocabulary_sum_to_one(model):
    features, logits = _logits(model, TEXTS)
    vocabulary_size = logits.shape[-1]
    everything = np.ones(logits.shape, bool)
    probabilities, ids = top_k_tokens(logits, everything, vocabulary_size)
    probabilities = np.asarray(probabilities)
    for row, kept in enumerate(features["num_masks_kept"].numpy()):
        np.testing.assert_allclose(probabilities[row, :kept].sum(axis=-1), 1.0, atol=1e-6)
        assert (np.diff(probabilities[row, :kept], axis=-1) <= 0).all()  # best first
        assert sorted(np.asarray(ids)[row, 0].tolist()) == list(range(vocabulary_size))


def test_special_tokens_are_never_proposed_even_with_every_token_asked_for(model):
    vocabulary = model.preprocessor.vocabulary
    special = special_token_flags(vocabulary)
    everything = get_task("fill_mask", top_k=len(vocabulary), allow_continuations=True)
    results = everything.decode_predictions(
        *_examples_and_outputs(everything, model, TEXTS), labels=[])
    for result in results:
        for mask in result["masks"]:
            proposed = {token["token_id"] for token in mask}
            assert proposed == set(np.flatnonzero(~special).tolist())


def _examples_and_outputs(task, model, texts):
    examples = task.raw_examples(texts)
    return examples, task.predict_outputs(model, model.preprocessor, examples, [])


def test_continuation_pieces_only_where_a_word_goes_on(model):
    vocabulary = model.preprocessor.vocabulary
    special, continuation = special_token_flags(vocabulary), continuation_token_flags(vocabulary)
    task = get_task("fill_mask", top_k=len(vocabulary))
    results = task.decode_predictions(*_examples_and_outputs(task, model, TEXTS), labels=[])
    _, logits = _logits(model, TEXTS)
    starts = [[True], [True, True, True], [False]]  # "un[MASK]" continues "un"
    for row, (result, mask_starts) in enumerate(zip(results, starts)):
        for slot, (mask, starts_word) in enumerate(zip(result["masks"], mask_starts)):
            refused = special | continuation if starts_word else special
            ranking = [i for i in np.argsort(-logits[row, slot], kind="stable") if not refused[i]]
            k = int(np.sum(~(special | continuation)))  # what every mask can be given
            assert [t["token_id"] for t in mask] == ranking[:k]
    allowed = get_task("fill_mask", top_k=3, allow_continuations=True)
    assert allowed.options.allow_continuations


def test_allowed_tokens_rule():
    special = np.array([True, False, False, False])
    continuation = np.array([False, False, True, False])
    allowed = np.asarray(allowed_tokens(special, continuation, np.array([[True, False]])))
    assert allowed.tolist() == [[[False, True, False, True], [False, True, True, True]]]
    allowed = np.asarray(allowed_tokens(special, continuation, np.array([[True]]),
                                        allow_continuations=True))
    assert allowed.tolist() == [[[False, True, True, True]]]


def test_several_masks_in_one_text_and_the_filled_sequence(model):
    result = model.predict(["[MASK] [MASK] and the [MASK] !"])[0]
    assert len(result["masks"]) == 3 and all(len(mask) == 5 for mask in result["masks"])
    best = [mask[0]["token"] for mask in result["masks"]]
    assert result["sequence"] == f"{best[0]} {best[1]} and the {best[2]} !"
    # Each mask is scored at its own position: the same as alone in a batch of others.
    alone = model.predict(["x", "[MASK] [MASK] and the [MASK] !"][1:])[0]
    for mask, other in zip(result["masks"], alone["masks"]):
        assert [t["token_id"] for t in mask] == [t["token_id"] for t in other]
        np.testing.assert_allclose([t["probability"] for t in mask],
                                   [t["probability"] for t in other], atol=1e-6)


def test_a_text_without_a_mask_is_an_error(model):
    with pytest.raises(ValueError, match=r"input:2: no \[MASK\] in the text"):
        model.predict(["Paris is [MASK] .", "Paris is nice ."])


def test_masks_past_max_seq_length_are_an_error():
    short = load_pretrained(CHECKPOINT, "fill_mask", max_seq_length=8)
    with pytest.raises(ValueError, match=r"1 of its 2 \[MASK\] tokens lie past "
                                         "max_seq_length=8"):
        short.predict(["[MASK] the cat sat on the mat [MASK]"])


def test_a_checkpoint_without_an_mlm_head_is_refused(tmp_path):
    vocabulary, lowercase = read_tokenizer_settings(CHECKPOINT)
    directory = str(tmp_path / "no_head")
    export_hf_checkpoint(build_encoder("bert_tiny", vocabulary_size=len(vocabulary),
                                       num_layers=1), directory, vocabulary, lowercase)
    with pytest.raises(ValueError) as error:
        load_pretrained(directory, "fill_mask")
    message = str(error.value)
    assert "\n" not in message
    assert "has no masked-LM head (cls.predictions.*)" in message
    assert f"tools/pretrain.py --init_checkpoint={directory}" in message


def test_a_native_checkpoint_keeps_the_mlm_head(model, tmp_path):
    pretrainer, loaded = load_pretrainer(CHECKPOINT, "mlm")
    assert loaded == ("mlm_head",)
    vocabulary, lowercase = read_tokenizer_settings(CHECKPOINT)
    directory = str(tmp_path / "native")
    save_encoder_checkpoint(pretrainer.encoder, directory, vocabulary, lowercase,
                            heads=head_tensors(pretrainer))
    assert "pretraining_heads.npz" in os.listdir(directory)
    native = load_pretrained(directory, "fill_mask")
    _, expected = _logits(model, TEXTS)
    _, logits = _logits(native, TEXTS)
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    # Continued pretraining from it starts from that head too.
    assert load_pretrainer(directory, "mlm")[1] == ("mlm_head",)


def test_the_model_saves_and_loads_with_its_preprocessor(model, tmp_path):
    path = str(tmp_path / "fill_mask.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.task.name == "fill_mask"
    restored_result, result = restored.predict(TEXTS[:1])[0], model.predict(TEXTS[:1])[0]
    assert restored_result["sequence"] == result["sequence"]
    for mask, other in zip(restored_result["masks"], result["masks"]):
        assert [t["token"] for t in mask] == [t["token"] for t in other]
        np.testing.assert_allclose([t["probability"] for t in mask],
                                   [t["probability"] for t in other], atol=1e-6)
