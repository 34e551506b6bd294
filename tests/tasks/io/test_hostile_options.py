"""The fourth hostile set, one test per case (JSON readers: test_json_text.py; prompt
mistakes through the binaries: tests/tools/test_prompt_classification_binaries.py):
ambiguous CSV columns, a long CSV field, class weights that cannot train, regression
targets without spread, `~` in path flags, prediction input in a single-byte encoding."""

import json
import logging
import math
import os

import pytest
from absl import flags

from nlpzoo.tasks.classification.regression import check_distinct_targets, evaluation_metrics
from nlpzoo.tasks.classification.task import ClassificationTask
from nlpzoo.tasks.io.errors import DataFormatError, UserError
from nlpzoo.tasks.text.columns import Columns
from nlpzoo.tasks.text.line_reader import MAX_LINE_BYTES
from nlpzoo.tasks.text.prediction_io import read_text_lines
from nlpzoo.tasks.text.text_readers import ClassificationExample, read_examples
from nlpzoo.tools.cli.errors import check_paths


def _write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return str(path)


# === CSV/TSV columns and fields ===

@pytest.mark.parametrize("data_format, separator", [("csv", ","), ("tsv", "\t")])
def test_two_columns_of_the_read_name_are_refused_naming_both(tmp_path, data_format, separator):
    rows = [["text", "label", "text"], ["good film", "pos", "bad film"]]
    path = _write(tmp_path, f"d.{data_format}", "".join(separator.join(row) + "\n"
                                                         for row in rows))
    with pytest.raises(DataFormatError) as raised:
        read_examples(path, data_format)
    assert str(raised.value) == (
        f"{path}:1: the header names 2 columns 'text' (columns 0 and 2, 0-based): which to "
        "read is ambiguous; rename one, or give --text_column as a 0-based index")


def test_a_duplicate_column_that_is_not_read_is_harmless(tmp_path):
    path = _write(tmp_path, "d.csv", "id,text,label,id\n1,good film,pos,1\n")
    [example] = read_examples(path, "csv")
    assert (example.text, example.label) == ("good film", "pos")


def test_a_column_given_by_index_reads_a_file_with_repeated_names(tmp_path):
    path = _write(tmp_path, "d.csv", "text,label,text\ngood film,pos,bad film\n"
                                     "so so,neg,fine\nok,pos,no\n")
    examples = read_examples(path, "csv", Columns(text=2, label=1))
    assert [(e.text, e.label) for e in examples] == [("bad film", "pos"), ("fine", "neg"),
                                                     ("no", "pos")]


def test_a_200000_character_csv_field_is_read(tmp_path):
    """The csv module's own limit (131,072) is not the data's: a field is limited as a
    line is (`MAX_LINE_BYTES`)."""
    text = "word " * 40_000
    path = _write(tmp_path, "long.csv", f'text,label\n"{text}",pos\nshort,neg\n')
    examples = read_examples(path, "csv")
    assert [len(e.text) for e in examples] == [200_000, 5]


def test_a_quoted_field_over_the_limit_gets_the_line_limit_message(tmp_path):
    line = "x" * 600_000
    path = _write(tmp_path, "long.csv", f'text,label\nok,pos\n"{line}\n{line}",neg\n')
    with pytest.raises(DataFormatError) as raised:
        read_examples(path, "csv")
    assert str(raised.value) == (
        f"{path}:3: a field longer than {MAX_LINE_BYTES:,} bytes (the most a line of data may "
        "hold: one sentence, text or paragraph per line); split it")


# === Class weights ===

@pytest.mark.parametrize("value, message", [
    ("nan,1", "--class_weights=nan,1: expected finite numbers >= 0, one per label; found nan"),
    ("1,inf", "--class_weights=1,inf: expected finite numbers >= 0, one per label; found inf"),
    ("-1,2", "--class_weights=-1,2: expected finite numbers >= 0, one per label; found -1.0"),
    ("0,0,0", "--class_weights=0,0,0: every weight is 0, so no example would count in the "
              "loss; give at least one weight > 0"),
])
def test_class_weights_that_cannot_train_are_refused_naming_the_flag(value, message):
    values = flags.FlagValues()
    ClassificationTask.define_flags(values)
    values(["prog", f"--class_weights={value}"])
    with pytest.raises(ValueError) as raised:
        ClassificationTask.options_from_flags(values)
    assert str(raised.value) == message


@pytest.mark.parametrize("weights", [[math.nan, 1.0], [0.0, 0.0], [-0.5, 1.0]])
def test_the_python_door_refuses_the_same_class_weights(weights):
    with pytest.raises(ValueError, match=r"^class_weights: "):
        ClassificationTask(class_weights=weights)


