"""Hugging Face export with the task head (`zoo.checkpoints.hf_task_heads`).

Tiny task models with every weight moved off its initial value are exported;
the head's logits are then recomputed in numpy from the exported tensors
(transformers' documented layout: Linear weights [out, in]) on top of our
own importer's encoder (`load_hf_encoder` of the export), and compared with
the model's logits. transformers itself is not a dependency: the check
against it is tests/fixtures/check_hf_head_export.py (see docs/serving.md).
"""

import json
import math
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from nlpzoo.layers import CRF
from nlpzoo.tasks.fill_mask.model import FillMaskModel
from nlpzoo.tasks.registry import get_task
from nlpzoo.zoo import build_encoder, build_model, build_task_model
from nlpzoo.zoo.checkpoints import export_hf_task_model, head_kind, load_hf_encoder
from nlpzoo.zoo.checkpoints.hf_task_heads import (
    CRF_FILE,
    HEAD_CONFIG_FILE,
    HEAD_WEIGHTS_FILE,
    THRESHOLDS_FILE,
)
from tests.helpers.binaries import run_tools

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(43)]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TOLERANCE = 1e-4
SIZE = dict(vocabulary_size=len(VOCABULARY))


def perturb(model, seed=0):
    """`model` with every float32 weight moved by N(0, 0.2) noise (so a weight mapped to the
    wrong place shows)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        if variable.dtype == "float32":
            value = np.asarray(variable.numpy())
            variable.assign(value + rng.normal(0, 0.2, value.shape).astype("float32"))
    return model


def _inputs(pair=False):
    rng = np.random.default_rng(7)
    lengths = [10, 7, 4]
    ids = np.zeros((3, 10), np.int32)
    segments = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(5, len(VOCABULARY), length)
        ids[row, 0], ids[row, length - 1] = 2, 3
        if pair:
            ids[row, length // 2] = 3
            segments[row, length // 2 + 1:length] = 1
    mask = (np.arange(10)[None] < np.array(lengths)[:, None]).astype(np.int32)
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def _word_inputs(model):
    """Words of one or two subwords: (inputs, [(row, start, end)] of every real word)."""
    inputs = _inputs()
    spans = {0: [(1, 3), (3, 4), (4, 6), (6, 9)], 1: [(1, 2), (2, 4), (4, 6)], 2: [(1, 3)]}
    starts = np.zeros((3, 4), np.int32)
    ends = np.zeros_like(starts)
    word_mask = np.zeros_like(starts)
    for row, words in spans.items():
        for index, (start, end) in enumerate(words):
            starts[row, index], ends[row, index], word_mask[row, index] = start, end, 1
    inputs = dict(inputs, word_starts=starts, word_mask=word_mask)
    if "word_ends" in model.input:
        inputs["word_ends"] = ends
    return inputs, [(row, index, start, end) for row, words in spans.items()
                    for index, (start, end) in enumerate(words)]


def _export(model, directory, **options):
    return export_hf_task_model(model, str(directory), vocabulary=VOCABULARY, lowercase=True,
                                **options)


def _exported(directory):
    """(config, tensors, our importer's encoder on the export)."""
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as file:
        config = json.load(file)
    return config, load_file(os.path.join(directory, "model.safetensors")), load_hf_encoder(
        directory, dropout=0.0)


def _linear(x, tensors, name):
    return x @ tensors[name + ".weight"].T + tensors[name + ".bias"]


def _encode(encoder, inputs):
    outputs = encoder({name: inputs[name] for name in ("token_ids", "segment_ids",
                                                       "padding_mask")})
    return {name: np.asarray(outputs[name]) for name in ("sequence_output", "pooled_output")}


def _ours(model, inputs):
    return np.asarray(model(inputs, training=False), np.float32)


# --- classification ------------------------------------------------------------------------

CLASSIFIERS = {
    "pooler": lambda: build_model("bert_tiny_classifier", labels=["neg", "pos", "mixed"], **SIZE),
    "pair_cls_hidden": lambda: build_model("bert_tiny_pair_classifier", pooling="cls",
                                           head_hidden_dim=128, labels=["no", "yes"], **SIZE),
    "regression": lambda: build_task_model(get_task("classification", objective="regression"),
                                           "bert_tiny", **SIZE),
    "multi_label": lambda: build_task_model(
        get_task("classification", multi_label=True, thresholds=[0.3, 0.6, 0.45]),
        "bert_tiny", labels=["x", "y", "z"], **SIZE),
}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_sequence_classification_logits_and_labels(name, tmp_path):
    model = perturb(CLASSIFIERS[name](), seed=len(name))
    result = _export(model, tmp_path / "hf")
    config, tensors, encoder = _exported(tmp_path / "hf")
    assert result.architecture == "BertForSequenceClassification"
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert sorted(name for name in tensors if not name.startswith("bert.")) == [
        "classifier.bias", "classifier.weight"]
    inputs = _inputs(pair=name.startswith("pair"))
    # BertForSequenceClassification: classifier(dropout(pooler_output)); our importer's
    # pooled output is tanh(bert.pooler.dense([CLS])).
    logits = _linear(_encode(encoder, inputs)["pooled_output"], tensors, "classifier")
    np.testing.assert_allclose(logits, _ours(model, inputs), atol=TOLERANCE)

    expected_type = {"regression": "regression", "multi_label": "multi_label_classification"
                     }.get(name, "single_label_classification")
    assert config["problem_type"] == expected_type
    labels = model.task_metadata["labels"] or ["score"]
    assert config["num_labels"] == len(labels)
    assert config["id2label"] == {str(i): label for i, label in enumerate(labels)}
    assert config["label2id"] == {label: i for i, label in enumerate(labels)}
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "AutoModelForSequenceClassification" in card and "text-classification" in card
    if name == "multi_label":
        thresholds = json.loads((tmp_path / "hf" / THRESHOLDS_FILE).read_text())
        assert thresholds["thresholds"] == {"x": 0.3, "y": 0.6, "z": 0.45}
        assert THRESHOLDS_FILE in card and "0.600" in card
    if name == "pair_cls_hidden":
        hidden = model.get_layer("classification_head").hidden_layers[0]
        np.testing.assert_array_equal(tensors["bert.pooler.dense.weight"],
                                      np.asarray(hidden.kernel).T)


# --- tagging -------------------------------------------------------------------------------

def _tagger(head="softmax", aggregation="first"):
    task = get_task("tagging", subword_aggregation=aggregation)
    options = dict(tag_scheme="IOB2") if head == "crf" else {}
    return build_task_model(task, "bert_tiny", labels=TAGS, head=head, **options, **SIZE)


@pytest.mark.parametrize("head,aggregation", [("softmax", "first"), ("softmax", "last"),
                                              ("softmax", "mean"), ("crf", "first")])
def test_token_classification_logits(head, aggregation, tmp_path):
    model = perturb(_tagger(head, aggregation), seed=3)
    result = _export(model, tmp_path / "hf")
    config, tensors, encoder = _exported(tmp_path / "hf")
    assert result.architecture == config["architectures"][0] == "BertForTokenClassification"
    assert config["id2label"] == {str(i): tag for i, tag in enumerate(TAGS)}
    assert not any(name.startswith("bert.pooler") for name in tensors)  # no pooler there
    inputs, words = _word_inputs(model)
    token_logits = _linear(_encode(encoder, inputs)["sequence_output"], tensors, "classifier")
    ours = _ours(model, inputs)
    for row, index, start, end in words:
        expected = {"first": token_logits[row, start], "last": token_logits[row, end - 1],
                    "mean": token_logits[row, start:end].mean(0)}[aggregation]
        np.testing.assert_allclose(expected, ours[row, index], atol=TOLERANCE)
    card = (tmp_path / "hf" / "README.md").read_text()
    assert f"subword_aggregation={aggregation}" in card
    assert (CRF_FILE in card) == (head == "crf")


def test_crf_transitions_file_round_trip(tmp_path):
    model = perturb(_tagger("crf"), seed=5)
    _export(model, tmp_path / "hf")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "hf" / CRF_FILE), "np") as file:
        metadata = file.metadata()
        stored = {name: file.get_tensor(name) for name in file.keys()}
    assert json.loads(metadata["labels"]) == TAGS
    for name in ("transitions", "start_transitions", "end_transitions"):
        np.testing.assert_array_equal(stored[name], np.asarray(getattr(model.crf, name)))
    # A CRF made from the file alone decodes the exported emissions as the model does.
    crf = CRF(len(TAGS), stored["allowed"], stored["allowed_start"], stored["allowed_end"])
    for name in ("transitions", "start_transitions", "end_transitions"):
        getattr(crf, name).assign(stored[name])
    inputs, _ = _word_inputs(model)
    tags, _ = crf.decode(_ours(model, inputs), inputs["word_mask"])
    np.testing.assert_array_equal(np.asarray(tags), np.asarray(model.decode(inputs)))


