"""Every JSON reader of the library, against a document nested 100,000 levels deep and
against parts of the wrong type: one `DataFormatError` naming the file (the line of a
JSON-lines file, the field), never a `RecursionError` or `AttributeError`."""

import ast
import json
import os

import pytest

from nlpzoo.tasks.io.errors import DataFormatError, RunDirectoryError
from nlpzoo.tasks.io.json_text import InvalidJson, expect_type, parse_json, read_json_file
from nlpzoo.tasks.question_answering.readers import read_qa_jsonl, read_squad_json
from nlpzoo.tasks.retrieval.corpus import read_corpus
from nlpzoo.tasks.span_ner.readers import read_span_jsonl
from nlpzoo.tasks.text.sentences import read_sentences
from nlpzoo.tasks.text.text_readers import read_jsonl
from nlpzoo.zoo.checkpoints import load_hf_tokenizer
from nlpzoo.zoo.checkpoints.common import read_json
from nlpzoo.zoo.runs import directory
from tests.helpers.paths import ROOT

DEEP = "[" * 100_000 + "]" * 100_000


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# (reader, file name, a good first line)
JSON_LINES_READERS = {
    "classification JSONL": (read_jsonl, "train.jsonl", {"text": "a b", "label": "x"}),
    "span JSONL": (read_span_jsonl, "spans.jsonl", {"tokens": ["EU"], "spans": []}),
    "sentences JSONL": (lambda path: read_sentences(path, "jsonl"), "texts.jsonl",
                        {"text": "a b"}),
    "retrieval corpus": (read_corpus, "corpus.jsonl", {"id": 1, "text": "A cat."}),
    "QA JSONL": (read_qa_jsonl, "questions.jsonl",
                 {"question": "Who?", "context": "Ann met Bo.",
                  "answers": [{"text": "Bo", "answer_start": 8}]}),
}


@pytest.mark.parametrize("reader", sorted(JSON_LINES_READERS))
def test_a_deeply_nested_json_line_names_the_file_and_line(reader, tmp_path):
    read, name, good = JSON_LINES_READERS[reader]
    path = _write(tmp_path, name, json.dumps(good) + "\n" + DEEP + "\n")
    with pytest.raises(DataFormatError) as raised:
        read(path)
    assert str(raised.value).startswith(f"{path}:2: not valid JSON: nested too deeply")


@pytest.mark.parametrize("reader", sorted(JSON_LINES_READERS))
def test_a_json_line_of_the_wrong_type_names_the_file_and_line(reader, tmp_path):
    read, name, good = JSON_LINES_READERS[reader]
    path = _write(tmp_path, name, json.dumps(good) + '\n["a", "list"]\n')
    with pytest.raises(DataFormatError, match=rf"^{path}:2: expected .*object"):
        read(path)


WHOLE_DOCUMENT_READERS = {
    "SQuAD JSON": (read_squad_json, "dev.json", '{"data": "not a list"}', "expected SQuAD JSON"),
    "checkpoint config.json": (lambda path: read_json(path, "config.json"), "config.json",
                               '["a list"]', "expected config.json to hold a JSON object"),
    "any JSON file": (lambda path: read_json_file(path, dict), "labels.json", "3",
                      "expected the file to hold a JSON object ({...}), found a number"),
}


DEEP_MESSAGE = ("not valid JSON: nested too deeply ([ or { inside each other more times than "
                "a JSON reader here follows)")


@pytest.mark.parametrize("reader", sorted(WHOLE_DOCUMENT_READERS))
@pytest.mark.parametrize("document", ["nested 100,000 deep", "of the wrong type"])
def test_a_json_document_nested_too_deeply_or_of_the_wrong_type_names_the_file(
        reader, document, tmp_path):
    read, name, wrong_type, message = WHOLE_DOCUMENT_READERS[reader]
    deep = document == "nested 100,000 deep"
    path = _write(tmp_path, name, DEEP if deep else wrong_type)
    with pytest.raises(DataFormatError) as raised:
        read(path)
    if deep:
        assert str(raised.value) == f"{path}: {DEEP_MESSAGE}"
    else:
        assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value)


