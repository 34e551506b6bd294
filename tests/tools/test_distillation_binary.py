"""tools/distill.py end to end: students of the session's trained CRF tagger and TREC
classifier, and its errors."""

import json
import os

import pytest

from tests.helpers.binaries import run_tool, run_tools
from tests.helpers.paths import CONLL, TREC

_FLAGS = ("--epochs=1", "--batch_size=16", "--vocab_size=300", "--max_seq_length=32",
          "--mixed_precision=float32", "--learning_rate=1e-3")


def test_a_missing_teacher_is_one_line_naming_the_flag(tmp_path):
    result = run_tool("distill.py", "--teacher", str(tmp_path / "nowhere"),
                      "--train_data", os.path.join(TREC, "train.label"),
                      "--eval_data", os.path.join(TREC, "dev.label"),
                      "--model_dir", str(tmp_path / "student"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --teacher={tmp_path / 'nowhere'}: no such model directory or .keras file")
    assert not os.path.exists(tmp_path / "student")


@pytest.fixture(scope="module")
def distilled(trained_tagger_dir, trained_classifier_dir, tmp_path_factory):
    """A softmax student of the CRF tagger (with unlabelled text), a student of the
    classifier's .keras file, and a run refused for a label the teacher does not know."""
    base = tmp_path_factory.mktemp("distill")
    unlabeled = base / "unlabeled.txt"
    unlabeled.write_text("EU rejects German call to boycott British lamb .\n"
                         "Peter Blackburn\n\nBRUSSELS 1996-08-22\n")
    unknown_label = base / "unknown.label"
    unknown_label.write_text("HUM:ind Who wrote Hamlet ?\nXYZ:other What is this ?\n")
    runs = run_tools({
        "tagger": ("distill.py", "--teacher", trained_tagger_dir, "--head=softmax",
                   "--train_data", os.path.join(CONLL, "train.txt"),
                   "--eval_data", os.path.join(CONLL, "dev.txt"),
                   "--unlabeled_data", str(unlabeled), "--alpha=0.7", "--temperature=3",
                   "--model_dir", str(base / "tagger"), *_FLAGS),
        "classifier": ("distill.py", "--teacher",
                       os.path.join(trained_classifier_dir, "best_model.keras"),
                       "--train_data", os.path.join(TREC, "train.label"),
                       "--eval_data", os.path.join(TREC, "dev.label"),
                       "--model_dir", str(base / "classifier"), *_FLAGS),
        "unknown_label": ("distill.py", "--teacher", trained_classifier_dir,
                          "--train_data", str(unknown_label),
                          "--eval_data", os.path.join(TREC, "dev.label"),
                          "--model_dir", str(base / "refused"), *_FLAGS),
    })
    return base, runs


@pytest.mark.slow  # three binaries and two shared trainings
def test_student_model_directory_and_comparison(distilled):
    base, runs = distilled
    for name in ("tagger", "classifier"):
        assert runs[name].returncode == 0, runs[name].stderr[-2000:]
        model_dir = base / name
        for artefact in ("config.json", "vocab.txt", "labels.json", "best_model.keras",
                         "metrics.json", "README.md", "distillation.json"):
            assert (model_dir / artefact).exists(), (name, artefact)
        assert not (model_dir / "checkpoints").exists()
        comparison = json.loads((model_dir / "distillation.json").read_text())
        assert comparison == json.loads([line for line in runs[name].stdout.splitlines()
                                         if line.startswith("{")][-1])
        for side in ("teacher", "student"):
            assert comparison[side]["parameters"] > 0
            assert comparison[side]["predict_examples_per_second"] > 0
        metrics = json.loads((model_dir / "metrics.json").read_text())
        assert comparison["student"]["metrics"] == metrics
        assert "distilled from" in (model_dir / "README.md").read_text()
    config = json.loads((base / "tagger" / "config.json").read_text())
    assert (config["alpha"], config["temperature"], config["unlabeled_examples"]) == (0.7, 3.0, 3)
    assert config["task"] == "tagging" and config["preset"] == "bert_tiny"
    assert config["pack_length"] == 1  # the default without XLA, as tools/train.py's
    assert "entity_f1" in json.loads((base / "tagger" / "metrics.json").read_text())
    assert "accuracy" in json.loads((base / "classifier" / "metrics.json").read_text())


@pytest.mark.slow
def test_student_predicts_like_any_trained_tagger(distilled, tmp_path):
    base, _ = distilled
    output = tmp_path / "tags.jsonl"
    result = run_tool("predict.py", "--model_dir", str(base / "tagger"),
                      "--input", os.path.join(CONLL, "dev.txt"), "--output", str(output))
    assert result.returncode == 0, result.stderr[-2000:]
    first = json.loads(output.read_text().splitlines()[0])
    assert len(first["tags"]) == len(first["words"])


@pytest.mark.slow
def test_a_label_the_teacher_does_not_know_names_its_line(distilled):
    base, runs = distilled
    refused = runs["unknown_label"]
    assert refused.returncode == 1
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {base / 'unknown.label'}:2:") and "XYZ" in last
    assert not (base / "refused").exists()
