"""train / evaluate / predict / export / compare for extractive question answering, end to
end on generated SQuAD v2.0 data (unanswerable questions included)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

from nlpzoo.tasks.question_answering.metrics import squad_scores
from nlpzoo.tasks.question_answering.readers import read_squad_json
from tests.helpers.binaries import json_line, run_tool, run_tools

TEAMS = ["Broncos", "Panthers", "Rams", "Bears"]
CITIES = ["Paris", "Berlin", "Denver", "Tokyo", "Café Zürich", "東京"]


def _squad_file(path, count, seed):
    """SQuAD v2.0 JSON: 'Where did the <team> win?' about '... the <team> won near <city>.';
    a question about a team the context does not name is unanswerable."""
    rng = np.random.default_rng(seed)
    paragraphs = []
    for index in range(count):
        team, other = rng.choice(TEAMS, 2, replace=False)
        city = str(rng.choice(CITIES))
        filler = " ".join(rng.choice(["The", "river", "season", "crowd", "cheered"],
                                     rng.integers(0, 12)))
        context = f"{filler} The {team} won near {city}. {filler}".strip()
        asked = team if rng.random() < 0.8 else other
        question = {"id": f"q{index}", "question": f"Where did the {asked} win?"}
        if asked == team:
            question["answers"] = [{"text": city, "answer_start": context.index(f"near {city}") + 5}]
        else:
            question.update(answers=[], is_impossible=True)
        paragraphs.append({"context": context, "qas": [question]})
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t",
                                                             "paragraphs": paragraphs}]}))
    return str(path)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("qa")
    train = _squad_file(base / "train.json", 240, seed=0)
    dev = _squad_file(base / "dev.json", 40, seed=1)
    model_dir = str(base / "model")
    trained = run_tool("train.py", "--task=question_answering", "--preset=bert_tiny",
                       f"--train_data={train}", f"--eval_data={dev}", f"--model_dir={model_dir}",
                       "--epochs=2", "--batch_size=16", "--max_seq_length=48", "--vocab_size=300",
                       "--doc_stride=8", "--n_best_size=64", "--learning_rate=2e-3")
    assert trained.returncode == 0, trained.stderr[-3000:]
    questions = base / "questions.tsv"
    questions.write_text("Where did the Rams win?\tThe Rams won near Café Zürich.\n"
                         "Where did the Bears win?\tThe Bears won near 東京, twice.\n")
    outputs = {"json": str(base / "dev_predictions.jsonl"), "tsv": str(base / "tsv.jsonl")}
    results = run_tools({
        "evaluate": ("evaluate.py", f"--model_dir={model_dir}", f"--data={dev}"),
        "predict json": ("predict.py", f"--model_dir={model_dir}", f"--input={dev}",
                         f"--output={outputs['json']}"),
        "predict tsv": ("predict.py", f"--model_dir={model_dir}", f"--input={questions}",
                        f"--output={outputs['tsv']}", "--n_best"),
        "export": ("export.py", f"--model_dir={model_dir}", f"--output={base / 'export'}"),
        "compare": ("compare.py", f"--data={dev}", f"--run=a={model_dir}",
                    f"--run=b={model_dir}/best_model.keras"),
        "calibrate": ("calibrate.py", f"--model_dir={model_dir}", f"--data={dev}", "--dry_run"),
    }, at_once=3)
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"
    return {"base": base, "dev": dev, "model_dir": model_dir, "trained": trained,
            "results": results, "outputs": outputs, "questions": str(questions)}


def _records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_training_tunes_the_no_answer_threshold_and_reports_squad_scores(run):
    config = json.load(open(os.path.join(run["model_dir"], "config.json")))
    assert config["task"] == "question_answering"
    assert config["task_options"]["allow_no_answer"] is True  # v2.0 data: unanswerable questions
    assert "decoding tuned on" in run["trained"].stdout
    assert "no_answer_threshold" in run["trained"].stdout
    metrics = json.load(open(os.path.join(run["model_dir"], "metrics.json")))
    assert {"exact_match", "f1", "HasAns_f1", "NoAns_f1", "total"} <= set(metrics)
    card = open(os.path.join(run["model_dir"], "README.md"), encoding="utf-8").read()
    assert "pipeline_tag: question-answering" in card


def test_calibrate_finds_the_threshold_training_tuned(run):
    report = json.loads(run["results"]["calibrate"].stdout.strip().splitlines()[-1])
    config = json.load(open(os.path.join(run["model_dir"], "config.json")))
    assert report["no_answer_threshold"] == pytest.approx(
        config["task_options"]["no_answer_threshold"])
    # The table's best F1 is the calibrated one, and it is what evaluate measured on dev.
    assert report["f1"] == pytest.approx(max(row[2] for row in report["table"]), abs=1e-5)
    assert report["f1"] == pytest.approx(json_line(run["results"]["evaluate"].stdout)["f1"])


def test_evaluate_prints_the_scores_of_the_predictions_predict_writes(run):
    metrics = json_line(run["results"]["evaluate"].stdout)
    records = _records(run["outputs"]["json"])
    gold = read_squad_json(run["dev"])
    assert [r["id"] for r in records] == [e.id for e in gold]
    scores = squad_scores([r["answer"] for r in records], gold)
    for name in ("exact_match", "f1", "HasAns_exact_match", "HasAns_f1", "NoAns_f1"):
        assert metrics[name] == pytest.approx(scores[name]), name
    assert metrics["total"] == 40 and metrics["windows"] >= 40
    for record, example in zip(records, gold):
        if record["answer"]:
            assert example.context[record["start_char"]:record["end_char"]] == record["answer"]
        else:
            assert (record["start_char"], record["end_char"]) == (-1, -1)


def test_the_exported_model_answers_raw_questions_as_predict_does(run):
    records = _records(run["outputs"]["tsv"])
    assert [r["question"] for r in records] == ["Where did the Rams win?",
                                                "Where did the Bears win?"]
    for record in records:  # --n_best: the candidates, best first, the answer among them
        scores = [candidate["score"] for candidate in record["n_best"]]
        assert scores == sorted(scores, reverse=True) and len(scores) > 1
        assert record["answer"] in ("", record["n_best"][0]["answer"])
    assert "n_best" not in _records(run["outputs"]["json"])[0]
    serve = tf.saved_model.load(str(run["base"] / "export")).signatures["serving_default"]
    lines = open(run["questions"], encoding="utf-8").read().splitlines()
    questions, contexts = zip(*(line.split("\t") for line in lines))
    outputs = serve(question=tf.constant(questions), context=tf.constant(contexts))
    assert [a.decode() for a in outputs["answer"].numpy()] == [r["answer"] for r in records]
    assert outputs["start_char"].numpy().tolist() == [r["start_char"] for r in records]
    assert outputs["end_char"].numpy().tolist() == [r["end_char"] for r in records]
    np.testing.assert_allclose(outputs["score"].numpy(), [r["score"] for r in records],
                               rtol=1e-4, atol=1e-6)


def test_compare_prints_points_of_percent_scores(run):
    lines = run["results"]["compare"].stdout.splitlines()
    assert lines[1].endswith("(+0.0 points)")
    summary = json.loads(lines[-1])
    assert summary["a_f1"] == pytest.approx(summary["b_f1"])


def test_n_best_is_refused_for_a_model_without_answers(trained_classifier_dir, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("What is a cat ?\n")
    result = run_tool("predict.py", f"--model_dir={trained_classifier_dir}", f"--input={texts}",
                      f"--output={tmp_path / 'out.jsonl'}", "--n_best")
    assert result.returncode == 1
    assert result.stderr.strip() == ("error: --n_best: a classification model has no "
                                     "write_n_best option")
    assert not (tmp_path / "out.jsonl").exists()
