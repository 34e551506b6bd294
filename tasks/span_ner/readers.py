"""Readers for span-annotated NER data: JSONL with (possibly nested) spans, or CoNLL tags.

Pure Python, no TensorFlow.

Spans are `(start, end, label)` over word positions with an INCLUSIVE `end`: `(0, 1, "ORG")`
covers words 0 and 1. This is the convention of `tasks.words.tags.tags_to_spans`, so spans
read from tags and spans read from JSONL mean the same thing. Unlike tags, spans may nest
("United Airlines" inside "United Airlines Holding") or overlap.
"""

import dataclasses
import os

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.io.json_text import parse_json
from nlpzoo.tasks.text.line_reader import cleaned
from nlpzoo.tasks.words.conll import TaggedSentence, decoded_lines, read_column_file
from nlpzoo.tasks.words.tags import split_tag, tags_to_spans

NONE_LABEL = "NONE"
DATA_FORMATS = ("jsonl", "conll")
_JSONL_EXTENSIONS = (".jsonl", ".json")


def _normalized_spans(spans):
    """Spans as a sorted tuple of `(int, int, str)` without duplicates."""
    return tuple(sorted({(int(start), int(end), str(label)) for start, end, label in spans}))


@dataclasses.dataclass(frozen=True)
class SpanSentence:
    """One sentence of words with its entity spans.

    Args:
        words: the words, in order.
        spans: `(start, end, label)` triples over word positions with an inclusive `end`, in
            any order; they are stored sorted (by start, end, label) and without duplicates.
            Spans may nest or overlap.
        source: path of the file the sentence was read from ("" when built by hand).
        line: 1-based line of the sentence in `source` (its JSON line, or its first word line
            in a column file); 0 when built by hand.
        document: 0-based index of the sentence's document in `source` (see `read_span_jsonl`
            and `tasks.words.conll.read_column_file`); 0 when built by hand.
        left_context, right_context: words of the neighbouring sentences of the document,
            encoded as unlabelled context (`tasks.words.document_context`); empty by default.
        text: the raw line the words were split from (plain-text prediction input), so
            that entities get character offsets into it; "" otherwise.
        window: a `tasks.words.windows.Window` when this sentence is one window of a
            longer one (prediction and evaluation); None otherwise.

    Raises:
        ValueError: a span is empty or reaches outside the sentence.

    Examples:
    >>> sentence = SpanSentence(("United", "Airlines", "Holding"),
    ...                         [(0, 2, "ORG"), (0, 1, "ORG"), (0, 1, "ORG")])
    >>> sentence.spans
    ((0, 1, 'ORG'), (0, 2, 'ORG'))
    >>> len(sentence)
    3
    """

    words: tuple[str, ...]
    spans: tuple[tuple[int, int, str], ...] = ()
    source: str = ""
    line: int = 0
    document: int = 0
    left_context: tuple[str, ...] = ()
    right_context: tuple[str, ...] = ()
    text: str = ""
    window: object = None

    def __post_init__(self):
        # Tuples keep the dataclass hashable and really frozen, whatever sequence was passed.
        for name in ("words", "left_context", "right_context"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "spans", _normalized_spans(self.spans))
        for start, end, label in self.spans:
            if not 0 <= start <= end < len(self.words):
                raise ValueError(
                    f"span {(start, end, label)} is outside 0..{len(self.words) - 1} "
                    f"(sentence at {self.source}:{self.line})"
                )

    def __len__(self):
        return len(self.words)


# ---------------------------------------------------------------------------------------------
# JSONL
# ---------------------------------------------------------------------------------------------


def _is_integer(value):
    # bool is an int subclass in Python; `true` is not a word position.
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_tokens(record, where):
    tokens = record["tokens"]
    if not isinstance(tokens, list):
        raise DataFormatError(f"{where}: 'tokens' must be a list of strings")
    if not tokens:
        raise DataFormatError(f"{where}: 'tokens' is empty")
    for index, token in enumerate(tokens):
        if not isinstance(token, str):
            raise DataFormatError(f"{where}: token {index} is {token!r}, not a string")
    return tuple(tokens)


def _parse_span(span, index, num_tokens, where):
    """One JSON span object as `(start, end, label)`, checked against the sentence length."""
    if not isinstance(span, dict):
        raise DataFormatError(f"{where}: span {index} is not an object")
    missing = [key for key in ("start", "end", "label") if key not in span]
    if missing:
        raise DataFormatError(f"{where}: span {index} is missing key(s) {', '.join(missing)}")
    start, end, label = span["start"], span["end"], span["label"]
    for name, value in (("start", start), ("end", end)):
        if not _is_integer(value):
            raise DataFormatError(f"{where}: span {index}: {name} {value!r} is not an integer")
        if value < 0:
            raise DataFormatError(f"{where}: span {index}: {name} {value} is negative")
    if start > end:
        raise DataFormatError(
            f"{where}: span {index}: start {start} > end {end} (end is inclusive)"
        )
    if end >= num_tokens:
        raise DataFormatError(
            f"{where}: span {index}: end {end} is past the last token "
            f"(index {num_tokens - 1}; end is inclusive)"
        )
    if not isinstance(label, str) or not label:
        raise DataFormatError(f"{where}: span {index}: label {label!r} is not a non-empty string")
    return start, end, label