# --- masked LM, question answering, heads with no class -----------------------------------

def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def test_masked_lm_logits(tmp_path):
    model = perturb(FillMaskModel(build_encoder("bert_tiny", **SIZE)), seed=9)
    assert head_kind(model) == "masked_lm"
    _export(model, tmp_path / "hf")
    config, tensors, encoder = _exported(tmp_path / "hf")
    assert config["architectures"] == ["BertForMaskedLM"]
    assert not any(name.startswith("bert.pooler") for name in tensors)
    inputs = _inputs()
    hidden = _encode(encoder, inputs)["sequence_output"]
    p = "cls.predictions."
    h = _gelu(_linear(hidden, tensors, p + "transform.dense"))
    mean, variance = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    h = ((h - mean) / np.sqrt(variance + config["layer_norm_eps"])
         * tensors[p + "transform.LayerNorm.weight"] + tensors[p + "transform.LayerNorm.bias"])
    logits = h @ tensors["bert.embeddings.word_embeddings.weight"].T + tensors[p + "bias"]
    positions = np.tile(np.arange(10, dtype=np.int32), (3, 1))
    ours = _ours(model, dict(inputs, mask_positions=positions))
    real = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(logits[real], ours[real], atol=TOLERANCE)


def test_question_answering_logits(tmp_path):
    model = perturb(build_model("bert_tiny_question_answerer", **SIZE), seed=11)
    _export(model, tmp_path / "hf")
    config, tensors, encoder = _exported(tmp_path / "hf")
    assert config["architectures"] == ["BertForQuestionAnswering"]
    inputs = _inputs()
    logits = _linear(_encode(encoder, inputs)["sequence_output"], tensors, "qa_outputs")
    ours = _ours(model, dict(inputs, answer_mask=np.ones_like(inputs["token_ids"])))
    np.testing.assert_allclose(np.moveaxis(logits, -1, 1), ours, atol=TOLERANCE)