def test_a_run_directory_file_nested_too_deeply_is_a_run_directory_error(tmp_path):
    path = _write(tmp_path, "labels.json", DEEP)
    with pytest.raises(RunDirectoryError) as raised:
        directory.read_json(path, list)
    assert raised.value.path == path and "nested too deeply" in raised.value.problem


# tokenizer.json of each family: what is wrong, and the field the message must name.
TOKENIZER_JSON_CASES = {
    "deep": (DEEP, "not valid JSON: nested too deeply"),
    "model a string": ({"model": "WordPiece"}, 'expected "model" to be a JSON object'),
    "no model": ({"normalizer": None}, 'expected "model" to be a JSON object ({...}), found null'),
    "model type a list": ({"model": {"type": ["BPE"]}}, 'expected "model.type" to be a string'),
    "vocab a string": ({"model": {"type": "WordPiece", "vocab": "[UNK]"}},
                       'expected "model.vocab" to be a JSON object ({...}) or a JSON list'),
    "normalizer a list": ({"model": {"type": "BPE", "vocab": {}, "merges": []},
                           "normalizer": ["Lowercase"]}, 'expected "normalizer" to be a JSON'),
    "a step a string": ({"model": {"type": "Unigram", "vocab": []},
                         "pre_tokenizer": {"type": "Sequence", "pretokenizers": ["x"]}},
                        'expected "pre_tokenizer.pretokenizers[0]" to be a JSON object'),
    "added tokens an object": ({"model": {"type": "BPE"}, "added_tokens": {"a": 1}},
                               'expected "added_tokens" to be a JSON list'),
    "an added token a string": ({"model": {"type": "BPE"}, "added_tokens": ["<s>"]},
                                'expected "added_tokens[0]" to be a JSON object'),
}


@pytest.mark.parametrize("case", sorted(TOKENIZER_JSON_CASES))
def test_a_malformed_tokenizer_json_is_one_line_naming_the_field(case, tmp_path):
    content, message = TOKENIZER_JSON_CASES[case]
    path = _write(tmp_path, "tokenizer.json",
                  content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(DataFormatError) as raised:
        load_hf_tokenizer(str(tmp_path))
    assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_parse_json_names_the_line_of_a_document_and_of_a_json_line():
    with pytest.raises(InvalidJson, match=r"^doc.json:3: not valid JSON: Expecting value"):
        parse_json('{\n"a": 1,\n"b": }', "doc.json")
    with pytest.raises(InvalidJson, match=r"^data.jsonl:7: not valid JSON: Expecting value"):
        parse_json('{"b": }', "data.jsonl", 7)
    with pytest.raises(InvalidJson, match=r"^raw.json: not valid JSON: not UTF-8 text \(byte 1"):
        parse_json(b'"\xff"', "raw.json")
    assert parse_json(b'\xef\xbb\xbf{"a": [1]}', "bom.json") == {"a": [1]}


def test_expect_type_does_not_take_true_for_a_number():
    assert expect_type(3, int, "c.json", "n") == 3
    with pytest.raises(InvalidJson, match='expected "n" to be an integer, found true or false'):
        expect_type(True, int, "c.json", "n")


def _json_reads(path):
    """The `json.load`/`json.loads` calls of a source file, as (line, source) pairs, less
    `json.loads(json.dumps(...))` (a copy of our own values, not input)."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("load", "loads")
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "json"):
            argument = node.args[0] if node.args else None
            copies_our_value = (isinstance(argument, ast.Call)
                                and isinstance(argument.func, ast.Attribute)
                                and argument.func.attr == "dumps")
            if not copies_our_value:
                found.append((node.lineno, ast.get_source_segment(source, node)))
    return found


def test_every_json_reader_goes_through_json_text():
    """One door: a reader that calls `json.load` itself would miss the depth and type checks."""
    elsewhere = []
    for folder in ("layers", "tasks", "zoo", "tools", "nlpzoo"):
        for root, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(root, name)
                if not name.endswith(".py") or path.endswith(os.path.join("io", "json_text.py")):
                    continue
                elsewhere += [f"{os.path.relpath(path, ROOT)}:{line}: {call}"
                              for line, call in _json_reads(path)]
    assert not elsewhere, "read JSON through nlpzoo.tasks.io.json_text:\n" + "\n".join(elsewhere)
