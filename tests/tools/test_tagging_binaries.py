"""train / evaluate / predict for tagging, end to end on the bundled CoNLL sample.

The tagger is the session's shared one (tests/conftest.py), trained once by
tools/train.py; these tests only read its model directory.
"""

import json
import os

import pytest

from seqeval.metrics import f1_score

from nlpzoo.tasks.tagging import read_column_file, tags_to_spans
from tests.helpers.binaries import json_line, run_tool, run_tools
from tests.helpers.paths import CONLL

SAMPLES = CONLL


def test_train_writes_entity_metrics(trained_tagger_dir):
    config = json.load(open(os.path.join(trained_tagger_dir, "config.json")))
    assert config["preset"] == "bert_tiny_crf_tagger" and config["tag_scheme"] == "IOB2"
    assert config["labels"][0] == "O"
    metrics = json.load(open(os.path.join(trained_tagger_dir, "metrics.json")))
    for name in ("entity_precision", "entity_recall", "entity_f1", "token_accuracy"):
        assert 0.0 <= metrics[name] <= 1.0
    best = json.load(open(os.path.join(trained_tagger_dir, "best_model.keras.json")))
    assert best["monitor"] == "val_entity_f1"


def test_predict_conll_and_jsonl_agree_with_evaluate(trained_tagger_dir, tmp_path):
    dev = os.path.join(SAMPLES, "dev.txt")
    conll_out, jsonl_out = str(tmp_path / "dev.conll"), str(tmp_path / "dev.jsonl")
    results = run_tools({
        "predict conll": ("predict.py", "--model_dir", trained_tagger_dir, "--input", dev,
                          "--output", conll_out),
        "predict jsonl": ("predict.py", "--model_dir", trained_tagger_dir, "--input", dev,
                          "--output", jsonl_out),
        "evaluate": ("evaluate.py", "--model_dir", trained_tagger_dir, "--data", dev),
    })
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.stderr[-2000:]}"
    gold = read_column_file(dev)
    predicted = read_column_file(conll_out)
    assert [s.words for s in predicted] == [s.words for s in gold]
    records = [json.loads(line) for line in open(jsonl_out)]
    assert [r["tags"] for r in records] == [list(s.tags) for s in predicted]
    for record in records:
        assert [(e["start"], e["end"], e["label"]) for e in record["entities"]] == \
            [tuple(span) for span in tags_to_spans(record["tags"])]
    metrics = json_line(results["evaluate"].stdout)
    expected = f1_score([list(s.tags) for s in gold], [list(s.tags) for s in predicted])
    assert abs(metrics["entity_f1"] - expected) < 1e-12


# slow: test_export's fixture predicts plain text with the shared tagger too
@pytest.mark.slow
def test_predict_plain_text(trained_tagger_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("EU rejects German call to boycott British lamb .\n\nPeter Blackburn\n")
    out = tmp_path / "out.jsonl"
    result = run_tool("predict.py", "--model_dir", trained_tagger_dir, "--input", str(text),
                      "--output", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in open(out)]
    assert [r["words"] for r in records] == [
        "EU rejects German call to boycott British lamb .".split(), ["Peter", "Blackburn"]]


def test_bad_tagging_input_names_file_and_line(tmp_path, trained_tagger_dir):
    short_line, unknown_tag, empty = (tmp_path / name for name in ("short.txt", "tag.txt",
                                                                    "empty.txt"))
    short_line.write_text("EU NNP B-NP B-ORG\nrejects VBZ B-VP\n")
    unknown_tag.write_text("EU NNP B-NP X-ORG\n")
    empty.write_text("")
    results = run_tools({
        "train, short line": ("train.py", "--task=tagging", "--train_data", str(short_line),
                              "--eval_data", str(short_line), "--model_dir", str(tmp_path / "m")),
        "evaluate, unknown tag": ("evaluate.py", "--model_dir", trained_tagger_dir,
                                  "--data", str(unknown_tag)),
        "evaluate, empty file": ("evaluate.py", "--model_dir", trained_tagger_dir,
                                 "--data", str(empty)),
    })
    result = results["train, short line"]
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{short_line}:2: expected 4 columns" in result.stderr
    result = results["evaluate, unknown tag"]
    assert result.returncode == 1 and f"{unknown_tag}:1:" in result.stderr
    assert "X-ORG" in result.stderr
    result = results["evaluate, empty file"]
    assert result.returncode == 1 and str(empty) in result.stderr


@pytest.mark.slow  # trains, predicts and exports a tagger of its own: about a minute
def test_subword_aggregation_trains_predicts_and_exports(tmp_path):
    import tensorflow as tf

    from tests.helpers.trained_models import TRAINING_FLAGS

    model_dir, exported = str(tmp_path / "mean"), str(tmp_path / "exported")
    result = run_tool("train.py", *TRAINING_FLAGS["tagging"], "--subword_aggregation=mean",
                      "--model_dir", model_dir)
    assert result.returncode == 0, result.stderr[-2000:]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["task_options"]["subword_aggregation"] == "mean"

    # Raw text, long enough for windows (max_seq_length 32): predict and the export agree.
    lines = ["EU rejects German call to boycott British lamb .", "Peter Blackburn",
             " ".join(["The European Commission said on Thursday it disagreed ."] * 4)]
    text, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    text.write_text("\n\n".join(lines) + "\n")
    results = run_tools({
        "predict": ("predict.py", "--model_dir", model_dir, "--input", str(text),
                    "--output", str(out)),
        "export": ("export.py", "--model_dir", model_dir, "--output", exported),
    })
    for name, finished in results.items():
        assert finished.returncode == 0, f"{name}: {finished.stderr[-2000:]}"
    records = [json.loads(line) for line in open(out)]
    assert [r["words"] for r in records] == [line.split() for line in lines]
    serve = tf.saved_model.load(exported).signatures["serving_default"]
    served = serve(tf.constant(lines))
    for row, record in enumerate(records):
        count = int(served["num_words"][row])
        assert [t.decode() for t in served["tags"][row][:count].numpy()] == record["tags"]
