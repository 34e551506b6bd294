"""Reading texts to embed: plain text, JSON lines, and errors that name the file and line."""

import pytest

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.corpus import read_corpus
from nlpzoo.tasks.text.sentences import infer_format, read_sentences


def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return str(path)


def test_plain_text_is_one_text_per_line_blank_lines_skipped(tmp_path):
    path = _write(tmp_path, "in.txt", "  A café opens.\n\nWho wrote it ?\t\n{not json\n")
    sentences = read_sentences(path)
    assert [(s.text, s.source, s.line) for s in sentences] == [
        ("A café opens.", path, 1), ("Who wrote it ?", path, 3), ("{not json", path, 4)]


def test_jsonl_reads_the_text_field_of_each_object(tmp_path):
    path = _write(tmp_path, "in.data", '{"id": 1, "text": "First."}\n\n'
                                       '{"text": "Zweite — ü", "label": "x"}\n')
    assert infer_format(path) == "jsonl"
    assert [(s.text, s.line) for s in read_sentences(path)] == [("First.", 1),
                                                                 ("Zweite — ü", 3)]


def test_the_format_can_be_forced(tmp_path):
    path = _write(tmp_path, "in.jsonl", '{"text": "a"}\n')
    assert [s.text for s in read_sentences(path, "text")] == ['{"text": "a"}']


@pytest.mark.parametrize("name, content, message", [
    ("bad.jsonl", '{"text": "ok"}\n{"text": "broken"\n', "bad.jsonl:2: not valid JSON"),
    ("bad.jsonl", '{"text": "ok"}\n\n["a list"]\n',
     'bad.jsonl:3: expected a JSON object with a "text" field'),
    ("bad.jsonl", '{"sentence": "no text field"}\n',
     'bad.jsonl:1: expected a JSON object with a "text" field'),
    ("bad.jsonl", '{"text": 42}\n', 'bad.jsonl:1: "text" must be a string, got int'),
    ("empty.txt", "\n  \n", "empty.txt: no texts found"),
])
def test_errors_name_the_file_and_line(tmp_path, name, content, message):
    path = _write(tmp_path, name, content)
    with pytest.raises(DataFormatError) as error:
        read_sentences(path)
    assert str(error.value).startswith(str(tmp_path / message.split(":")[0]))
    assert message.split(":", 1)[1] in str(error.value)


def test_a_missing_file_is_a_data_format_error(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        read_sentences(str(tmp_path / "absent.txt"))
    with pytest.raises(DataFormatError, match="no such file"):
        read_sentences(str(tmp_path / "absent.jsonl"))


def test_wikitext_reads_each_line_as_pretraining_cleans_the_corpus(tmp_path):
    # The fill-mask evaluation of a model pretrained on cleaned WikiText reads the same
    # kind of text: headings dropped, escapes undone, <unk> removed (docs/results.md).
    content = (" = Lobster = \n\n It grows @-@ slowly , to 1 @,@ 000 mm <unk> .\n"
               " = = Life = = \n A &amp; B . = = = Name = = = The M @-@ 82\n\n = Crab = \n")
    path = _write(tmp_path, "wiki.train.tokens", content)
    sentences = read_sentences(path, "wikitext")
    assert [(s.text, s.line) for s in sentences] == [
        ("It grows-slowly , to 1,000 mm .", 3), ("A & B .", 5), ("The M-82", 5)]
    assert [s.text for s in sentences] == [
        line for document in read_corpus(path, "wikitext") for line in document]
    assert infer_format(path) == "text"  # never guessed: the caller asks for it


def test_wikitext_with_only_headings_is_an_error_naming_the_file(tmp_path):
    path = _write(tmp_path, "headings.txt", " = Title = \n = = Section = = \n")
    with pytest.raises(DataFormatError, match="headings.txt: no texts found"):
        read_sentences(path, "wikitext")
