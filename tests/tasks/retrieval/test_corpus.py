"""Corpus and query files: what they read, and one-line errors naming the file and line."""

import json

import pytest

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.retrieval import read_corpus, read_queries


def _jsonl(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return str(path)


def test_reads_ids_as_text_and_relevant_lists(tmp_path):
    corpus = read_corpus(_jsonl(tmp_path / "corpus.jsonl", [
        {"id": 7, "text": "The Moon.", "title": "ignored"}, "", {"id": "b", "text": "Mars."}]))
    assert [(d.id, d.text, d.line) for d in corpus] == [("7", "The Moon.", 1), ("b", "Mars.", 3)]
    queries = read_queries(_jsonl(tmp_path / "queries.jsonl", [
        {"query": "Moon?", "relevant": ["7", 7, "b"]}, {"query": "Mars?", "relevant": "b"}]),
        corpus)
    assert [(q.text, q.relevant, q.line) for q in queries] == [
        ("Moon?", ("7", "b"), 1), ("Mars?", ("b",), 2)]


@pytest.mark.parametrize("records, message", [
    ([{"id": "a", "text": "x"}, {"text": "y"}],
     r"corpus.jsonl:2: expected a document with \"id\" and \"text\" \(found 'text'\)"),
    ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}],
     r"corpus.jsonl:2: document id 'a' is already used on line 1"),
    ([{"id": "a"}], r"corpus.jsonl:1: expected a non-empty string 'text'"),
    ([{"id": [1], "text": "x"}], r"corpus.jsonl:1: \"id\" must be a string or an integer"),
    (["{not json"], r"corpus.jsonl:1: not valid JSON"),
    ([], r"corpus.jsonl: no documents found"),
])
def test_bad_corpus(tmp_path, records, message):
    with pytest.raises(DataFormatError, match=message):
        read_corpus(_jsonl(tmp_path / "corpus.jsonl", records))


@pytest.mark.parametrize("records, message", [
    ([{"query": "q", "relevant": ["a"]}, {"query": "r", "relevant": ["zz"]}],
     r"queries.jsonl:2: relevant id 'zz' is not in the corpus \(.*corpus.jsonl, 1 documents\)"),
    ([{"query": "q"}], r"queries.jsonl:1: expected \"relevant\": a non-empty list of document "
                       r"ids, found None"),
    ([{"query": "q", "relevant": []}], r"queries.jsonl:1: expected \"relevant\""),
    ([{"text": "q", "relevant": ["a"]}], r"queries.jsonl:1: expected a non-empty string "
                                         r"'query' \(found 'text', 'relevant'\)"),
])
def test_bad_queries(tmp_path, records, message):
    corpus = read_corpus(_jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x"}]))
    with pytest.raises(DataFormatError, match=message):
        read_queries(_jsonl(tmp_path / "queries.jsonl", records), corpus)
    with pytest.raises(DataFormatError, match=r"nothing.jsonl: no such file"):
        read_queries(str(tmp_path / "nothing.jsonl"), corpus)
