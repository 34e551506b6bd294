"""Prediction input is read in the format it is, never guessed wrong: JSON lines as JSONL
(bad records named by line), plain text as text even when its lines have the same number of
words, CoNLL columns as columns; `--input_format` overrides."""

import pytest

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.registry import get_task


def _file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("data_format", [None, "trec", "mrpc", "jsonl"])
def test_a_classifier_reads_json_lines_as_jsonl_whatever_it_was_trained_on(tmp_path, data_format):
    path = _file(tmp_path, "questions.txt",
                 '{"text": "Who wrote Hamlet ?"}\n\n{"text": "What is NASA ?", "label": "x"}\n')
    examples = get_task("classification").read_prediction_input(path, "auto", data_format)
    assert [(e.text, e.line) for e in examples] == [("Who wrote Hamlet ?", 1),
                                                     ("What is NASA ?", 3)]


@pytest.mark.parametrize("line, message", [
    ('{"text": 42}', "questions.jsonl:2: 'text' and 'text_pair' must be strings"),
    ('{"txt": "a"}', "questions.jsonl:2: expected an object with 'text'"),
    ('{"text": "a"', "questions.jsonl:2: not valid JSON"),
])
def test_a_bad_json_line_is_an_error_naming_the_line(tmp_path, line, message):
    path = _file(tmp_path, "questions.jsonl", '{"text": "Who ?"}\n' + line + "\n")
    for task in ("classification", "bi_encoder"):
        with pytest.raises(DataFormatError, match=message.replace("(", "\\(")):
            get_task(task).read_prediction_input(path, "auto", "trec")
    # Asked for text, the lines are texts.
    texts = get_task("classification").read_prediction_input(path, "text", "trec")
    assert [e.text for e in texts] == ['{"text": "Who ?"}', line]


@pytest.mark.parametrize("task", ["tagging", "span_ner"])
def test_plain_text_with_equal_word_counts_is_text_not_columns(tmp_path, task):
    one = _file(tmp_path, "one_sentence.txt", "He flew to Paris , France , on Monday .\n")
    two = _file(tmp_path, "two.txt", "He flew to Paris .\nShe went to Rome .\n")
    for path, words in ((one, [10]), (two, [5, 5])):
        sentences = get_task(task).read_prediction_input(path)
        assert [len(s.words) for s in sentences] == words and sentences[0].text


@pytest.mark.parametrize("task", ["tagging", "span_ner"])
def test_conll_columns_are_read_as_columns_and_input_format_overrides(tmp_path, task):
    path = _file(tmp_path, "dev.txt", "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
                                      "German JJ B-NP B-MISC\n")
    sentences = get_task(task).read_prediction_input(path)
    assert [list(s.words) for s in sentences] == [["EU", "rejects"], ["German"]]
    as_text = get_task(task).read_prediction_input(path, "text")
    # As text, split as BERT splits raw text: hyphens are words of their own.
    assert [list(s.words) for s in as_text] == [["EU", "NNP", "B", "-", "NP", "B", "-", "ORG"],
                                                ["rejects", "VBZ", "B", "-", "VP", "O"],
                                                ["German", "JJ", "B", "-", "NP", "B", "-",
                                                 "MISC"]]
