"""Model cards: the Markdown built from a dict, the facts gathered from a model directory,
the test section tools/evaluate.py updates, and the card of a real training run."""

import doctest
import hashlib
import json
import os
import re
import shlex

import pytest

from nlpzoo.zoo.runs import model_card
from nlpzoo.zoo.runs.model_card import (
    card_markdown,
    command_line,
    file_facts,
    format_test_result,
    read_command,
    read_test_section,
    record_test_result,
    training_card,
    with_test_result,
    write_model_card,
)

yaml = pytest.importorskip("yaml")  # only to check the front matter; not a dependency

TAGGER_CARD = {
    "title": "CoNLL tagger",
    "task": "tagging", "task_options": {"head": "crf"}, "preset": "bert_tiny",
    "labels": ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"],
    "base": {"name": "all-MiniLM-L6-v2", "format": "huggingface"},
    "pipeline_tag": "token-classification",
    "data": [{"role": "training", "path": "/d/train.txt", "lines": 10, "sha256": "aa"},
             {"role": "validation", "path": "/d/dev | odd.txt", "lines": 4, "sha256": "bb"}],
    "hyperparameters": {"learning_rate": 2e-05, "epochs": 3, "lowercase": True},
    "best": {"monitor": "val_entity_f1", "value": 0.75, "epoch": 2,
             "date": "2025-01-02T03:04:05+00:00", "validation": {"val_entity_f1": 0.75}},
    "results": [{"title": "Final", "date": "2025-01-02T03:05:00+00:00",
                 "values": {"entity_f1": 0.75, "token_accuracy": 0.9, "sentences": 4,
                            "LOC_f1": 0.5, "PER_f1": 1.0}}],
    "command": "python tools/train.py --task=tagging '--train_data=/d/my train.txt'",
    "versions": {"keras": "3.15.1"},
    "limits": ["At most 128 WordPiece tokens."],
}


def test_doctests_of_the_module():
    # tools/ is outside the doctest paths of the suite; its examples run here.
    assert doctest.testmod(model_card).failed == 0


def _absolute_paths(text):
    """The words of `text` that are absolute paths (of this machine or any)."""
    words = re.split(r"[\s`'\"|=(),]+", text)
    return [word for word in words if len(word) > 1 and word.startswith(("/", "~"))
            and not word.startswith("//")]


def _front_matter(text):
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_front_matter_is_hugging_face_yaml():
    meta = _front_matter(card_markdown(TAGGER_CARD))
    assert meta["library_name"] == "keras"
    assert meta["tags"] == ["nlp-transfer-zoo", "tagging", "bert_tiny"]
    assert meta["datasets"] == ["train.txt", "dev | odd.txt"]  # names, not paths
    # Float metrics of the final results, per-type scores and counts left out.
    assert meta["metrics"] == ["entity_f1", "token_accuracy"]
    assert meta["base_model"] == "all-MiniLM-L6-v2"
    assert meta["pipeline_tag"] == "token-classification"
    assert "license" not in meta  # unknown: left out
    assert _front_matter(card_markdown(dict(TAGGER_CARD, license="mit")))["license"] == "mit"
    # Card data that still names the checkpoint by its path.
    old = dict(TAGGER_CARD, base={"path": "/ckpt/minilm/", "format": "huggingface"})
    assert _front_matter(card_markdown(old))["base_model"] == "minilm"


