"""tools/train.py --task=classification --objective=regression end to end on a tiny generated
STS-B-like TSV (text pairs, 0-5 scores), then evaluate.py and predict.py on the run."""

import json
import os

import keras
import numpy as np
import pytest

from tests.helpers.binaries import json_line, run_tool

WORDS = "man woman dog cat plays runs eats sleeps guitar park food ball".split()


def _write_pairs(path, count, seed):
    """`text<TAB>text_pair<TAB>label` rows; the label is 5 × the pair's word overlap
    (Jaccard), rounded as STS-B's are."""
    rng = np.random.default_rng(seed)
    rows = ["text\ttext_pair\tlabel"]
    for _ in range(count):
        first = list(rng.choice(WORDS, 4, replace=False))
        second = first[:rng.integers(0, 5)] + list(rng.choice(WORDS, 2, replace=False))
        overlap = len(set(first) & set(second)) / len(set(first) | set(second))
        rows.append(f"a {' '.join(first)}\tthe {' '.join(second)}\t{5 * overlap:.2f}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.slow  # a minute of training and evaluating on 2 shared cores
def test_train_evaluate_and_predict_a_regression_classifier(tmp_path):
    train = _write_pairs(tmp_path / "train.tsv", 64, seed=0)
    dev = _write_pairs(tmp_path / "dev.tsv", 24, seed=1)
    model_dir = str(tmp_path / "run")
    result = run_tool("train.py", "--task=classification", "--objective=regression",
                      "--preset=bert_tiny_classifier", f"--train_data={train}",
                      f"--eval_data={dev}", f"--model_dir={model_dir}", "--epochs=2",
                      "--batch_size=16", "--vocab_size=100", "--max_seq_length=32",
                      "--learning_rate=1e-3", "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]

    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["task_options"]["objective"] == "regression"
    assert config["task_options"]["paired_input"] is True and config["labels"] == []
    assert config["monitor"] == "val_spearman"
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert set(metrics) == {"mse", "pearson", "spearman", "examples"}
    assert metrics["examples"] == 24 and -1 <= metrics["spearman"] <= 1
    card = open(os.path.join(model_dir, "README.md"), encoding="utf-8").read()
    assert "regression" in card

    model = keras.saving.load_model(os.path.join(model_dir, "best_model.keras"))
    assert model.task.regression and model.output_shape == (None, 1)

    evaluated = run_tool("evaluate.py", f"--model_dir={model_dir}", f"--data={dev}")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    # Its batches (64) pad differently from training's (16): float32 rounding only.
    assert json_line(evaluated.stdout) == pytest.approx(metrics, abs=1e-4)

    output = str(tmp_path / "scores.jsonl")
    predicted = run_tool("predict.py", f"--model_dir={model_dir}", f"--input={dev}",
                         f"--output={output}")
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    records = [json.loads(line) for line in open(output, encoding="utf-8")]
    assert len(records) == 24 and set(records[0]) == {"text", "text_pair", "score"}
    scores = np.array([record["score"] for record in records])
    targets = np.array([float(line.split("\t")[2]) for line in open(dev).read().splitlines()[1:]])
    assert np.mean((scores - targets) ** 2) == pytest.approx(metrics["mse"], rel=1e-3)

    refused = run_tool("train.py", "--task=classification", "--objective=regression",
                       "--label_smoothing=0.1", f"--train_data={train}", f"--eval_data={dev}",
                       f"--model_dir={tmp_path / 'refused'}")
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines()[-1].endswith(
        "label_smoothing=0.1 smooths class labels; the regression objective has none (it "
        "trains with the mean squared error)")
