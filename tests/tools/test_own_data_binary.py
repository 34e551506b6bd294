"""Your own CSV end to end: train with --text_column/--label_column and --validation_split,
then predict; the flag errors are one line (issue 36)."""

import csv
import doctest
import json
import os

import pytest

from nlpzoo.tools.cli import data_flags
from tests.helpers.binaries import run_tool, run_tools
from tests.helpers.paths import ROOT


def _trec_csv(path, header=("text", "label")):
    """samples/trec/train.label as a CSV of (text, coarse label) columns; the rows."""
    rows = []
    with open(os.path.join(ROOT, "samples", "trec", "train.label"), encoding="latin-1") as f:
        for line in f:
            if line.strip():
                label, text = line.rstrip("\n").split(" ", 1)
                rows.append([text, label.split(":")[0]])
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return rows


@pytest.mark.slow  # about 60 s here: a training run, an evaluation and two predictions
def test_a_csv_trains_with_a_validation_split_and_predicts(tmp_path):
    data, run = str(tmp_path / "x.csv"), str(tmp_path / "run")
    rows = _trec_csv(data, header=("question", "coarse"))
    train = run_tool("train.py", f"--train_data={data}", "--text_column=question",
                     "--label_column=coarse", "--validation_split=0.1", "--preset=bert_tiny",
                     "--vocab_size=300", "--epochs=1", "--max_seq_length=32",
                     "--mixed_precision=float32", f"--model_dir={run}")
    assert train.returncode == 0, train.stderr[-3000:]
    assert (f"validation: 30 of {len(rows)} examples held out of x.csv, stratified by label, "
            "seed 42") in train.stdout
    with open(os.path.join(run, "config.json")) as f:
        config = json.load(f)
    assert config["eval_data"] is None and config["eval_examples"] == 30
    assert config["train_examples"] == len(rows) - 30
    assert config["validation_split"] == {"fraction": 0.1, "seed": 42, "stratified": True,
                                          "held_out": 30}
    assert config["columns"] == {"text_column": "question", "label_column": "coarse"}
    metrics = json.loads(train.stdout.strip().splitlines()[-2])
    assert metrics["examples"] == 30

    questions = tmp_path / "q.txt"
    questions.write_text("What does NASA stand for ?\nWho wrote Hamlet ?\n")
    predict = run_tool("predict.py", f"--model_dir={run}", f"--input={questions}",
                       f"--output={tmp_path / 'out.jsonl'}")
    assert predict.returncode == 0, predict.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    labels = {row[1] for row in rows}
    assert [r["text"] for r in records] == ["What does NASA stand for ?", "Who wrote Hamlet ?"]
    assert all(r["label"] in labels for r in records)

    # Evaluation and prediction read files laid out as the training data (the run's columns).
    evaluate = run_tool("evaluate.py", f"--model_dir={run}", f"--data={data}")
    assert evaluate.returncode == 0, evaluate.stderr[-3000:]
    assert json.loads(evaluate.stdout.strip().splitlines()[-1])["examples"] == len(rows)
    table = tmp_path / "q.csv"
    table.write_text("id,question\n1,What does NASA stand for ?\n")
    predict = run_tool("predict.py", f"--model_dir={run}", f"--input={table}", "--output=-")
    assert predict.returncode == 0, predict.stderr[-3000:]
    assert json.loads(predict.stdout.strip().splitlines()[-1])["text"] == (
        "What does NASA stand for ?")


def test_flag_errors_are_one_line(tmp_path):
    data = str(tmp_path / "x.csv")
    _trec_csv(data)
    common = [f"--train_data={data}", f"--model_dir={tmp_path / 'run'}"]
    results = run_tools({
        "both": ("train.py", *common, f"--eval_data={data}", "--validation_split=0.1"),
        "neither": ("train.py", *common),
        "column": ("train.py", *common, "--validation_split=0.1", "--text_column=sentence"),
        "tagging": ("train.py", *common, "--validation_split=0.1", "--task=tagging",
                    "--text_column=text"),
    })
    expected = {
        "both": "error: --eval_data and --validation_split: give one",
        "neither": "error: no validation data: pass --eval_data=<file>, or "
                   "--validation_split=0.1",
        "column": f"error: {data}:1: no column named 'sentence'; the header has: text, label",
        "tagging": "error: --text_column: --task=tagging has no CSV/TSV columns to name",
    }
    for name, result in results.items():
        assert result.returncode == 1, (name, result.stderr[-2000:])
        lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and lines[0].startswith(expected[name]), (name, result.stderr)
        assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "run")


def test_doctests():
    assert doctest.testmod(data_flags).failed == 0
