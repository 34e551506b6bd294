"""tools/train.py --task=classification --multi_label end to end on a tiny generated CSV (a
`labels` cell joined by `|`, sometimes empty), then calibrate.py, evaluate.py and predict.py
on the run."""

import json
import os

import keras
import numpy as np
import pytest

from tests.helpers.binaries import json_line, run_tool

TOPICS = {"sports": "goal match team", "weather": "rain sun wind",
          "politics": "vote law party"}
FILLER = "the a of today news story".split()


def _write_csv(path, count, seed):
    """`text,labels` rows: each text holds words of 0-2 topics (its labels) among filler."""
    rng = np.random.default_rng(seed)
    rows = ["text,labels"]
    for _ in range(count):
        topics = sorted(rng.choice(sorted(TOPICS), rng.integers(0, 3), replace=False))
        words = list(rng.choice(FILLER, 3))
        for topic in topics:
            words += list(rng.choice(TOPICS[topic].split(), 2))
        rng.shuffle(words)
        rows.append(f"{' '.join(words)},{'|'.join(topics)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def _label_sets(path):
    return [set(filter(None, line.split(",")[1].split("|")))
            for line in open(path, encoding="utf-8").read().splitlines()[1:]]


@pytest.mark.slow  # a minute of training and evaluating on 2 shared cores
def test_train_calibrate_evaluate_and_predict_a_multi_label_classifier(tmp_path):
    train = _write_csv(tmp_path / "train.csv", 96, seed=0)
    dev = _write_csv(tmp_path / "dev.csv", 32, seed=1)
    model_dir = str(tmp_path / "run")
    result = run_tool("train.py", "--task=classification", "--multi_label",
                      "--preset=bert_tiny_classifier", f"--train_data={train}",
                      f"--eval_data={dev}", f"--model_dir={model_dir}", "--epochs=3",
                      "--batch_size=16", "--vocab_size=100", "--max_seq_length=32",
                      "--learning_rate=1e-3", "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "decoding tuned on" in result.stdout

    config = json.load(open(os.path.join(model_dir, "config.json")))
    options = config["task_options"]
    assert options["multi_label"] is True and options["label_separator"] == "|"
    assert config["labels"] == ["politics", "sports", "weather"]
    assert config["monitor"] == "val_micro_f1"
    assert len(options["thresholds"]) == 3 and all(0 <= t <= 1 for t in options["thresholds"])
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert set(metrics) == {"loss", "micro_f1", "macro_f1", "micro_precision", "micro_recall",
                            "exact_match", "examples"}
    assert metrics["examples"] == 32 and 0 <= metrics["micro_f1"] <= 1
    card = open(os.path.join(model_dir, "README.md"), encoding="utf-8").read()
    assert "multi_label" in card and "thresholds" in card

    model = keras.saving.load_model(os.path.join(model_dir, "best_model.keras"))
    assert model.task.options.thresholds == pytest.approx(options["thresholds"])
    assert model.output_shape == (None, 3)

    evaluated = run_tool("evaluate.py", f"--model_dir={model_dir}", f"--data={dev}")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    # Its batches (64) pad differently from training's (16): float32 rounding only.
    assert json_line(evaluated.stdout) == pytest.approx(metrics, abs=1e-4)

    calibrated = run_tool("calibrate.py", f"--model_dir={model_dir}", f"--data={dev}",
                          "--dry_run")
    assert calibrated.returncode == 0, calibrated.stderr[-3000:]
    table = json_line(calibrated.stdout)
    assert table["thresholds"] == pytest.approx(options["thresholds"], abs=1e-6)
    assert table["micro_f1"] == pytest.approx(metrics["micro_f1"], abs=1e-4)
    assert len(table["table"]) == 3

    output = str(tmp_path / "labels.jsonl")
    predicted = run_tool("predict.py", f"--model_dir={model_dir}", f"--input={dev}",
                         f"--output={output}")
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    records = [json.loads(line) for line in open(output, encoding="utf-8")]
    assert len(records) == 32 and set(records[0]) == {"text", "labels", "probabilities"}
    for record in records:  # the labels at or over their thresholds (probabilities rounded)
        for name, threshold in zip(config["labels"], options["thresholds"]):
            probability = record["probabilities"][name]
            if abs(probability - threshold) > 1e-6:
                assert (name in record["labels"]) == (probability > threshold), record
    # The written label sets score what evaluate.py scored.
    gold = _label_sets(dev)
    tp = sum(len(g & set(r["labels"])) for g, r in zip(gold, records))
    fp = sum(len(set(r["labels"]) - g) for g, r in zip(gold, records))
    fn = sum(len(g - set(r["labels"])) for g, r in zip(gold, records))
    assert (2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0) == pytest.approx(
        metrics["micro_f1"], abs=1e-6)

    for flag, message in (("--objective=regression", "multi_label predicts label sets; the "
                           "regression objective predicts one score per example: give one "
                           "of them"),
                          ("--class_weights=balanced", "multi-label training has one binary "
                           "cross-entropy per label and takes no class weights")):
        refused = run_tool("train.py", "--task=classification", "--multi_label", flag,
                           f"--train_data={train}", f"--eval_data={dev}",
                           f"--model_dir={tmp_path / 'refused'}")
        assert refused.returncode != 0
        assert refused.stderr.strip().splitlines()[-1].endswith(message)
        assert not os.path.exists(tmp_path / "refused")