def test_class_weights_one_per_label():
    examples = [ClassificationExample("a", "x", source="d.tsv", line=1),
                ClassificationExample("b", "y", source="d.tsv", line=2)]
    with pytest.raises(ValueError, match=r"class_weights has 3 weights for the 2 labels \(x, y\)"):
        ClassificationTask(class_weights=[1.0, 2.0, 3.0]).adapt(examples)
    assert ClassificationTask(class_weights=[1.0, 0.0]).adapt(examples).options.class_weights \
        == [1.0, 0.0]


# === Regression targets ===

def test_training_targets_that_are_all_the_same_are_refused(tmp_path):
    path = _write(tmp_path, "sts.tsv", "text\tlabel\na b\t3\nc d\t3.0\ne f\t3\n")
    task = ClassificationTask(objective="regression")
    examples = task.read(path, "tsv")
    with pytest.raises(DataFormatError) as raised:
        task.adapt(examples)
    assert str(raised.value) == (f"{path}: every regression label is 3.0 (3 examples); "
                                 "training needs at least two distinct targets")
    examples[1] = ClassificationExample("c d", "3.5", source=path, line=3)
    check_distinct_targets(examples)  # two values: trains


def test_evaluation_with_constant_targets_reports_null_correlations_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        metrics = evaluation_metrics([0.1, 0.9, 0.4], [2.0, 2.0, 2.0])
    assert metrics["pearson"] is None and metrics["spearman"] is None
    assert metrics["mse"] == pytest.approx((1.9 ** 2 + 1.1 ** 2 + 1.6 ** 2) / 3)
    assert [record.getMessage() for record in caplog.records] == [
        "pearson and spearman are undefined (the targets are all the same, or there are fewer "
        "than 2): reported as null"]


# === Paths ===

def _path_flags(*argv):
    values = flags.FlagValues()
    flags.DEFINE_string("model_dir", None, "", flag_values=values)
    flags.DEFINE_string("train_data", None, "", flag_values=values)
    flags.DEFINE_multi_string("run", [], "", flag_values=values)
    values(["prog", *argv])
    return values


def test_a_leading_tilde_in_a_path_flag_is_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    values = _path_flags("--model_dir=~/runs/x", "--train_data=~/a.tsv,b.tsv",
                         "--run=base=~/runs/y")
    check_paths(values)
    assert values.model_dir == os.path.join(str(tmp_path), "runs", "x")
    assert values.train_data == os.path.join(str(tmp_path), "a.tsv") + ",b.tsv"
    assert values.run == ["base=" + os.path.join(str(tmp_path), "runs", "y")]


def test_a_tilde_of_no_user_is_refused_never_made_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    values = _path_flags("--model_dir=~nobody_by_this_name/x")
    with pytest.raises(UserError, match=r"^--model_dir=~nobody_by_this_name/x: "
                                        r"'~nobody_by_this_name' is no user's home folder"):
        check_paths(values)
    assert os.listdir(tmp_path) == []


def test_a_tilde_inside_a_path_is_kept():
    values = _path_flags("--model_dir=runs/~x")
    check_paths(values)
    assert values.model_dir == "runs/~x"


# === Text encodings ===

def test_latin1_prediction_input_keeps_its_letters_and_says_so(tmp_path, caplog):
    text = "Le président Müller a visité Zürich"
    path = _write(tmp_path, "latin1.txt", f"{text}\nplain ascii\n", encoding="latin-1")
    with caplog.at_level(logging.WARNING):
        assert read_text_lines(path) == [(1, text), (2, "plain ascii")]
    [warning] = [record.getMessage() for record in caplog.records]
    assert warning.startswith(f"{path}:1: not valid UTF-8") and "decoded as Latin-1" in warning


# === JSONL labels ===

@pytest.mark.parametrize("label, found", [
    (None, "null"), ({"x": 1}, "an object"),
    (["x"], "a list (several labels per text: --multi_label)")])
def test_a_jsonl_label_that_is_not_a_string_or_number_is_refused(tmp_path, label, found):
    lines = [{"text": "good film", "label": "pos"}, {"text": "bad film", "label": label}]
    path = _write(tmp_path, "d.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(DataFormatError) as raised:
        read_examples(path)
    assert str(raised.value) == f'{path}:2: "label" must be a string or a number, found {found}'


def test_jsonl_labels_that_are_numbers_are_read_as_written(tmp_path):
    lines = [{"text": "a", "label": 3}, {"text": "b", "label": 0.5}, {"text": "c", "label": "x"}]
    path = _write(tmp_path, "d.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    assert [example.label for example in read_examples(path)] == ["3", "0.5", "x"]
