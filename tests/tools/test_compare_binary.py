"""tools/compare.py: several trained models, one data file, one table and one JSON line."""

import json
import os

import pytest

from tests.helpers.binaries import run_tool, run_tools
from tests.helpers.paths import ROOT


TEST = os.path.join(ROOT, "samples", "trec", "test.label")
CONLL_DEV = os.path.join(ROOT, "samples", "conll2003", "dev.txt")


@pytest.mark.slow  # evaluate and compare on four trained runs: about a minute
def test_compare_prints_each_task_headline_metric_as_evaluate_computes_it(
        trained_classifier_dir, trained_tagger_dir):
    results = run_tools({
        "compare": ("compare.py", "--data", TEST, f"--run=first={trained_classifier_dir}",
                    f"--run=again={trained_classifier_dir}/best_model.keras"),
        "evaluate": ("evaluate.py", "--model_dir", trained_classifier_dir, "--data", TEST),
        "tagger": ("compare.py", "--data", CONLL_DEV, f"--run=crf={trained_tagger_dir}"),
        "tagger_evaluate": ("evaluate.py", "--model_dir", trained_tagger_dir,
                            "--data", CONLL_DEV),
    })
    for result in results.values():
        assert result.returncode == 0, result.stderr[-2000:]
    lines = results["compare"].stdout.strip().splitlines()
    accuracy = json.loads(results["evaluate"].stdout.strip().splitlines()[-1])["accuracy"]
    summary = json.loads(lines[-1])
    assert summary == {"first_accuracy": round(accuracy, 6), "again_accuracy": round(accuracy, 6)}
    assert lines[0].split()[:2] == ["first", "accuracy"]
    assert lines[1].endswith("(+0.0 points)")
    tagger = json.loads(results["tagger"].stdout.strip().splitlines()[-1])
    f1 = json.loads(results["tagger_evaluate"].stdout.strip().splitlines()[-1])["entity_f1"]
    assert tagger == {"crf_entity_f1": round(f1, 6)}


def test_a_run_without_a_name_is_a_one_line_error():
    result = run_tool("compare.py", "--data", TEST, "--run=just_a_path")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: --run=just_a_path: expected NAME=MODEL")
