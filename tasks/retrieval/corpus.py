"""Retrieval test files: a corpus of documents with ids, and queries naming their relevant ids.

Both are JSON lines (blank lines skipped; errors name the file and the
1-based line):

    corpus.jsonl   {"id": "d1", "text": "The Moon is 384,400 km from the Earth."}
    queries.jsonl  {"query": "How far away is the Moon?", "relevant": ["d1"]}

Ids are strings or integers (compared as text: 7 and "7" are the same
document) and unique in the corpus; every query names at least one relevant
id, and each must be in the corpus. Other fields are ignored.
"""

import dataclasses

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.io.json_text import parse_json
from nlpzoo.tasks.text.line_reader import cleaned
from nlpzoo.tasks.text.prediction_io import read_text_lines


@dataclasses.dataclass(frozen=True)
class Document:
    """One corpus document, and where it was read.

    Examples:
    >>> Document("d1", "The Moon.", "corpus.jsonl", 1).id
    'd1'
    """

    id: str
    text: str
    source: str = ""
    line: int = 0


@dataclasses.dataclass(frozen=True)
class Query:
    """One query, the ids of its relevant documents, and where it was read.

    Examples:
    >>> Query("How far is the Moon?", ("d1",)).relevant
    ('d1',)
    """

    text: str
    relevant: tuple
    source: str = ""
    line: int = 0


def _records(path):
    """`(line number, JSON object)` of every non-blank line of `path`."""
    for number, line in read_text_lines(path):  # a missing file: "path: no such file"
        record = parse_json(line, path, number, strict=False)
        if not isinstance(record, dict):
            raise DataFormatError(f"{path}:{number}: expected a JSON object")
        yield number, record


def _text_field(record, key, path, number):
    value = record.get(key)
    if not isinstance(value, str) or not cleaned(value).strip():
        found = f"found {value!r}"[:60] if key in record else f"found {', '.join(map(repr, record))}"
        raise DataFormatError(f"{path}:{number}: expected a non-empty string {key!r} ({found})")
    return value


def _document_id(value, path, number, what):
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataFormatError(f"{path}:{number}: {what} must be a string or an integer, "
                              f"found {value!r}")
    return str(value)


def read_corpus(path):
    """The documents of a JSONL corpus, in file order; ids unique.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".jsonl")
    >>> _ = open(path, "w").write('{"id": 1, "text": "A cat."}\\n{"id": "b", "text": "Dogs."}\\n')
    >>> [(d.id, d.text, d.line) for d in read_corpus(path)]
    [('1', 'A cat.', 1), ('b', 'Dogs.', 2)]
    """
    documents, first_line = [], {}
    for number, record in _records(path):
        if "id" not in record:
            raise DataFormatError(f"{path}:{number}: expected a document with \"id\" and "
                                  f"\"text\" (found {', '.join(map(repr, record))})")
        document_id = _document_id(record["id"], path, number, "\"id\"")
        if document_id in first_line:
            raise DataFormatError(f"{path}:{number}: document id {document_id!r} is already "
                                  f"used on line {first_line[document_id]}")
        first_line[document_id] = number
        documents.append(Document(document_id, _text_field(record, "text", path, number),
                                  path, number))
    if not documents:
        raise DataFormatError(f"{path}: no documents found (the file is empty or blank)")
    return documents


def read_queries(path, corpus):
    """The queries of a JSONL file, each with the ids of its relevant documents in `corpus`.

    Args:
        path: the queries file.
        corpus: the `Document`s the relevant ids must name (`read_corpus`).

    Raises:
        DataFormatError: a missing field, or a relevant id not in the corpus;
            the message names the file and line.

    Examples:
    >>> import tempfile
    >>> corpus = [Document("d1", "The Moon.", "corpus.jsonl", 1)]
    >>> path = tempfile.mktemp(suffix=".jsonl")
    >>> _ = open(path, "w").write('{"query": "Moon?", "relevant": ["d1"]}\\n'
    ...                           '{"query": "Sun?", "relevant": ["d9"]}\\n')
    >>> read_queries(path, corpus)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: ...:2: relevant id 'd9' is not in the corpus \
(corpus.jsonl, 1 documents)
    """
    known = {document.id for document in corpus}
    where = corpus[0].source if corpus else "the corpus"
    queries = []
    for number, record in _records(path):
        text = _text_field(record, "query", path, number)
        relevant = record.get("relevant")
        if isinstance(relevant, (str, int)) and not isinstance(relevant, bool):
            relevant = [relevant]  # one id alone is fine too
        if not isinstance(relevant, list) or not relevant:
            raise DataFormatError(f"{path}:{number}: expected \"relevant\": a non-empty list of "
                                  f"document ids, found {relevant!r}")
        ids = tuple(dict.fromkeys(_document_id(value, path, number, "a relevant id")
                                  for value in relevant))
        for document_id in ids:
            if document_id not in known:
                raise DataFormatError(f"{path}:{number}: relevant id {document_id!r} is not in "
                                      f"the corpus ({where}, {len(known)} documents)")
        queries.append(Query(text, ids, path, number))
    if not queries:
        raise DataFormatError(f"{path}: no queries found (the file is empty or blank)")
    return queries