def test_span_ner_head_goes_into_an_extra_file(tmp_path):
    model = perturb(build_model("bert_tiny_span_ner", **SIZE), seed=13)
    result = _export(model, tmp_path / "hf")
    assert result.architecture == "BertModel" and result.kind is None
    assert set(result.extra_files) == {HEAD_WEIGHTS_FILE, HEAD_CONFIG_FILE}
    head = load_file(str(tmp_path / "hf" / HEAD_WEIGHTS_FILE))
    encoder_ids = {id(variable) for variable in model.encoder.weights}
    others = {v.path: v for v in model.weights if id(v) not in encoder_ids}
    assert sorted(head) == sorted(others) and head
    # A fresh model with the export's encoder and the extra file's head is the same model.
    fresh = build_model("bert_tiny_span_ner", **SIZE)
    from nlpzoo.zoo.checkpoints import load_hf_weights

    load_hf_weights(fresh.encoder, str(tmp_path / "hf"))
    fresh_ids = {id(variable) for variable in fresh.encoder.weights}
    for variable in fresh.weights:
        if id(variable) not in fresh_ids:
            variable.assign(head[variable.path])
    for variable, original in zip(fresh.weights, model.weights):
        np.testing.assert_allclose(np.asarray(variable), np.asarray(original), atol=1e-6)
    config = json.loads((tmp_path / "hf" / HEAD_CONFIG_FILE).read_text())
    assert config["class"] == type(model).__name__
    assert HEAD_WEIGHTS_FILE in (tmp_path / "hf" / "README.md").read_text()


# --- refusals ------------------------------------------------------------------------------

REFUSED = {
    "pooling='mean'": lambda: build_model("bert_tiny_classifier", pooling="mean", **SIZE),
    "pooling='cls' without": lambda: build_model("bert_tiny_classifier", pooling="cls", **SIZE),
    "head_hidden_dim=64": lambda: build_model("bert_tiny_classifier", head_hidden_dim=64,
                                              **SIZE),
    "layer_mix='scalar_mix'": lambda: build_model("bert_tiny_classifier",
                                                  layer_mix="scalar_mix", **SIZE),
    "subword_aggregation='max'": lambda: _tagger(aggregation="max"),
    "casing_dim=8": lambda: build_model("bert_tiny_tagger", casing_dim=8, labels=TAGS, **SIZE),
}


@pytest.mark.parametrize("option", sorted(REFUSED))
def test_refused_in_one_line_naming_the_option(option, tmp_path):
    with pytest.raises(ValueError) as error:
        _export(REFUSED[option](), tmp_path / "hf")
    assert option in str(error.value) and "\n" not in str(error.value)
    assert not os.path.exists(tmp_path / "hf") and os.listdir(tmp_path) == []


def test_existing_directory_needs_overwrite(tmp_path):
    model = build_model("bert_tiny_classifier", **SIZE)
    _export(model, tmp_path / "hf")
    with pytest.raises(ValueError, match="overwrite"):
        _export(model, tmp_path / "hf")
    _export(model, tmp_path / "hf", overwrite=True)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(ValueError):
        _export(model, theirs, overwrite=True)
    assert (theirs / "notes.txt").read_text() == "mine"


