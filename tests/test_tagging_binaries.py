"""train / evaluate / predict for tagging, end to end on the bundled CoNLL sample."""

import json
import os

import pytest
from seqeval.metrics import f1_score

from tasks.tagging import read_column_file, tags_to_spans
from tests.test_train_binary import ROOT, _run

SAMPLES = os.path.join(ROOT, "samples", "conll2003")


@pytest.fixture(scope="module")
def tagger_dir(tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("tagging") / "model")
    result = _run("train.py", "--task=tagging", "--preset=bert_tiny", "--head=crf",
                  "--train_data", os.path.join(SAMPLES, "train.txt"),
                  "--eval_data", os.path.join(SAMPLES, "dev.txt"), "--model_dir", model_dir,
                  "--epochs=2", "--batch_size=8", "--learning_rate=1e-3",
                  "--max_seq_length=64", "--vocab_size=500", "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def test_train_writes_entity_metrics(tagger_dir):
    config = json.load(open(os.path.join(tagger_dir, "config.json")))
    assert config["preset"] == "bert_tiny_crf_tagger" and config["tag_scheme"] == "IOB2"
    assert config["labels"][0] == "O"
    metrics = json.load(open(os.path.join(tagger_dir, "metrics.json")))
    for name in ("entity_precision", "entity_recall", "entity_f1", "token_accuracy"):
        assert 0.0 <= metrics[name] <= 1.0
    best = json.load(open(os.path.join(tagger_dir, "best_model.keras.json")))
    assert best["monitor"] == "val_entity_f1"


def test_predict_conll_and_jsonl_agree_with_evaluate(tagger_dir, tmp_path):
    dev = os.path.join(SAMPLES, "dev.txt")
    conll_out, jsonl_out = str(tmp_path / "dev.conll"), str(tmp_path / "dev.jsonl")
    assert _run("predict.py", "--model_dir", tagger_dir, "--input", dev,
                "--output", conll_out).returncode == 0
    assert _run("predict.py", "--model_dir", tagger_dir, "--input", dev,
                "--output", jsonl_out).returncode == 0
    gold = read_column_file(dev)
    predicted = read_column_file(conll_out)
    assert [s.words for s in predicted] == [s.words for s in gold]
    records = [json.loads(line) for line in open(jsonl_out)]
    assert [r["tags"] for r in records] == [list(s.tags) for s in predicted]
    for record in records:
        assert [(e["start"], e["end"], e["label"]) for e in record["entities"]] == \
            [tuple(span) for span in tags_to_spans(record["tags"])]
    result = _run("evaluate.py", "--model_dir", tagger_dir, "--data", dev)
    assert result.returncode == 0, result.stderr[-2000:]
    metrics = json.loads([l for l in result.stdout.splitlines() if l.startswith("{")][0])
    expected = f1_score([list(s.tags) for s in gold], [list(s.tags) for s in predicted])
    assert abs(metrics["entity_f1"] - expected) < 1e-12


def test_predict_plain_text(tagger_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("EU rejects German call to boycott British lamb .\n\nPeter Blackburn\n")
    out = tmp_path / "out.jsonl"
    result = _run("predict.py", "--model_dir", tagger_dir, "--input", str(text),
                  "--output", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in open(out)]
    assert [r["words"] for r in records] == [
        "EU rejects German call to boycott British lamb .".split(), ["Peter", "Blackburn"]]


def test_bad_tagging_input_names_file_and_line(tmp_path, tagger_dir):
    bad = tmp_path / "bad.txt"
    bad.write_text("EU NNP B-NP B-ORG\nrejects VBZ B-VP\n")
    result = _run("train.py", "--task=tagging", "--train_data", str(bad),
                  "--eval_data", str(bad), "--model_dir", str(tmp_path / "m"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{bad}:2: expected 4 columns" in result.stderr
    bad.write_text("EU NNP B-NP X-ORG\n")
    result = _run("evaluate.py", "--model_dir", tagger_dir, "--data", str(bad))
    assert result.returncode == 1 and f"{bad}:1:" in result.stderr and "X-ORG" in result.stderr
    bad.write_text("")
    result = _run("evaluate.py", "--model_dir", tagger_dir, "--data", str(bad))
    assert result.returncode == 1 and str(bad) in result.stderr
