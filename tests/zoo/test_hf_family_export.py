"""Hugging Face export with head and tokenizer for every encoder family (`HEAD_ROWS`).

Per family, a tiny task model on the family's fixture tokenizer, every weight
moved off its initial value, is exported with its head and tokenizer; our
importer reads the encoder back, the head is recomputed in numpy from the
exported tensors (the family's class: its module names and activation) and
compared with the model's logits; the tokenizer files read back (our
`load_tokenizer`) to the same ids. The check against transformers itself is
tests/fixtures/check_hf_head_export.py (docs/serving.md).
"""

import json
import math
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from nlpzoo.tasks.fill_mask.model import FillMaskModel
from nlpzoo.zoo import build_encoder, build_model, load_tokenizer
from nlpzoo.zoo.checkpoints import export_hf_checkpoint, export_hf_task_model, load_hf_encoder
from tests.zoo.test_hf_task_head_export import perturb
from nlpzoo.zoo.checkpoints.hf_tokenizers import export_hf_tokenizer, load_hf_tokenizer

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tokenizers")
# family → (encoder preset, fixture tokenizer, class prefix, head dense, output, activation)
FAMILIES = {
    "roberta": ("roberta_tiny", "roberta_bpe/tokenizer_json", "Roberta", "classifier.dense",
                "classifier.out_proj", "tanh"),
    "xlm-roberta": ("roberta_tiny", "xlm_roberta_spm/tokenizer_json", "XLMRoberta",
                    "classifier.dense", "classifier.out_proj", "tanh"),
    "albert": ("albert_tiny", "albert_spm/tokenizer_json", "Albert", "albert.pooler",
               "classifier", "tanh"),
    "distilbert": ("distilbert_tiny", "bert_uncased_wordpiece", "DistilBert", "pre_classifier",
                   "classifier", "relu"),
    "electra": ("electra_tiny", "bert_cased_wordpiece", "Electra", "classifier.dense",
                "classifier.out_proj", "gelu"),
    "deberta-v2": ("deberta_tiny", "deberta_v3_spm/tokenizer_json", "DebertaV2", "pooler.dense",
                   "classifier", "gelu"),
    # ModernBertPredictionHead: dense, gelu, LayerNorm without bias (`head.norm`).
    "modernbert": ("modernbert_tiny", "modernbert_bpe/tokenizer_json", "ModernBert", "head.dense",
                   "classifier", "gelu"),
}
ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0),
               "gelu": np.vectorize(lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))))}
HOSTILE = ["Hello, World! It's 2024.", "Café naïve résumé — ﬁne “quotes” ``here''",
           "日本語のテキスト 😀 e\u0301", "  extra   spaces\tand\ttabs ", "a <mask> [MASK] <s>x</s>",
           "UPPER lower MiXeD 123", ""]
TOLERANCE = 1e-4


def _tokenizer(family):
    return load_hf_tokenizer(os.path.join(FIXTURES, FAMILIES[family][1]))


def _inputs(tokenizer):
    rows = [tokenizer.encode(text) for text in HOSTILE[:4]]
    width = max(map(len, rows))
    ids = np.full((len(rows), width), tokenizer.pad_id, np.int32)
    mask = np.zeros_like(ids)
    for index, row in enumerate(rows):
        ids[index, :len(row)], mask[index, :len(row)] = row, 1
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def _sequence_output(directory, inputs):
    encoder = load_hf_encoder(directory, dropout=0.0)
    return np.asarray(encoder(inputs)["sequence_output"])


def _linear(x, tensors, name):
    return x @ tensors[name + ".weight"].T + tensors[name + ".bias"]


def _norm(x, tensors, name, epsilon):
    """torch's LayerNorm; without `.bias` when the module has none (ModernBERT's)."""
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + epsilon)
    return x * tensors[name + ".weight"] + tensors.get(name + ".bias", 0.0)


def _config(directory):
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as file:
        return json.load(file)


def _token_head(hidden, directory, tensors):
    """ModernBERT's task classes put `head` (dense, gelu, LayerNorm) over every token first;
    the other families' read the vectors as they are."""
    if "head.dense.weight" not in tensors:
        return hidden
    x = ACTIVATIONS["gelu"](_linear(hidden, tensors, "head.dense"))
    return _norm(x, tensors, "head.norm", _config(directory)["norm_eps"])


def _export(model, tokenizer, directory):
    return export_hf_task_model(model, str(directory), vocabulary=tokenizer)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_sequence_classifier_exports_as_the_familys_class(family, tmp_path):
    preset, _, prefix, dense, output, activation = FAMILIES[family]
    tokenizer = _tokenizer(family)
    model = perturb(build_model(f"{preset}_classifier", labels=["a", "b", "c"], tokenizer=tokenizer,
                                 vocabulary_size=tokenizer.vocabulary_size))
    result = export_hf_task_model(model, str(tmp_path / "hf"))  # the model's own tokenizer
    assert result.architecture == f"{prefix}ForSequenceClassification"
    with open(tmp_path / "hf" / "config.json", encoding="utf-8") as file:
        assert json.load(file)["model_type"] == family
    inputs = _inputs(tokenizer)
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    first = _sequence_output(str(tmp_path / "hf"), inputs)[:, 0]
    pooled = ACTIVATIONS[activation](_linear(first, tensors, dense))
    if family == "modernbert":  # its head's LayerNorm (our pooler's pooler_norm)
        config = _config(str(tmp_path / "hf"))
        assert (config["classifier_pooling"], config["classifier_activation"],
                config["classifier_bias"]) == ("cls", "gelu", True)
        assert "head.norm.bias" not in tensors
        pooled = _norm(pooled, tensors, "head.norm", config["norm_eps"])
    logits = _linear(pooled, tensors, output)
    np.testing.assert_allclose(logits, model(inputs, training=False), atol=TOLERANCE)
    back = load_tokenizer(str(tmp_path / "hf"))
    assert [back.encode(text) for text in HOSTILE] == [tokenizer.encode(t) for t in HOSTILE]


