"""The bi_encoder task: readers, pipeline, flags, predictions and serving (its correlations:
tests/tasks/modeling/test_correlation.py)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from nlpzoo.tasks.bi_encoder import make_dataset, pearson, read_pairs, spearman
from nlpzoo.tasks.bi_encoder.task import BiEncoderTask
from nlpzoo.tasks.classification import ClassificationExample
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.registry import get_task, get_task_class, task_from_metadata, task_names
from nlpzoo.tasks.modeling.serving import serving_function
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer
from nlpzoo.zoo import build_task_model
from tests.helpers.paths import ROOT


MRPC_SAMPLE = os.path.join(ROOT, "samples", "mrpc")
VOCAB = list(RESERVED_TOKENS) + "a b c d e f g h".split()
# The multiple_negatives options every bi-encoder task carries, at their defaults.
RANKING_DEFAULTS = {"ranking_scale": 20.0, "symmetric_ranking": False}
TINY = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0)


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _jsonl(path, records):
    return _write(path, [json.dumps(record) for record in records])


# --- readers ------------------------------------------------------------------------------


def test_mrpc_sample_is_read_by_the_classification_reader():
    examples = read_pairs(os.path.join(MRPC_SAMPLE, "train.tsv"))
    assert len(examples) == 96 and all(e.text and e.text_pair for e in examples)
    assert {e.label for e in examples} == {"0", "1"}
    scored = read_pairs(os.path.join(MRPC_SAMPLE, "dev.tsv"), objective="cosine")
    assert len(scored) == 32  # Quality 0/1 is a score too


def test_jsonl_labels_for_softmax_and_scores_for_cosine(tmp_path):
    path = _jsonl(tmp_path / "pairs.jsonl", [
        {"text": "a b", "text_pair": "b a", "label": "1", "score": 0.9},
        {"text": "c", "text_pair": "d", "label": 0, "score": -0.25}])
    assert [(e.text, e.text_pair, e.label) for e in read_pairs(path)] == [
        ("a b", "b a", "1"), ("c", "d", "0")]
    task = get_task("bi_encoder", objective="cosine")
    assert [e.label for e in task.read(path)] == ["0.9", "-0.25"]
    assert task.label_names(task.read(path)) == []
    assert get_task("bi_encoder").label_names(read_pairs(path)) == ["0", "1"]


@pytest.mark.parametrize("objective, records, message", [
    ("softmax", [{"text": "a", "text_pair": "b", "label": "1"}, {"text": "a", "label": "0"}],
     r"pairs.jsonl:2: a bi-encoder reads text pairs: this example has no 'text_pair'"),
    ("softmax", [{"text": "a", "text_pair": "b", "score": 1.0}],
     r"pairs.jsonl:1: expected an object with 'text' and 'label'"),
    ("cosine", [{"text": "a", "text_pair": "b", "label": "1"}],
     r"pairs.jsonl:1: expected an object with 'text' and 'score'"),
    ("cosine", [{"text": "a", "text_pair": "b", "score": 1.0},
                {"text": "a", "text_pair": "b", "score": 4.2}],
     r"pairs.jsonl:2: the cosine objective needs a similarity score in \[-1, 1\], "
     r"found '4.2' \(scale graded scores into it first: STS-B's 0-5 divided by 5\)"),
    ("cosine", [{"text": "a", "text_pair": "b", "score": "high"}],
     r"pairs.jsonl:1: the cosine objective needs a similarity score .* found 'high'"),
    ("cosine", [{"text": "a", "text_pair": "b", "score": None}],
     r'pairs.jsonl:1: "score" must be a string or a number, found null'),
])
def test_bad_jsonl_names_file_and_line(tmp_path, objective, records, message):
    path = _jsonl(tmp_path / "pairs.jsonl", records)
    with pytest.raises(DataFormatError, match=message):
        get_task("bi_encoder", objective=objective).read(path)


def test_other_formats_are_refused(tmp_path):
    path = _write(tmp_path / "q.label", ["LOC:city Where ?"])
    with pytest.raises(DataFormatError, match=r"q.label: not a bi-encoder file: tried mrpc .*"
                                              r"it looks like TREC questions: "
                                              r"--task=classification reads those"):
        read_pairs(path)


def test_prediction_input_unlabelled_jsonl_or_tab_separated_lines(tmp_path):
    task = get_task("bi_encoder", objective="cosine")
    path = _jsonl(tmp_path / "unlabelled.jsonl", [{"text": "a", "text_pair": "b"}])
    assert [(e.text, e.text_pair) for e in task.read_prediction_input(path)] == [("a", "b")]
    path = _write(tmp_path / "pairs.txt", ["a b\tb a", "", "  c\td  "])
    examples = task.read_prediction_input(path)
    assert [(e.text, e.text_pair, e.line) for e in examples] == [("a b", "b a", 1),
                                                                 ("c", "d", 3)]
    path = _write(tmp_path / "bad.txt", ["a b\tb a", "no tab here"])
    with pytest.raises(DataFormatError, match=r"bad.txt:2: expected 'text<TAB>text_pair'"):
        task.read_prediction_input(path)


# --- pipeline -----------------------------------------------------------------------------


def _pair(text, text_pair, label="1", line=1):
    return ClassificationExample(text, label, text_pair, "pairs", line)


def test_each_text_is_packed_alone_and_both_towers_share_a_bucket():
    tokenizer = WordPieceTokenizer(VOCAB)
    long_text = " ".join("abcdefgh"[i % 8] for i in range(20))
    examples = [_pair("a b", "c", "1"), _pair("d", long_text, "0"), _pair("e f g", "h", "1")]
    dataset = make_dataset(examples, tokenizer, ["0", "1"], max_seq_length=48, batch_size=2)
    (first, labels), (second, _) = list(dataset)
    assert set(first) == {"token_ids", "segment_ids", "padding_mask", "pair_token_ids",
                          "pair_segment_ids", "pair_padding_mask"}
    # The pair's 22 tokens decide the bucket of both towers (32), in order.
    assert {value.shape[1] for value in first.values()} == {32}
    assert {value.shape[1] for value in second.values()} == {16}
    assert labels.numpy().tolist() == [1, 0]
    a, b = first["token_ids"].numpy()[0], first["pair_token_ids"].numpy()[0]
    assert a[:5].tolist() == [2, 5, 6, 3, 0]  # [CLS] a b [SEP] [PAD]
    assert b[:4].tolist() == [2, 7, 3, 0]     # [CLS] c [SEP]: alone, not after text a
    assert first["segment_ids"].numpy().sum() == first["pair_segment_ids"].numpy().sum() == 0
    assert first["pair_padding_mask"].numpy().sum(1).tolist() == [3, 22]


def test_training_batches_have_bucket_lengths_and_cosine_targets_are_scores():
    tokenizer = WordPieceTokenizer(VOCAB)
    examples = [_pair(" ".join("abc"[i % 3] for i in range(n)),
                      " ".join("def"[i % 3] for i in range((n * 7) % 40 + 1)),
                      str(round((n % 5) / 4 - 0.5, 2)), n) for n in range(1, 41)]
    dataset = make_dataset(examples, tokenizer, [], objective="cosine", max_seq_length=64,
                           batch_size=8, training=True, seed=0)
    seen = []
    for features, scores in dataset:
        length = features["token_ids"].shape[1]
        assert length in (16, 32, 64) and features["pair_token_ids"].shape[1] == length
        assert scores.dtype == tf.float32
        seen += scores.numpy().tolist()
    assert sorted(seen) == pytest.approx(sorted(float(e.label) for e in examples))


# --- the task through its door ------------------------------------------------------------


def test_registered_with_its_options_and_metadata():
    assert "bi_encoder" in task_names() and get_task_class("bi_encoder") is BiEncoderTask
    task = get_task("bi_encoder", objective="cosine", pooling="max")
    restored = task_from_metadata({"task": "bi_encoder", "task_options": task.options_dict()})
    assert restored.options == task.options
    assert get_task("bi_encoder").options_dict() == {
        "objective": "softmax", "pooling": "mean", **RANKING_DEFAULTS, "hard_negatives": False}
    assert task.serving_inputs() == ("text", "text_pair")
    assert task.monitor(0) == ("val_spearman", "max") and task.logged_metrics == (
        "spearman", "pearson")
    assert get_task("bi_encoder").monitor(3) == ("val_accuracy", "max")
    assert get_task("bi_encoder").logged_metrics == ()


def test_every_task_defines_its_flags_in_one_set_without_a_clash():
    values = flags.FlagValues()
    for name in task_names():
        get_task_class(name).define_flags(values)
    values(["train"])
    assert BiEncoderTask.options_from_flags(values) == (
        {"objective": "softmax", "pooling": "mean", **RANKING_DEFAULTS}, {})
    assert get_task_class("classification").options_from_flags(values)[1]["pooling"] == "pooler"
    values(["train", "--objective=cosine", "--pooling=max"])
    assert BiEncoderTask.options_from_flags(values)[0] == {"objective": "cosine",
                                                           "pooling": "max", **RANKING_DEFAULTS}
    assert get_task_class("classification").options_from_flags(values)[1]["pooling"] == "max"
    values(["train", "--pooling=pooler"])
    with pytest.raises(ValueError, match="pooling must be one of cls, mean, max"):
        BiEncoderTask(**BiEncoderTask.options_from_flags(values)[0])


@pytest.fixture(scope="module")
def cosine_model():
    """A tiny untrained cosine bi-encoder with its preprocessor, and scored pairs."""
    task = get_task("bi_encoder", objective="cosine")
    model = build_task_model(task, "bert_tiny", **TINY, vocabulary_size=len(VOCAB))
    preprocessor = TextPreprocessor(VOCAB, max_seq_length=16)
    examples = [_pair("a b c", "c b a", "1", 1), _pair("a", "h g f e d", "-0.5", 2),
                _pair("d e", "d e f", "0.5", 3), _pair("b b b", "a c", "0", 4)]
    return task, model, preprocessor, examples


@pytest.mark.slow  # the softmax bi-encoder's agreement test runs in make test
def test_cosine_evaluate_predictions_and_serving_agree(cosine_model, tmp_path):
    task, model, preprocessor, examples = cosine_model
    dataset = task.make_dataset(examples, preprocessor, [], batch_size=3)
    cosines = np.asarray(model.predict(dataset, verbose=0))
    scores = np.array([1.0, -0.5, 0.5, 0.0])
    metrics = task.evaluate(model, dataset, examples, [])
    assert metrics["mse"] == pytest.approx(np.mean((cosines - scores) ** 2), rel=1e-6)
    assert metrics["spearman"] == pytest.approx(spearman(cosines, scores))
    assert metrics["pearson"] == pytest.approx(pearson(cosines, scores))
    assert metrics["examples"] == 4

    output = str(tmp_path / "predictions.jsonl")
    assert task.write_predictions(model, preprocessor, examples, [], output) == "4 text pairs"
    with open(output) as f:
        records = [json.loads(line) for line in f]
    assert [sorted(r) for r in records] == [["cosine", "text", "text_pair"]] * 4
    np.testing.assert_allclose([r["cosine"] for r in records], cosines, atol=2e-6)

    serve, signature = serving_function(task, model, preprocessor, [])
    assert [spec.name for spec in signature] == ["text", "text_pair"]
    served = tf.function(serve, input_signature=signature)(
        tf.constant([e.text for e in examples]), tf.constant([e.text_pair for e in examples]))
    assert sorted(served) == ["cosine", "embedding", "pair_embedding"]
    # Each tower padded to its own bucket: the same vectors as the joint padding.
    np.testing.assert_allclose(served["cosine"], cosines, atol=1e-5)
    assert served["embedding"].shape == (4, 16) and served["embedding"].dtype == tf.float32