def test_body_holds_every_section():
    text = card_markdown(TAGGER_CARD)
    heading_order = [line for line in text.splitlines() if line.startswith("## ")]
    assert heading_order == ["## Model", "## Data", "## Hyperparameters",
                             "## Validation results", "## Test results", "## Reproduce",
                             "## Software", "## Limits"]
    assert "| Base checkpoint | `all-MiniLM-L6-v2` (huggingface) |" in text
    assert "| Task option `head` | crf |" in text
    assert "Labels (5, in label-id order): `O`, `B-LOC`, `I-LOC`, `B-PER`, `I-PER`" in text
    assert "| validation | `dev \\| odd.txt` | 4 | `bb` |" in text  # | escaped in a cell
    assert "| learning_rate | 2e-05 |" in text  # hyperparameters exactly as run
    assert "Best epoch: 2, chosen by `val_entity_f1` = 0.7500 (saved 2025-01-02T03:04:05+00:00)" \
        in text
    assert "Final, written 2025-01-02T03:05:00+00:00:" in text
    # Per-entity-type scores get their own table, out of the overall one.
    assert "| Entity type | f1 |\n|---|---|\n| LOC | 0.5000 |\n| PER | 1.0000 |" in text
    assert "| LOC_f1 |" not in text and "| sentences | 4 |" in text
    assert "/d/" not in text.split("## Reproduce")[0]  # data files by their names
    assert read_command(text) == TAGGER_CARD["command"]
    assert "_No test set evaluated yet" in read_test_section(text)


def test_random_initialisation_and_a_minimal_card():
    text = card_markdown({"title": "m", "labels": ["a", "b"]})
    assert "| Base checkpoint | random initialisation |" in text
    assert "The command was not recorded." in text
    assert "datasets" not in _front_matter(text) and "## Data" not in text


def test_command_line_round_trips_through_the_shell():
    argv = ["tools/train.py", "--train_data=it's here.txt", "--model_dir", "runs/$HOME", "--x"]
    line = command_line(argv)
    assert line.startswith("python tools/train.py ")
    assert shlex.split(line) == ["python"] + argv


@pytest.mark.parametrize("content, lines", [
    (b"", 0), (b"a\n", 1), (b"a\nb", 2), (b"a\r\nb\r\n", 2), (b"\n\n\n", 3),
    (("word O\n" * 300_000).encode(), 300_000),  # more than one 1 MiB block
])
def test_file_facts_count_lines_and_hash(tmp_path, content, lines):
    path = tmp_path / "data.txt"
    path.write_bytes(content)
    facts = file_facts(str(path), "test")
    assert facts == {"role": "test", "path": str(path), "lines": lines,
                     "sha256": hashlib.sha256(content).hexdigest()}


def test_missing_data_file_is_shown_as_missing(tmp_path):
    facts = file_facts(str(tmp_path / "gone.txt"), "training")
    assert facts["lines"] is None and facts["sha256"] is None
    text = card_markdown({"title": "m", "data": [facts]})
    assert "| training | `gone.txt` | missing | missing |" in text


def _outside_tests(text):
    begin, end = text.index("<!-- test-results: begin -->"), text.index("<!-- test-results: end -->")
    return text[:begin], text[end:]


def test_test_results_replace_their_own_entry_only():
    card = card_markdown(TAGGER_CARD)
    first = {"path": "/d/test.txt", "lines": 5, "sha256": "cc", "date": "2025-02-01",
             "command": "python tools/evaluate.py", "metrics": {"entity_f1": 0.6, "LOC_f1": 0.2}}
    other = dict(first, path="/d/other.txt", date="2025-02-15", metrics={"entity_f1": 0.1})
    labels = TAGGER_CARD["labels"]
    card = with_test_result(card, format_test_result(first, labels), first["path"])
    card = with_test_result(card, format_test_result(other, labels), other["path"])
    again = dict(first, date="2025-03-01", metrics={"entity_f1": 0.7})
    updated = with_test_result(card, format_test_result(again, labels), first["path"])
    section = read_test_section(updated)
    assert section.count("### `test.txt`") == 1 and section.count("### `other.txt`") == 1
    assert "2025-03-01" in section and "2025-02-01" not in section
    assert section.index("`test.txt`") < section.index("`other.txt`")  # kept in place
    assert "| entity_f1 | 0.7000 |" in section and "| entity_f1 | 0.1000 |" in section
    assert "_No test set evaluated yet" not in section
    # Every byte outside the test section is as it was.
    assert _outside_tests(updated) == _outside_tests(card_markdown(TAGGER_CARD))
    # Per-type scores of a test set get their table too.
    assert "| LOC | 0.2000 |" in read_test_section(card)


