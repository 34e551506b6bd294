"""Binaries are quiet by default: no TensorFlow C++ lines, no harmless warnings; errors show."""

import os

import pytest

from tests.helpers.binaries import run_tool

NOISE_MARKERS = ("I0000", "port.cc", "cudart_stub.cc", "cuda_platform.cc", "cuInit",
                 "absl::InitializeLog", "To enable the following instructions",
                 "Gradients do not exist", "tf.function retracing", "`shuffle=True` was passed")


def _noise(stderr):
    return [line for line in stderr.splitlines()
            if any(marker in line for marker in NOISE_MARKERS)]


def test_training_a_tagger_and_a_span_ner_model_prints_no_noise(trained_models):
    # The shared trainings ran tools/train.py (train, validate, evaluate the best model).
    for task in ("tagging", "span_ner"):
        result = trained_models.result(task)
        assert _noise(result.stderr) == [], (task, result.stderr[-3000:])
        assert "evaluating the best model" in result.stdout


def test_predict_prints_no_noise(trained_tagger_dir, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("John lives in Paris .\n")
    result = run_tool("predict.py", "--model_dir", trained_tagger_dir, "--input", str(text),
                      "--output", str(tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    assert _noise(result.stderr) == [], result.stderr


@pytest.mark.slow  # the quiet default of every binary is tested in make test
def test_errors_still_show_and_verbosity_brings_tensorflow_back(tmp_path):
    missing = os.path.join(str(tmp_path), "no_such_run")
    quiet = run_tool("evaluate.py", "--model_dir", missing, "--data", missing)
    assert quiet.returncode != 0
    assert _noise(quiet.stderr) == [], quiet.stderr
    lines = quiet.stderr.strip().splitlines()
    assert len(lines) == 1 and "no_such_run" in lines[0], quiet.stderr
    loud = run_tool("evaluate.py", "--model_dir", missing, "--data", missing,
                    "--verbosity=1")
    assert loud.returncode == quiet.returncode
    assert lines[0] in loud.stderr
    assert _noise(loud.stderr), loud.stderr  # TensorFlow's start-up lines, as before
