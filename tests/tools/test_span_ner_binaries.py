"""train / calibrate / evaluate / predict for span NER, end to end on the CoNLL sample.

The model is the session's shared one (tests/conftest.py), trained once by
tools/train.py. calibrate.py writes its threshold into the model directory, so
the tests here work on a copy: calibrated once, then read by every test.
"""

import json
import os

import pytest

from nlpzoo.tasks.span_ner import read_span_file, span_scores
from tests.helpers.binaries import json_line, run_tool, run_tools
from tests.helpers.paths import CONLL

DEV = os.path.join(CONLL, "dev.txt")


@pytest.fixture(scope="module")
def calibrated(trained_models, tmp_path_factory):
    """calibrate.py on a copy of the shared model, then predict (two formats) and evaluate."""
    base = tmp_path_factory.mktemp("span")
    model_dir = trained_models.copy("span_ner", base / "model")
    calibration = run_tool("calibrate.py", "--model_dir", model_dir, "--data", DEV)
    assert calibration.returncode == 0, calibration.stderr[-3000:]
    outputs = {"jsonl": str(base / "dev.jsonl"), "conll": str(base / "dev.conll")}
    results = run_tools({
        **{f"predict {kind}": ("predict.py", "--model_dir", model_dir, "--input", DEV,
                               "--output", path) for kind, path in outputs.items()},
        "evaluate": ("evaluate.py", "--model_dir", model_dir, "--data", DEV),
    })
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"
    return {"model_dir": model_dir, "outputs": outputs,
            "report": json.loads(calibration.stdout.strip().splitlines()[-1]),
            "metrics": json_line(results["evaluate"].stdout)}


def test_training_tunes_the_threshold_on_the_validation_data(trained_span_ner_dir,
                                                             trained_models):
    config = json.load(open(os.path.join(trained_span_ner_dir, "config.json")))
    assert config["calibrated_on"] == os.path.abspath(DEV)
    assert "decoding tuned on" in trained_models.result("span_ner").stdout
    check = run_tool("calibrate.py", "--model_dir", trained_span_ner_dir, "--data", DEV,
                     "--dry_run")
    assert check.returncode == 0, check.stderr[-3000:]
    report = json.loads(check.stdout.strip().splitlines()[-1])
    assert config["task_options"]["threshold"] == pytest.approx(report["threshold"])
    metrics = json.load(open(os.path.join(trained_span_ner_dir, "metrics.json")))
    assert metrics["threshold"] == pytest.approx(report["threshold"])
    assert metrics["span_f1"] == pytest.approx(report["span_f1"])


def test_calibrate_stores_threshold_and_evaluate_uses_it(calibrated):
    report = calibrated["report"]
    best = max(row[3] for row in report["table"])  # the table's values have 6 decimals
    assert report["span_f1"] == pytest.approx(best, abs=5e-7)
    config = json.load(open(os.path.join(calibrated["model_dir"], "config.json")))
    assert config["task_options"]["threshold"] == pytest.approx(report["threshold"])
    metrics = calibrated["metrics"]
    assert metrics["threshold"] == pytest.approx(report["threshold"])
    assert metrics["span_f1"] == pytest.approx(report["span_f1"])


def test_predict_jsonl_and_conll_agree_with_evaluate(calibrated):
    gold = read_span_file(DEV)
    records = [json.loads(line) for line in open(calibrated["outputs"]["jsonl"])]
    predicted = [[(e["start"], e["end"], e["label"]) for e in r["entities"]] for r in records]
    for spans in predicted:  # flat decoding: never overlapping
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    from_conll = [list(s.spans) for s in read_span_file(calibrated["outputs"]["conll"])]
    assert from_conll == predicted
    metrics = calibrated["metrics"]
    expected = span_scores([s.spans for s in gold], predicted)["f1"]
    assert metrics["span_f1"] == pytest.approx(expected)
