"""The train and evaluate binaries end to end, in a temporary directory."""

import json
import os

import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers.binaries import run_tool, run_tools  # noqa: F401 (ROOT)
from tests.helpers.paths import ROOT, TREC

SAMPLES = TREC
# tests/test_init_checkpoint.py and tests/test_checkpoint_formats.py import these names.
_run = run_tool


def _scalars(log_dir):
    """{tag: [values]} of the scalar summaries Keras wrote (as tensors) under log_dir."""
    accumulator = EventAccumulator(log_dir, size_guidance={"tensors": 0})
    accumulator.Reload()
    return {
        tag: [float(tf.make_ndarray(event.tensor_proto)) for event in accumulator.Tensors(tag)]
        for tag in accumulator.Tags()["tensors"]
        if tag.startswith("epoch_")
    }


@pytest.fixture(scope="module")
def trained(trained_classifier_dir, trained_models):
    """The session's TREC classifier: (model_dir, its train.py CompletedProcess)."""
    return trained_classifier_dir, trained_models.result("classification")


def test_model_dir_contents(trained):
    model_dir, result = trained
    for name in ("config.json", "vocab.txt", "labels.json", "best_model.keras", "metrics.json"):
        assert os.path.exists(os.path.join(model_dir, name)), name
    assert not os.path.exists(os.path.join(model_dir, "checkpoints"))  # removed when done
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["preset"] == "bert_tiny_classifier"
    assert config["trainable_parameters"] == config["total_parameters"] > 0
    assert config["freeze_encoder"] is False
    assert config["labels"] == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    # The bert_tiny preset's fine-tuning defaults fill what the flags leave out; from
    # random weights the head learns at the encoder's rate.
    assert config["epochs"] == 3 and config["warmup_fraction"] == 0.1
    assert config["head_learning_rate"] is None
    assert config["total_steps"] == 3 * config["steps_per_epoch"]
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert 0.0 <= metrics["accuracy"] <= 1.0
    assert json.dumps(metrics, sort_keys=True) in result.stdout
    assert f"tensorboard --logdir {os.path.join(model_dir, 'logs')}" in result.stdout


def test_tensorboard_logs_hold_loss_and_learning_rate(trained):
    model_dir, _ = trained
    train = _scalars(os.path.join(model_dir, "logs", "train"))
    validation = _scalars(os.path.join(model_dir, "logs", "validation"))
    assert len(train["epoch_loss"]) == 3 and len(validation["epoch_loss"]) == 3
    assert len(train["epoch_accuracy"]) == 3 and len(validation["epoch_accuracy"]) == 3
    rates = train["epoch_learning_rate"]
    assert len(rates) == 3
    # Warm-up then linear decay to 0: the rate ends below its peak.
    assert max(rates) <= 1e-3 + 1e-9 and rates[-1] < max(rates)
    assert train["epoch_loss"][-1] < train["epoch_loss"][0]


# slow: evaluate.py's JSON line is read by test_compare_binary, test_progress and test_export
@pytest.mark.slow
def test_evaluate_prints_one_json_line(trained):
    model_dir, _ = trained
    result = run_tool("evaluate.py", "--model_dir", model_dir,
                      "--data", os.path.join(SAMPLES, "test.label"))
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = [l for l in result.stdout.splitlines() if l.startswith("{")]
    metrics = json.loads(line)
    stored = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert metrics["examples"] == 100
    assert abs(metrics["accuracy"] - stored["accuracy"]) < 1e-6


def test_user_errors_are_one_line_with_nonzero_exit(trained_classifier_dir, trained_models,
                                                    tmp_path):
    bad_eval = tmp_path / "eval.label"
    bad_eval.write_text("LOC:city Where ?\nXYZ:abc What ?\n")
    # train.py must refuse to touch it; it works on a copy all the same.
    finished = trained_models.copy("classification", tmp_path / "finished")
    results = run_tools({
        "unseen label": ("evaluate.py", "--model_dir", trained_classifier_dir,
                         "--data", str(bad_eval)),
        "unseen label in training": ("train.py", "--train_data",
                                     os.path.join(SAMPLES, "train.label"), "--eval_data",
                                     str(bad_eval), "--model_dir", str(tmp_path / "never")),
        "missing file": ("train.py", "--train_data", str(tmp_path / "missing.label"),
                         "--eval_data", str(bad_eval), "--model_dir", str(tmp_path / "m")),
        "finished model_dir": ("train.py", "--train_data", os.path.join(SAMPLES, "train.label"),
                               "--eval_data", os.path.join(SAMPLES, "test.label"),
                               "--model_dir", finished),
        "bad flag value": ("train.py", "--train_data=x", "--eval_data=y", "--model_dir=z",
                           "--jit_compile=sometimes"),
    })
    for result in results.values():
        assert "Traceback" not in result.stderr

    result = results["unseen label"]
    assert result.returncode == 1
    assert f"error: {bad_eval}:2: label 'XYZ' was not seen in training" in result.stderr

    # Refused before anything is written: no model directory is left behind.
    result = results["unseen label in training"]
    assert result.returncode == 1
    assert f"{bad_eval}:2: label 'XYZ' was not seen in training" in result.stderr
    assert not os.path.exists(tmp_path / "never")

    result = results["missing file"]
    assert result.returncode == 1
    assert f"error: {tmp_path / 'missing.label'}: no such file" in result.stderr

    # A finished model directory is not overwritten by surprise.
    result = results["finished model_dir"]
    assert result.returncode == 1
    assert "already holds a trained model; pass --overwrite" in result.stderr
    assert sorted(os.listdir(finished)) == sorted(os.listdir(trained_classifier_dir))

    result = results["bad flag value"]
    assert result.returncode != 0
    assert "--jit_compile" in result.stderr


@pytest.mark.slow  # the callback's logic: tests/test_training_state.py, in process
def test_early_stopping_ends_training_and_keeps_the_best_epoch(tmp_path):
    # A learning rate this small leaves the validation accuracy where it starts: no epoch
    # after the first improves it, so patience 1 stops after the second of 20 epochs.
    model_dir = str(tmp_path / "run")
    result = run_tool("train.py", "--train_data", os.path.join(SAMPLES, "train.label"),
                      "--eval_data", os.path.join(SAMPLES, "test.label"),
                      "--model_dir", model_dir, "--epochs=20", "--learning_rate=1e-12",
                      "--early_stopping_patience=1", "--vocab_size=300",
                      "--max_seq_length=32", "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Epoch 2/20" in result.stdout and "Epoch 3/20" not in result.stdout
    with open(os.path.join(model_dir, "best_model.keras.json")) as f:
        assert json.load(f)["epoch"] == 1
    assert json.load(open(os.path.join(model_dir, "config.json")))[
        "early_stopping_patience"] == 1
