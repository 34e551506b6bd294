"""CSV/TSV with named or numbered columns, JSONL by other keys, the header rule, the
validation split and the error of a file no format reads (issue 36)."""

import csv
import json

import pytest

from nlpzoo.tasks.bi_encoder.readers import read_pairs, score_of
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.columns import Columns
from nlpzoo.tasks.text.text_readers import infer_format, read_examples
from nlpzoo.tasks.text.validation_split import example_labels, split_for_validation


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_csv_quoted_fields_with_commas_quotes_and_line_breaks(tmp_path):
    path = tmp_path / "train.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["id", "sentence", "intent"],
                                 ["1", 'He said "hi", then left', "greet"],
                                 ["2", "two\nlines, here", "bye"]])
    examples = read_examples(str(path), columns=Columns.from_flags("sentence", None, "intent"))
    assert [(e.text, e.label, e.line) for e in examples] == [
        ('He said "hi", then left', "greet", 2), ("two\nlines, here", "bye", 3)]
    assert infer_format(str(path)) == "csv"


def test_header_guessed_without_extension_and_pairs_from_a_text_pair_column(tmp_path):
    path = _write(tmp_path / "pairs.txt", "label\ttext\ttext_pair\n1\ta b\tb a\n0\tc\td\n")
    assert infer_format(path) == "tsv"
    examples = read_examples(path)
    assert [(e.text, e.text_pair, e.label) for e in examples] == [("a b", "b a", "1"),
                                                                  ("c", "d", "0")]


def test_indices_and_the_header_rule(tmp_path):
    # By index: the first row is a header when its label is no other row's label.
    no_header = _write(tmp_path / "a.csv", "Hi,A\nBye,B\nYo,A\n")
    header = _write(tmp_path / "b.csv", "words,class\nHi,A\nBye,B\nYo,A\n")
    columns = Columns.from_flags("0", None, "1")
    assert [e.text for e in read_examples(no_header, columns=columns)] == ["Hi", "Bye", "Yo"]
    assert [(e.text, e.line) for e in read_examples(header, columns=columns)] == [
        ("Hi", 2), ("Bye", 3), ("Yo", 4)]


def test_errors_name_the_line_and_what_was_expected(tmp_path):
    short = _write(tmp_path / "short.csv", "id,text,label\n1,a,X\n2,b,Y\n3,c\n")
    with pytest.raises(DataFormatError, match=r"short.csv:4: 2 columns, expected at least 3 "
                                              r"\(text, label\)$"):
        read_examples(short)
    with pytest.raises(DataFormatError, match=r"short.csv:1: no column named 'sentence'; the "
                                              r"header has: id, text, label"):
        read_examples(short, columns=Columns(text="sentence"))
    empty_label = _write(tmp_path / "e.csv", "text,label\na,X\nb,\n")
    with pytest.raises(DataFormatError, match=r"e.csv:3: expected a label"):
        read_examples(empty_label)


def test_jsonl_reads_the_named_keys(tmp_path):
    path = _write(tmp_path / "d.jsonl", json.dumps({"sentence": "Hi", "intent": "greet"}) + "\n")
    [example] = read_examples(path, columns=Columns("sentence", "intent"))
    assert (example.text, example.label) == ("Hi", "greet")
    with pytest.raises(DataFormatError, match=r"d.jsonl:1: expected an object with 'text' "
                                              r"and 'label' \(found 'sentence', 'intent'\)"):
        read_examples(path)
    with pytest.raises(DataFormatError, match=r"must be a name, not the index 0"):
        read_examples(path, columns=Columns(text=0))


def test_bi_encoder_reads_csv_scores(tmp_path):
    path = _write(tmp_path / "sts.csv", "s1,s2,similarity\na b,a c,0.5\nx,y,-0.25\n")
    pairs = read_pairs(path, objective="cosine", columns=Columns("s1", "similarity", "s2"))
    assert [(e.text, e.text_pair, score_of(e)) for e in pairs] == [("a b", "a c", 0.5),
                                                                   ("x", "y", -0.25)]


def test_a_conll_file_given_to_classification(tmp_path):
    path = _write(tmp_path / "train.txt", "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n")
    with pytest.raises(DataFormatError) as error:
        read_examples(path)
    assert str(error.value) == (
        f"{path}: not a classification file: tried trec (\"LABEL:fine text\"), mrpc "
        "(tab-separated, header Quality...), csv/tsv (a header with the column names text, "
        "label), jsonl ({...} records with 'text' and 'label'); line 1 is 'EU NNP B-NP B-ORG' "
        "(it looks like CoNLL columns: --task=tagging reads those)")


def test_stratified_split_keeps_each_labels_share_and_is_seeded():
    labels = ["A"] * 60 + ["B"] * 30 + ["C"] * 10
    examples = list(range(100))
    train, held = split_for_validation(examples, 0.1, seed=0, labels=labels)
    assert len(held) == 10 and len(train) == 90
    assert sorted(labels[i] for i in held) == ["A"] * 6 + ["B"] * 3 + ["C"]
    assert split_for_validation(examples, 0.1, seed=0, labels=labels) == (train, held)
    assert split_for_validation(examples, 0.1, seed=1, labels=labels)[1] != held
    assert train == sorted(train) and set(train) | set(held) == set(examples)


def test_split_is_never_empty_on_either_side():
    assert split_for_validation(["a", "b"], 0.01, seed=3) in ((["a"], ["b"]), (["b"], ["a"]))
    assert len(split_for_validation(list(range(3)), 0.99, seed=0)[0]) == 1
    with pytest.raises(DataFormatError, match=r"t.csv: 1 example, too few to hold out"):
        split_for_validation(["a"], 0.1, source="t.csv")
    # A label of one example stays in training when another label can give one.
    _, held = split_for_validation(list(range(10)), 0.1, labels=["A"] * 9 + ["B"])
    assert held != [9]


def test_labels_for_stratifying_only_when_every_example_has_a_class():
    class Sentence:  # a tagging example: no `label`
        words = ["a"]
    assert example_labels([Sentence()], lambda _: ["O"]) is None


def test_prediction_input_csv_needs_no_label_column(tmp_path):
    from nlpzoo.tasks.classification.task import ClassificationTask
    path = _write(tmp_path / "p.csv", 'id,text\n1,"Who wrote Hamlet, and when ?"\n')
    [example] = ClassificationTask().read_prediction_input(path)
    assert (example.text, example.label, example.line) == ("Who wrote Hamlet, and when ?", "", 2)
    other = _write(tmp_path / "q.csv", "id,review\n1,Great\n")
    with pytest.raises(DataFormatError, match=r"q.csv:1: no column named 'text'; the header "
                                              r"has: id, review"):
        ClassificationTask().read_prediction_input(other)