def _parse_record(text, path, line_number):
    """`(SpanSentence, its "document" value or None)` of one JSON line."""
    where = f"{path}:{line_number}"
    record = parse_json(text, path, line_number, strict=False)  # control characters: cleaned below
    if not isinstance(record, dict):
        raise DataFormatError(f"{where}: expected a JSON object with 'tokens' and 'spans'")
    missing = [key for key in ("tokens", "spans") if key not in record]
    if missing:
        raise DataFormatError(f"{where}: missing key(s) {', '.join(missing)}")
    tokens = _parse_tokens(record, where)
    if not isinstance(record["spans"], list):
        raise DataFormatError(f"{where}: 'spans' must be a list of objects")
    spans = [
        _parse_span(span, index, len(tokens), where) for index, span in enumerate(record["spans"])
    ]
    document = record.get("document")
    if document is not None and not (isinstance(document, str) or _is_integer(document)):
        raise DataFormatError(f"{where}: 'document' must be a string or an integer, "
                              f"got {document!r}")
    tokens, spans = _drop_empty_tokens(tokens, spans, where)
    return SpanSentence(tokens, spans, str(path), line_number), document


def _drop_empty_tokens(tokens, spans, where):
    """Tokens cleaned as BERT does (`clean_text`), and the spans over them.

    A token that cleans to nothing (only control or format characters) is dropped and the
    spans after it move left; inside a span it is an error, as in column files.
    """
    cleaned_tokens = [cleaned(token) for token in tokens]
    if all(cleaned_tokens):
        return tuple(cleaned_tokens), spans
    for index, (start, end, label) in enumerate(spans):
        for position in range(start, end + 1):
            if not cleaned_tokens[position]:
                raise DataFormatError(
                    f"{where}: expected a word, found only control or format characters "
                    f"{tokens[position]!r} (token {position}) inside span {index} ({label}); "
                    "a token that cleans to nothing is dropped only outside entities")
    new_index, kept = {}, []
    for position, token in enumerate(cleaned_tokens):
        if token:
            new_index[position] = len(kept)
            kept.append(token)
    if not kept:
        raise DataFormatError(f"{where}: expected words, found only control or format "
                              "characters in 'tokens'")
    return tuple(kept), [(new_index[start], new_index[end], label)
                         for start, end, label in spans]


def read_span_jsonl(path):
    """Reads span-annotated sentences from a JSON Lines file.

    One JSON object per line::

        {"tokens": ["United", "Airlines", "Holding"],
         "spans": [{"start": 0, "end": 2, "label": "ORG"},
                   {"start": 0, "end": 1, "label": "ORG"}]}

    `start` and `end` are 0-based word indices and `end` is INCLUSIVE (`{"start": 0, "end": 0}`
    is the first word alone). Nested and overlapping spans are allowed; a span listed twice (same
    start, end and label) is kept once. An optional `"document"` key (a string or an integer)
    names the sentence's document: records next to each other with the same value (or both
    without one) are one document, numbered from 0 in each sentence's `document` (a file
    without the key is one document). Other keys of the object are ignored, blank lines are
    skipped, `\\r\\n` and `\\r` line endings and a UTF-8 byte-order mark are accepted. Tokens
    are cleaned as BERT does (`tasks.text.text_cleaning.clean_text`); a token that cleans to
    nothing is dropped (the spans after it move left), or is an error inside a span.

    Args:
        path: the file, UTF-8 encoded.

    Returns:
        A list of `SpanSentence`, in file order, each with `line` = its line in the file.

    Raises:
        FileNotFoundError: `path` does not exist (the message names it).
        DataFormatError: naming the file and line: invalid UTF-8 or JSON, not an object, a
            missing `tokens`/`spans`/`start`/`end`/`label`, an empty token list, a non-string
            token, a start or end that is not an integer, negative, `start > end`,
            `end >= len(tokens)`, a label that is not a non-empty string, a `document` that
            is not a string or an integer; or, naming the file, no sentence at all.

    Examples:
    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.jsonl")
    >>> record = {"tokens": ["United", "Airlines", "Holding", "rose"],
    ...           "spans": [{"start": 0, "end": 2, "label": "ORG"},
    ...                     {"start": 0, "end": 1, "label": "ORG"}]}
    >>> with open(path, "w") as file:
    ...     _ = file.write(json.dumps(record) + "\\n")
    >>> [sentence] = read_span_jsonl(path)
    >>> sentence.spans, sentence.line
    (((0, 1, 'ORG'), (0, 2, 'ORG')), 1)
    """
    sentences, previous_key = [], None
    for line_number, text in decoded_lines(path):
        if not cleaned(text).strip():
            continue
        sentence, key = _parse_record(text, path, line_number)
        document = sentences[-1].document if sentences else 0
        if sentences and key != previous_key:
            document += 1  # the next record with another "document" starts a document
        sentences.append(dataclasses.replace(sentence, document=document))
        previous_key = key
    if not sentences:
        raise DataFormatError(f"{path}: no sentences found (empty, or only blank lines)")
    return sentences


