"""Fill-mask on tiny RoBERTa, XLM-R, ALBERT, DistilBERT, DeBERTa-v3 and ModernBERT
`*ForMaskedLM` checkpoints equals Hugging Face `transformers`: token ids, logits at the
masks, and the pipeline's top 10 (DeBERTa's head under `lm_predictions.lm_head.*`, ModernBERT's
`head` without a dense bias or a norm bias).

The fixtures, tests/fixtures/family_mlm/<model_type>/, are written by
tests/fixtures/make_fill_mask_reference.py: the checkpoint (config.json,
model.safetensors), `reference.npz` (ids and logits at each mask) and
`pipeline.json` (`transformers.pipeline("fill-mask")`'s top 10). The tokenizer
is the small one of tests/fixtures/tokenizers/ the generator names; a checkpoint
directory is the two put together.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.fill_mask.preprocessor import model_inputs
from nlpzoo.tasks.fill_mask.vocabulary_filter import token_flags
from nlpzoo.zoo import load_pretrained
from nlpzoo.zoo.checkpoints import export_hf_task_model
from nlpzoo.zoo.checkpoints.huggingface import read_hf_weights
from tests.helpers.paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# float32 on both sides (measured in the report of this test's commit).
PARITY_TOLERANCE = 1e-5
FAMILIES = ("roberta", "xlm-roberta", "albert", "distilbert", "deberta-v2", "modernbert")
# Whether each mask of the generator's sentences starts a word, by the tokenizer's rule:
# "{mask} is a big city" starts one for WordPiece and SentencePiece ("▁" at the start of
# the text) but not for byte-level BPE without a prefix space (no "Ġ" there).
_STARTS = [[True], [True, True], [True], [False, True], [True, True]]
EXPECTED_STARTS = {family: _STARTS for family in FAMILIES}
EXPECTED_STARTS["roberta"] = [[True], [True, True], [False], [False, True], [True, True]]
EXPECTED_STARTS["modernbert"] = EXPECTED_STARTS["roberta"]


def family_checkpoint(family, directory):
    """The fixture's model files and its tokenizer's files in one directory (returned)."""
    with open(os.path.join(FIXTURES, "family_mlm", family, "pipeline.json"),
              encoding="utf-8") as f:
        tokenizer_dir = os.path.join(FIXTURES, "tokenizers", json.load(f)["tokenizer"])
    os.makedirs(directory, exist_ok=True)
    for source in (os.path.join(FIXTURES, "family_mlm", family), tokenizer_dir):
        for name in os.listdir(source):
            if name not in ("reference.npz", "pipeline.json", "README.md"):
                shutil.copy(os.path.join(source, name), directory)
    return str(directory)


@pytest.fixture(scope="module", params=FAMILIES)
def case(request, tmp_path_factory):
    family = request.param
    directory = family_checkpoint(family, tmp_path_factory.mktemp(family) / "checkpoint")
    arrays = np.load(os.path.join(FIXTURES, "family_mlm", family, "reference.npz"))
    with open(os.path.join(FIXTURES, "family_mlm", family, "pipeline.json"),
              encoding="utf-8") as f:
        pipeline = json.load(f)
    sentences = [str(sentence) for sentence in arrays["sentences"]]
    assert sentences == pipeline["sentences"]
    model = load_pretrained(directory, "fill_mask", top_k=10)
    return family, model, arrays, pipeline, sentences, directory


def _softmax(logits):
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def test_token_ids_and_logits_equal_transformers(case):
    family, model, arrays, _, sentences, _ = case
    features = model.preprocessor(tf.constant(sentences))
    logits = model.predict_on_batch(model_inputs(features))
    worst = 0.0
    for index in range(len(sentences)):
        ids = arrays[f"input_ids_{index}"]
        expected = arrays[f"logits_{index}"]
        np.testing.assert_array_equal(features["token_ids"].numpy()[index, :len(ids)], ids)
        kept = int(features["num_masks_kept"][index])
        assert kept == len(expected) == int(features["num_masks"][index])
        np.testing.assert_allclose(logits[index, :kept], expected, atol=PARITY_TOLERANCE)
        worst = max(worst, float(np.max(np.abs(logits[index, :kept] - expected))))
        starts = features["mask_starts_word"].numpy()[index, :kept].tolist()
        assert starts == EXPECTED_STARTS[family][index], (family, sentences[index])
    print(f"{family}: largest logit difference {worst:.2e}")


def test_top_k_is_the_pipelines_without_refused_tokens(case):
    family, model, arrays, pipeline, sentences, _ = case
    special, continuation = token_flags(model.preprocessor.tokenizer())
    vocabulary = model.preprocessor.vocabulary
    results = model.predict(sentences)
    for index, (result, hf_masks) in enumerate(zip(results, pipeline["results"])):
        probabilities = _softmax(arrays[f"logits_{index}"].astype(np.float64))
        assert len(result["masks"]) == len(hf_masks) == len(probabilities)
        for slot, (mask, hf_mask, expected) in enumerate(
                zip(result["masks"], hf_masks, probabilities)):
            refused = special | (continuation if EXPECTED_STARTS[family][index][slot] else False)
            order = [i for i in np.argsort(-expected, kind="stable") if not refused[i]][:10]
            assert [token["token_id"] for token in mask] == order
            assert [token["token"] for token in mask] == [vocabulary[i] for i in order]
            np.testing.assert_allclose([token["probability"] for token in mask],
                                       expected[order], atol=PARITY_TOLERANCE)
            # The pipeline's own ranking, less the tokens we refuse, starts ours.
            theirs = [entry["token"] for entry in hf_mask if not refused[entry["token"]]]
            assert [token["token_id"] for token in mask][:len(theirs)] == theirs
            ours = {token["token_id"]: token["probability"] for token in mask}
            for entry in hf_mask:
                if entry["token"] in ours:
                    assert abs(ours[entry["token"]] - entry["score"]) < PARITY_TOLERANCE


def test_the_sequence_writes_the_best_piece_as_text(case):
    family, model, _, _, sentences, _ = case
    tokenizer = model.preprocessor.tokenizer()
    mask = tokenizer.special_tokens["mask"]
    result = model.predict(sentences[:1])[0]
    best = result["masks"][0][0]["token"]
    assert result["sequence"] == sentences[0].replace(mask, tokenizer.piece_text(best))
    assert not result["sequence"].startswith(("Ġ", "▁")) and "##" not in result["sequence"]


def test_export_gives_back_the_checkpoints_tensors_and_logits(case, tmp_path):
    """transformers → ours → `export_hf_task_model`: the same class and tensors (head
    included, under the family's names), and the export reads back to the same logits."""
    family, model, _, _, sentences, directory = case
    exported = str(tmp_path / "exported")
    result = export_hf_task_model(model, exported)
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
        assert result.architecture == json.load(f)["architectures"][0]
    original, written = read_hf_weights(directory), read_hf_weights(exported)
    head = {name for name in original if not name.startswith(
        ("roberta.", "albert.", "distilbert.", "deberta.", "model."))}
    assert head and head <= set(written)
    for name, value in original.items():
        if name in written:
            np.testing.assert_allclose(written[name], value, atol=1e-6, err_msg=name)
    back = load_pretrained(exported, "fill_mask")
    features = model.preprocessor(tf.constant(sentences))
    np.testing.assert_allclose(back.predict_on_batch(model_inputs(features)),
                               model.predict_on_batch(model_inputs(features)), atol=1e-5)


def test_an_electra_discriminator_is_refused_in_one_line(tmp_path):
    """ElectraForPreTraining (the discriminator) has no masked-LM head; the message names
    where ElectraForMaskedLM (a generator) keeps one."""
    from nlpzoo.zoo import build_encoder
    from nlpzoo.zoo.checkpoints import export_hf_checkpoint, load_tokenizer

    tokenizer = load_tokenizer(os.path.join(FIXTURES, "tokenizers", "bert_cased_wordpiece"))
    directory = str(tmp_path / "electra")
    export_hf_checkpoint(build_encoder("electra_tiny", vocabulary_size=tokenizer.vocabulary_size),
                         directory, tokenizer)
    with pytest.raises(ValueError, match="no masked-LM head \\(generator_predictions") as error:
        load_pretrained(directory, "fill_mask")
    assert "\n" not in str(error.value) and "ElectraForMaskedLM" in str(error.value)


def test_a_modernbert_head_without_its_decoder_is_no_masked_lm_head(tmp_path):
    """ModernBERT's task classes name their `head` as its masked-LM class does; without a
    decoder bias it is a classifier's head, not read as a masked-LM head; with one, the
    Hub's missing dense bias (`classifier_bias: false`) reads as zeros."""
    from safetensors.numpy import load_file, save_file

    from nlpzoo.zoo.checkpoints.heads import HF_MLM_PREFIX, hf_head_tensors

    directory = family_checkpoint("modernbert", tmp_path / "checkpoint")
    heads = hf_head_tensors(directory)
    assert "head.dense.bias" not in read_hf_weights(directory)
    np.testing.assert_array_equal(heads[HF_MLM_PREFIX + "transform.dense.bias"], 0.0)
    assert HF_MLM_PREFIX + "transform.LayerNorm.bias" not in heads
    path = os.path.join(directory, "model.safetensors")
    tensors = load_file(path)
    del tensors["decoder.bias"]
    save_file(tensors, path, metadata={"format": "pt"})
    assert hf_head_tensors(directory) == {}