def test_a_card_without_test_markers_gets_the_section_appended():
    old = "# An old card written by hand\n\nSome notes.\n"
    test = {"path": "/d/t.txt", "lines": 1, "sha256": "d", "date": "x",
            "command": "python tools/evaluate.py", "metrics": {"accuracy": 1.0}}
    updated = with_test_result(old, format_test_result(test), "/d/t.txt")
    assert updated.startswith(old)
    assert "| accuracy | 1.0000 |" in read_test_section(updated)


def _fake_model_dir(tmp_path):
    """A model directory as tools/train.py leaves it, without the model itself."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.txt").write_text("EU B-ORG\nrejects O\n\nPeter B-PER\n")
    (data / "dev.txt").write_text("Paris B-LOC\n")
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    config = {"task": "tagging", "task_options": {"head": "crf"}, "preset": "bert_tiny",
              "train_data": str(data / "train.txt"), "eval_data": str(data / "dev.txt"),
              "labels": ["O", "B-ORG", "B-PER", "B-LOC"], "lowercase": False,
              "max_seq_length": 64, "init_checkpoint": None, "learning_rate": 5e-05,
              "trainable_parameters": 1000, "total_parameters": 1200}
    (model_dir / "config.json").write_text(json.dumps(config))
    (model_dir / "best_model.keras").write_bytes(b"model")
    (model_dir / "best_model.keras.json").write_text(json.dumps(
        {"monitor": "val_entity_f1", "value": 0.5, "epoch": 3,
         "date": "2025-01-01T00:00:00+00:00", "validation": {"val_entity_f1": 0.5}}))
    (model_dir / "metrics.json").write_text(json.dumps({"entity_f1": 0.5, "ORG_f1": 0.25}))
    return model_dir, data


def test_training_card_of_a_model_directory(tmp_path):
    model_dir, data = _fake_model_dir(tmp_path)
    card = training_card(str(model_dir), ["tools/train.py", "--model_dir", str(model_dir)])
    assert [(f["role"], f["lines"]) for f in card["data"]] == [("training", 4),
                                                              ("validation", 1)]
    assert card["data"][0]["sha256"] == hashlib.sha256(
        (data / "train.txt").read_bytes()).hexdigest()
    assert card["base"] is None and card["best"]["epoch"] == 3
    assert card["results"][0]["values"] == {"entity_f1": 0.5, "ORG_f1": 0.25}
    assert card["results"][0]["date"].endswith("+00:00")  # UTC
    assert set(card["versions"]) == {"nlp-transfer-zoo", "keras", "tensorflow", "python"}
    limits = " ".join(card["limits"])
    assert "at most 64 WordPiece tokens" in limits and "cased" in limits
    path = write_model_card(str(model_dir), card)
    assert path == str(model_dir / "README.md")
    assert sorted(os.listdir(model_dir)) == ["README.md", "best_model.keras",
                                            "best_model.keras.json", "config.json",
                                            "metrics.json"]
    text = (model_dir / "README.md").read_text()
    assert "| ORG | 0.2500 |" in text and "| Parameters (trainable / total) | 1,000 / 1,200 |" \
        in text


def test_record_test_result_keeps_the_rest_of_the_card(tmp_path):
    model_dir, data = _fake_model_dir(tmp_path)
    write_model_card(str(model_dir), training_card(str(model_dir), ["tools/train.py"]))
    before = (model_dir / "README.md").read_text()
    argv = ["tools/evaluate.py", "--model_dir", str(model_dir), "--data", str(data / "dev.txt")]
    record_test_result(str(model_dir), str(data / "dev.txt"), {"entity_f1": 0.4}, argv)
    after = (model_dir / "README.md").read_text()
    assert _outside_tests(after) == _outside_tests(before)
    section = read_test_section(after)
    assert "1 lines" in section and "| entity_f1 | 0.4000 |" in section
    assert "`python tools/evaluate.py --model_dir run --data dev.txt`" in section
    assert str(tmp_path) not in after


def test_record_test_result_without_a_card_writes_one(tmp_path):
    model_dir, data = _fake_model_dir(tmp_path)
    record_test_result(str(model_dir), str(data / "dev.txt"), {"entity_f1": 0.4},
                       ["tools/evaluate.py"])
    text = (model_dir / "README.md").read_text()
    assert "The command was not recorded." in text and "| entity_f1 | 0.4000 |" in text


def test_card_of_a_real_training_run(trained_classifier_dir, trained_models):
    """tools/train.py wrote the card of the session's TREC classifier."""
    text = open(os.path.join(trained_classifier_dir, "README.md"), encoding="utf-8").read()
    config = json.load(open(os.path.join(trained_classifier_dir, "config.json")))
    meta = _front_matter(text)
    assert meta["datasets"] == [os.path.basename(config["train_data"]),
                                os.path.basename(config["eval_data"])]
    assert meta["pipeline_tag"] == "text-classification" and meta["library_name"] == "keras"
    assert "base_model" not in meta and "license" not in meta  # from scratch, no --license
    assert text.splitlines()[len(text.split("---\n")[1].splitlines()) + 3] == (
        "# classification model trained from scratch (bert_tiny_classifier)")
    assert _absolute_paths(text) == []
    assert "accuracy" in meta["metrics"]
    train = open(config["train_data"], "rb").read()
    lines, digest = train.count(b"\n"), hashlib.sha256(train).hexdigest()
    assert f"| {lines} | `{digest}` |" in text
    assert "Labels (6, in label-id order): `ABBR`, `DESC`" in text
    command = shlex.split(read_command(text))
    assert command[:2] == ["python", "tools/train.py"]
    assert command[command.index("--model_dir") + 1] == os.path.basename(trained_classifier_dir)
    best = json.load(open(os.path.join(trained_classifier_dir, "best_model.keras.json")))
    assert f"Best epoch: {best['epoch']}, chosen by `val_accuracy`" in text
    assert "| val_accuracy |" in text


