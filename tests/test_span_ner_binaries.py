"""train / calibrate / evaluate / predict for span NER, end to end on the CoNLL sample."""

import json
import os

import pytest

from tasks.span_ner import read_span_file, span_scores
from tests.test_train_binary import ROOT, _run

SAMPLES = os.path.join(ROOT, "samples", "conll2003")


@pytest.fixture(scope="module")
def span_dir(tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("span") / "model")
    result = _run("train.py", "--task=span_ner", "--preset=bert_tiny",
                  "--train_data", os.path.join(SAMPLES, "train.txt"),
                  "--eval_data", os.path.join(SAMPLES, "dev.txt"), "--model_dir", model_dir,
                  "--epochs=2", "--batch_size=8", "--learning_rate=1e-3", "--max_span_width=4",
                  "--max_seq_length=64", "--vocab_size=500", "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def test_calibrate_stores_threshold_and_evaluate_uses_it(span_dir):
    dev = os.path.join(SAMPLES, "dev.txt")
    result = _run("calibrate.py", "--model_dir", span_dir, "--data", dev)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    best = max(row[3] for row in report["table"])
    assert report["span_f1"] == pytest.approx(best)
    config = json.load(open(os.path.join(span_dir, "config.json")))
    assert config["task_options"]["threshold"] == pytest.approx(report["threshold"])
    result = _run("evaluate.py", "--model_dir", span_dir, "--data", dev)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads([l for l in result.stdout.splitlines() if l.startswith("{")][0])
    assert metrics["threshold"] == pytest.approx(report["threshold"])
    assert metrics["span_f1"] == pytest.approx(report["span_f1"])


def test_predict_jsonl_and_conll_agree_with_evaluate(span_dir, tmp_path):
    dev = os.path.join(SAMPLES, "dev.txt")
    jsonl, conll = str(tmp_path / "dev.jsonl"), str(tmp_path / "dev.conll")
    for output in (jsonl, conll):
        result = _run("predict.py", "--model_dir", span_dir, "--input", dev, "--output", output)
        assert result.returncode == 0, result.stderr[-3000:]
    gold = read_span_file(dev)
    records = [json.loads(line) for line in open(jsonl)]
    predicted = [[(e["start"], e["end"], e["label"]) for e in r["entities"]] for r in records]
    for spans in predicted:  # flat decoding: never overlapping
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    from_conll = [list(s.spans) for s in read_span_file(conll)]
    assert from_conll == predicted
    result = _run("evaluate.py", "--model_dir", span_dir, "--data", dev)
    metrics = json.loads([l for l in result.stdout.splitlines() if l.startswith("{")][0])
    assert metrics["span_f1"] == pytest.approx(span_scores([s.spans for s in gold], predicted)["f1"])