@pytest.mark.parametrize("family", ["albert", "electra", "xlm-roberta", "modernbert"])
def test_tagger_and_question_answerer_per_family(family, tmp_path):
    preset, _, prefix, *_ = FAMILIES[family]
    tokenizer = _tokenizer(family)
    size = dict(tokenizer=tokenizer, vocabulary_size=tokenizer.vocabulary_size)
    inputs = _inputs(tokenizer)
    tagger = perturb(build_model(f"{preset}_tagger", labels=["O", "B-X", "I-X"], **size), 1)
    assert _export(tagger, tokenizer, tmp_path / "tag").architecture == \
        f"{prefix}ForTokenClassification"
    words = inputs["padding_mask"].sum(1) - 2
    starts = np.where(np.arange(words.max())[None] < words[:, None],
                      np.arange(1, words.max() + 1)[None], 0).astype(np.int32)
    word_inputs = dict(inputs, word_starts=starts, word_mask=(starts > 0).astype(np.int32))
    hidden = _sequence_output(str(tmp_path / "tag"), inputs)
    tensors = load_file(str(tmp_path / "tag" / "model.safetensors"))
    token_logits = _linear(_token_head(hidden, str(tmp_path / "tag"), tensors), tensors,
                           "classifier")
    ours = np.asarray(tagger(word_inputs, training=False))
    rows, columns = np.nonzero(word_inputs["word_mask"])
    np.testing.assert_allclose(token_logits[rows, starts[rows, columns]], ours[rows, columns],
                               atol=TOLERANCE)
    answerer = perturb(build_model(f"{preset}_question_answerer", **size), 2)
    assert _export(answerer, tokenizer, tmp_path / "qa").architecture == \
        f"{prefix}ForQuestionAnswering"
    hidden = _sequence_output(str(tmp_path / "qa"), inputs)
    tensors = load_file(str(tmp_path / "qa" / "model.safetensors"))
    output = "classifier" if family == "modernbert" else "qa_outputs"
    hidden = _token_head(hidden, str(tmp_path / "qa"), tensors)
    logits = np.moveaxis(_linear(hidden, tensors, output), -1, 1)
    ours = np.asarray(answerer(dict(inputs, answer_mask=np.ones_like(inputs["token_ids"])),
                               training=False))
    mask = np.repeat(inputs["padding_mask"][:, None].astype(bool), 2, 1)
    np.testing.assert_allclose(logits[mask], ours[mask], atol=TOLERANCE)


def test_distilbert_masked_lm_head_names(tmp_path):
    tokenizer = _tokenizer("distilbert")
    model = perturb(FillMaskModel(build_encoder("distilbert_tiny",
                                                 vocabulary_size=tokenizer.vocabulary_size)), 3)
    assert _export(model, tokenizer, tmp_path / "hf").architecture == "DistilBertForMaskedLM"
    inputs = _inputs(tokenizer)
    width = inputs["token_ids"].shape[1]
    hidden = _sequence_output(str(tmp_path / "hf"), inputs)
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    x = ACTIVATIONS["gelu"](_linear(hidden, tensors, "vocab_transform"))
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    x = x * tensors["vocab_layer_norm.weight"] + tensors["vocab_layer_norm.bias"]
    logits = x @ tensors["distilbert.embeddings.word_embeddings.weight"].T \
        + tensors["vocab_projector.bias"]
    ours = np.asarray(model(dict(inputs, mask_positions=np.tile(np.arange(width, dtype=np.int32),
                                                                 (4, 1))), training=False))
    mask = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(logits[mask], ours[mask], atol=TOLERANCE)


@pytest.mark.parametrize("fixture", ["roberta_bpe/legacy", "xlm_roberta_spm/legacy",
                                     "albert_spm/legacy", "bert_cased_wordpiece",
                                     "deberta_v3_spm/legacy", "modernbert_bpe/tokenizer_json"])
def test_tokenizer_files_read_back_to_the_same_ids(fixture, tmp_path):
    tokenizer = load_hf_tokenizer(os.path.join(FIXTURES, fixture))
    export_hf_tokenizer(tokenizer, str(tmp_path), 512)
    back = load_tokenizer(str(tmp_path))
    assert type(back) is type(tokenizer)
    assert [back.encode(text) for text in HOSTILE] == [tokenizer.encode(t) for t in HOSTILE]
    assert back.encode(HOSTILE[0], HOSTILE[1]) == tokenizer.encode(HOSTILE[0], HOSTILE[1])


def test_refusals_are_one_line(tmp_path):
    tokenizer = _tokenizer("roberta")
    # A head made with other settings than its encoder's (as before heads followed them).
    model = FillMaskModel(build_encoder("roberta_tiny", vocabulary_size=tokenizer.vocabulary_size),
                          mlm_settings={"activation": "gelu", "layer_norm_epsilon": 1e-12})
    with pytest.raises(ValueError, match="layer_norm_epsilon") as error:
        _export(model, tokenizer, tmp_path / "mlm")
    encoder = build_encoder("roberta_tiny", vocabulary_size=tokenizer.vocabulary_size - 1)
    with pytest.raises(ValueError, match="vocabulary_size") as other:
        export_hf_checkpoint(encoder, str(tmp_path / "enc"), tokenizer)
    assert all("\n" not in str(e.value) for e in (error, other))
    assert os.listdir(tmp_path) == []