def test_card_names_the_checkpoint_and_no_absolute_path(tmp_path):
    model_dir, data = _fake_model_dir(tmp_path)
    checkpoint = tmp_path / "checkpoints" / "all-MiniLM-L6-v2"
    checkpoint.mkdir(parents=True)
    config = json.loads((model_dir / "config.json").read_text())
    config.update(init_checkpoint=str(checkpoint), model_dir=str(model_dir))
    (model_dir / "config.json").write_text(json.dumps(config))
    argv = [str(tmp_path / "tools" / "train.py"), f"--init_checkpoint={checkpoint}",
            "--model_dir", str(model_dir), f"--train_data={data / 'train.txt'}"]
    text = card_markdown(training_card(str(model_dir), argv, license="apache-2.0"))
    meta = _front_matter(text)
    assert meta["base_model"] == "all-MiniLM-L6-v2" and meta["license"] == "apache-2.0"
    assert meta["pipeline_tag"] == "token-classification"
    assert meta["datasets"] == ["train.txt", "dev.txt"]
    assert "\n# tagging model fine-tuned from all-MiniLM-L6-v2\n" in text
    assert read_command(text) == ("python tools/train.py --init_checkpoint=all-MiniLM-L6-v2 "
                                  "--model_dir run --train_data=train.txt")
    assert "| init_checkpoint | all-MiniLM-L6-v2 |" in text and "| model_dir | run |" in text
    assert str(tmp_path) not in text and _absolute_paths(text) == []
    # A Hub id given with --base_model_id (here: the keyword) names it instead.
    named = training_card(str(model_dir), argv,
                          base_model_id="sentence-transformers/all-MiniLM-L6-v2")
    assert _front_matter(card_markdown(named))["base_model"] == (
        "sentence-transformers/all-MiniLM-L6-v2")