# --- tools/convert.py --with_head ----------------------------------------------------------

def test_convert_binary_with_head(tmp_path):
    good = perturb(build_model("bert_tiny_tagger", labels=TAGS, vocabulary=VOCABULARY), 1)
    good.save(str(tmp_path / "tagger.keras"))
    bad = build_model("bert_tiny_classifier", pooling="max", vocabulary=VOCABULARY)
    bad.save(str(tmp_path / "max.keras"))
    results = run_tools({
        "good": ("convert.py", f"--input={tmp_path / 'tagger.keras'}", "--with_head",
                 "--output_format=huggingface", f"--output={tmp_path / 'out'}"),
        "bad": ("convert.py", f"--input={tmp_path / 'max.keras'}", "--with_head",
                "--output_format=huggingface", f"--output={tmp_path / 'bad'}"),
        "format": ("convert.py", f"--input={tmp_path / 'tagger.keras'}", "--with_head",
                   "--output_format=native", f"--output={tmp_path / 'native'}"),
    })
    assert results["good"].returncode == 0, results["good"].stderr
    assert "BertForTokenClassification" in results["good"].stdout
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["id2label"]["1"] == "B-PER"
    for name in ("bad", "format"):
        assert results[name].returncode != 0
        assert "Traceback" not in results[name].stderr
    assert "pooling='max'" in results["bad"].stderr
    assert "--output_format=huggingface" in results["format"].stderr
    assert not os.path.exists(tmp_path / "bad") and not os.path.exists(tmp_path / "native")


def test_convert_binary_on_trained_runs(trained_classifier_dir, trained_tagger_dir,
                                        trained_span_ner_dir, tmp_path):
    """tools/train.py runs (TREC classifier, CoNLL CRF tagger, span NER with casing)."""
    runs = {"classifier": trained_classifier_dir, "tagger": trained_tagger_dir,
            "span_ner": trained_span_ner_dir}
    results = run_tools({name: ("convert.py", f"--input={run}", "--with_head",
                                "--output_format=huggingface", f"--output={tmp_path / name}")
                         for name, run in runs.items()})
    for name, run in runs.items():
        assert "Traceback" not in results[name].stderr, results[name].stderr
        labels = json.loads(open(os.path.join(run, "labels.json")).read())
        casing = "casing_dim=" in results[name].stderr
        if name == "tagger" and casing:  # an uncased tagger reads casing features
            assert results[name].returncode != 0 and not os.path.exists(tmp_path / name)
            continue
        assert results[name].returncode == 0, results[name].stderr
        config = json.loads((tmp_path / name / "config.json").read_text())
        card = (tmp_path / name / "README.md").read_text()
        assert "Reproduce" in card and "convert.py" in card
        if name == "span_ner":
            assert config["architectures"] == ["BertModel"]
            assert HEAD_WEIGHTS_FILE in card
            continue
        assert config["id2label"] == {str(i): label for i, label in enumerate(labels)}
        assert config["architectures"] == [{"classifier": "BertForSequenceClassification",
                                            "tagger": "BertForTokenClassification"}[name]]


def test_checkpoint_with_masked_lm_head_exports_as_masked_lm(tmp_path):
    """A native checkpoint (what tools/pretrain.py keeps) with its MLM head → BertForMaskedLM;
    one without a head is refused in one line."""
    from nlpzoo.zoo.checkpoints import head_tensors, save_encoder_checkpoint
    from nlpzoo.zoo.runs.hf_task_export import export_hf_with_head

    model = perturb(FillMaskModel(build_encoder("bert_tiny", **SIZE)), seed=17)
    save_encoder_checkpoint(model.encoder, str(tmp_path / "ckpt"), VOCABULARY, True,
                            heads=head_tensors(model))
    result = export_hf_with_head(str(tmp_path / "ckpt"), str(tmp_path / "hf"))
    assert result.architecture == "BertForMaskedLM"
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    for name, value in head_tensors(model).items():
        np.testing.assert_allclose(tensors[name], value, atol=1e-7)
    assert "fill-mask" in (tmp_path / "hf" / "README.md").read_text()
    save_encoder_checkpoint(model.encoder, str(tmp_path / "bare"), VOCABULARY, True)
    with pytest.raises(ValueError, match="masked-LM head") as error:
        export_hf_with_head(str(tmp_path / "bare"), str(tmp_path / "hf2"))
    assert "\n" not in str(error.value) and not os.path.exists(tmp_path / "hf2")