# ---------------------------------------------------------------------------------------------
# Tags
# ---------------------------------------------------------------------------------------------


def _check_tag_syntax(sentence):
    """Raises DataFormatError naming the file and line of the first malformed tag."""
    for index, tag in enumerate(sentence.tags):
        line_number = sentence.line_of(index)
        try:
            split_tag(tag)
        except ValueError as error:
            raise DataFormatError(f"{sentence.source}:{line_number}: {error}") from None


def from_tagged_sentences(tagged):
    """Converts tagged sentences to span sentences with `tags_to_spans`.

    Entities are read as `seqeval`'s default mode (= conlleval) reads them, so IOB2, IOB1 and
    BIOES all work and the spans never overlap.

    Args:
        tagged: `TaggedSentence` objects (e.g. from `read_column_file`).

    Returns:
        A list of `SpanSentence` with the same words, source, line and document.

    Raises:
        DataFormatError: a tag is not `O` nor `B-`/`I-`/`E-`/`S-` followed by a type (the
            message names the file and line of the tag).

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> tagged = TaggedSentence(("Peter", "Blackburn", "visits", "Paris"),
    ...                         ("B-PER", "I-PER", "O", "B-LOC"))
    >>> from_tagged_sentences([tagged])[0].spans
    ((0, 1, 'PER'), (3, 3, 'LOC'))
    """
    sentences = []
    for sentence in tagged:
        if not isinstance(sentence, TaggedSentence):
            raise TypeError(f"expected TaggedSentence objects, got {type(sentence).__name__}")
        _check_tag_syntax(sentence)
        spans = tags_to_spans(sentence.tags)
        sentences.append(SpanSentence(sentence.words, spans, sentence.source, sentence.line,
                                      sentence.document))
    return sentences


def read_span_file(path, data_format=None, **column_options):
    """Reads span-annotated sentences from JSONL or from a column (CoNLL) tagging file.

    Args:
        path: the file.
        data_format: `"jsonl"` (see `read_span_jsonl`) or `"conll"` (see `read_column_file`;
            the tags become spans with `from_tagged_sentences`). By default, files ending in
            `.jsonl` or `.json` are JSONL and anything else is a column file.
        **column_options: passed to `read_column_file` (e.g. `scheme="IOB2"`,
            `convert_iob1=True`); only for column files.

    Returns:
        A list of `SpanSentence`.

    Raises:
        FileNotFoundError: `path` does not exist.
        DataFormatError: the file cannot be read in that format (naming file and line).
        ValueError: an unknown `data_format`, or column options for a JSONL file.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.conll")
    >>> with open(path, "w") as file:
    ...     _ = file.write("EU B-ORG\\nrejects O\\nGerman B-MISC\\n")
    >>> read_span_file(path)[0].spans
    ((0, 0, 'ORG'), (2, 2, 'MISC'))
    """
    if data_format is None:
        is_jsonl = os.fspath(path).lower().endswith(_JSONL_EXTENSIONS)
        data_format = "jsonl" if is_jsonl else "conll"
    data_format = data_format.lower()
    if data_format not in DATA_FORMATS:
        raise ValueError(f"data_format={data_format!r}: expected one of {DATA_FORMATS} or None")
    if data_format == "jsonl":
        if column_options:
            raise ValueError(f"column options {sorted(column_options)} do not apply to JSONL")
        return read_span_jsonl(path)
    return from_tagged_sentences(read_column_file(path, **column_options))


def span_label_names(sentences):
    """The span classifier's label list: `"NONE"` (no entity) first, then the sorted types.

    Args:
        sentences: `SpanSentence` objects or plain lists of `(start, end, label)` spans.

    Returns:
        `["NONE", type, ...]`; `NONE` is always index 0.

    Raises:
        ValueError: an entity type is itself called `"NONE"`.

    Examples:
    >>> span_label_names([SpanSentence(("a", "b"), [(0, 0, "PER"), (0, 1, "LOC")]),
    ...                   [(3, 4, "PER")]])
    ['NONE', 'LOC', 'PER']
    """
    types = set()
    for sentence in sentences:
        spans = sentence.spans if isinstance(sentence, SpanSentence) else sentence
        types.update(span[2] for span in spans)
    if NONE_LABEL in types:
        raise ValueError(f"entity type {NONE_LABEL!r} clashes with the no-entity label")
    return [NONE_LABEL] + sorted(types)
