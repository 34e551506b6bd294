"""The bi-encoder through the binaries: train (the session's shared model), predict,
evaluate, export, and the served SavedModel in a fresh process; a data error.

Plain-text prediction input, the cosine objective and option errors are checked in
process (tests/test_bi_encoder_task.py): each binary run here costs a TensorFlow start.
Marked slow: the module's training, four binaries and a served SavedModel take about
100 s on the 2-core machine with other jobs running (`pytest -m slow` runs it).
"""

import json
import os

import numpy as np
import pytest

from tests.helpers.binaries import finish_processes, json_line, start_python, start_tool
from tests.helpers.paths import MRPC
from nlpzoo.zoo.runs import directory as md

pytestmark = pytest.mark.slow

# A fresh process with TensorFlow and tensorflow-text only.
_SERVE_SNIPPET = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the graph uses)

pairs = json.load(open(sys.argv[2]))
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = serve(text=tf.constant([a for a, _ in pairs]), text_pair=tf.constant([b for _, b in pairs]))
json.dump({name: (tf.nest.map_structure(bytes.decode, value.numpy().tolist())
                  if value.dtype == tf.string else value.numpy().tolist())
           for name, value in out.items()}, open(sys.argv[3], "w"))
"""


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, trained_bi_encoder_dir):
    base = tmp_path_factory.mktemp("bi_encoder")
    model_dir = trained_bi_encoder_dir  # shared: read only
    dev = os.path.join(MRPC, "dev.tsv")
    with open(dev, encoding="utf-8") as f:
        gold = [line.split("\t") for line in f.read().splitlines()[1:]]
    no_pair = str(base / "no_pair.jsonl")
    with open(no_pair, "w") as f:
        f.write('{"text": "a", "text_pair": "b", "label": "1"}\n{"text": "c", "label": "0"}\n')
    exported, predictions = str(base / "exported"), str(base / "dev.jsonl")
    results = finish_processes({
        "predict": start_tool("predict.py", "--model", md.path(model_dir, md.BEST_MODEL),
                              "--input", dev, "--output", predictions),
        "evaluate": start_tool("evaluate.py", "--model_dir", model_dir, "--data", dev),
        "export": start_tool("export.py", "--model_dir", model_dir, "--output", exported),
        "no text_pair": start_tool("train.py", "--task=bi_encoder", "--train_data", no_pair,
                                   "--eval_data", dev, "--model_dir", str(base / "never")),
    })
    for name in ("predict", "evaluate", "export"):
        assert results[name].returncode == 0, f"{name}: {results[name].stderr[-3000:]}"
    request, report = str(base / "request.json"), str(base / "served.json")
    with open(request, "w") as f:
        json.dump([(g[3], g[4]) for g in gold], f)
    served = finish_processes({"serve": start_python("-c", _SERVE_SNIPPET, exported, request,
                                                     report)})["serve"]
    assert served.returncode == 0, served.stderr[-3000:]
    with open(report) as f:
        served = json.load(f)
    return {"model_dir": model_dir, "results": results, "served": served, "gold": gold,
            "predictions": _jsonl(predictions)}


def test_training_keeps_the_task_its_options_and_the_monitor(runs):
    config = md.read_json(md.path(runs["model_dir"], md.CONFIG))
    assert config["task"] == "bi_encoder"
    assert config["task_options"] == {"objective": "softmax", "pooling": "mean",
                                      "ranking_scale": 20.0, "symmetric_ranking": False,
                                      "hard_negatives": False}
    assert config["labels"] == ["0", "1"] and config["monitor"] == "val_f1"
    metrics = md.read_json(md.path(runs["model_dir"], md.METRICS))
    assert {"accuracy", "f1", "loss"} <= set(metrics) and metrics["examples"] == 32


def test_evaluate_agrees_with_the_predicted_labels(runs):
    metrics = json_line(runs["results"]["evaluate"].stdout)
    stored = md.read_json(md.path(runs["model_dir"], md.METRICS))
    assert metrics["accuracy"] == pytest.approx(stored["accuracy"], abs=1e-6)
    records, gold = runs["predictions"], runs["gold"]
    assert [(r["text"], r["text_pair"]) for r in records] == [(g[3], g[4]) for g in gold]
    predicted = np.array([r["label"] for r in records])
    truth = np.array([g[0] for g in gold])
    assert metrics["accuracy"] == pytest.approx(np.mean(predicted == truth), abs=1e-6)
    tp = np.sum((predicted == "1") & (truth == "1"))
    f1 = 2 * tp / (2 * tp + np.sum(predicted != truth))
    assert metrics["f1"] == pytest.approx(f1, abs=1e-6)


def test_predictions_hold_label_probability_and_cosine(runs):
    for record in runs["predictions"]:
        assert sorted(record) == ["cosine", "label", "probabilities", "probability", "text",
                                  "text_pair"]
        assert record["probability"] == max(record["probabilities"].values())
        assert record["probabilities"][record["label"]] == record["probability"]
        assert -1.0 <= record["cosine"] <= 1.0


def test_exported_model_matches_predict_and_serves_both_embeddings(runs):
    served, predicted = runs["served"], runs["predictions"]
    assert sorted(served) == ["cosine", "embedding", "label", "label_id", "pair_embedding",
                              "probabilities"]
    assert served["label"] == [record["label"] for record in predicted]
    np.testing.assert_allclose(served["probabilities"],
                               [[r["probabilities"][label] for label in ("0", "1")]
                                for r in predicted], atol=1e-5)
    np.testing.assert_allclose(served["cosine"], [r["cosine"] for r in predicted], atol=1e-5)
    u, v = np.array(served["embedding"]), np.array(served["pair_embedding"])
    assert u.shape == v.shape == (len(predicted), 128)  # bert_tiny's width
    np.testing.assert_allclose(
        served["cosine"],
        (u * v).sum(1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)), atol=1e-5)


def test_bad_input_is_a_one_line_error(runs):
    results = runs["results"]
    assert results["no text_pair"].returncode == 1
    assert "Traceback" not in results["no text_pair"].stderr
    assert results["no text_pair"].stderr.strip().splitlines()[-1].endswith(
        "no_pair.jsonl:2: a bi-encoder reads text pairs: this example has no 'text_pair'")
