"""What every task's prediction input and output share: plain-text lines, format choice."""

import itertools
import os
import re
import sys

from nlpzoo.tasks.io.atomic_files import write_text_atomically
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.line_reader import cleaned, read_lines
from nlpzoo.tasks.text.word_splitting import split_words

INPUT_FORMATS = ("auto", "text", "data")
OUTPUT_FORMATS = ("auto", "conll", "jsonl")


def read_text_lines(path, strip=True):
    """`(line number, stripped line)` of every non-blank line of a UTF-8 file.

    Prediction input: lines end in `\\n`, `\\r\\n` or `\\r`, a byte-order mark is
    dropped, a line that is not UTF-8 is decoded as Latin-1 (a file in a single-byte
    encoding keeps its accented letters; one warning names the first place), and a line of
    only whitespace and control or format characters is blank. Lines are kept as
    written (character offsets index them); models clean them. With `strip=True`
    surrounding whitespace is removed; with `strip=False` the line is kept as given,
    less its line break.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> _ = open(path, "w").write("Who is he ?\\n\\n  What time\\r\\n\\x07\\u200b\\n")
    >>> read_text_lines(path)
    [(1, 'Who is he ?'), (3, 'What time')]
    """
    return list(_iter_text_lines(path, strip))


def _iter_text_lines(path, strip=True):
    """`read_text_lines`, streamed."""
    if not os.path.isfile(path):
        raise DataFormatError(f"{path}: no such file")
    # Not UTF-8: a line in a single-byte encoding (Latin-1: every byte a letter, none
    # lost), with one warning naming the first; never letters silently dropped.
    for number, line in read_lines(path, "latin-1"):
        if cleaned(line).strip():
            yield number, line.strip() if strip else line


_TAG = re.compile(r"^(O|[BIESLU]-\S+)$")
_SAMPLE_LINES = 50
# The most columns a column file has (CoNLL-2003: 4; CoNLL-2012 and CoNLL-U: about 10).
MAX_COLUMNS = 12


def _first_lines(path, count=_SAMPLE_LINES):
    """The first `count` non-blank lines of a prediction input file (stripped), read lazily."""
    return [line for _, line in itertools.islice(_iter_text_lines(path), count)]


def looks_like_columns(path):
    """Whether the file is a CoNLL-style column file: its first 50 non-blank lines all
    one token then a few tag columns (2 to `MAX_COLUMNS` columns, the same count on
    each line, the last one a tag: `O` or `B-`/`I-`/`E-`/`S-`/`L-`/`U-` and a type).

    Plain text is text even when its lines happen to hold the same number of
    words ending in something tag-like: a line of more than `MAX_COLUMNS` words
    is a sentence, not one token's columns (a one-line text of 1,000 words that
    ends in "O" included).

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> _ = open(path, "w").write("EU NNP B-ORG\\nrejects VBZ O\\n\\nGerman JJ B-MISC\\n")
    >>> looks_like_columns(path)
    True
    >>> _ = open(path, "w").write("He flew to Paris .\\nShe went to Rome .\\n")
    >>> looks_like_columns(path)
    False
    >>> _ = open(path, "w").write("Vitamins A , B , C and D are not like vitamin O at all , says O\\n")
    >>> looks_like_columns(path)
    False
    """
    lines = [line.split() for line in _first_lines(path)]
    return (bool(lines) and all(2 <= len(columns) <= MAX_COLUMNS and _TAG.match(columns[-1])
                                for columns in lines)
            and len({len(columns) for columns in lines}) == 1)


def looks_like_jsonl(path):
    """Whether the file's first non-blank line is a JSON object (`{...`): JSON lines,
    which are read as such (and refused, naming the line, when they are not valid),
    never as plain text.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> _ = open(path, "w").write('\\n{"text": "Who is he ?"}\\n')
    >>> looks_like_jsonl(path)
    True
    """
    first = _first_lines(path, 1)
    return bool(first) and first[0].startswith("{")


def wants_jsonl(output, output_format):
    """JSONL when asked, or with `auto` for a `.jsonl` file; CoNLL otherwise."""
    return output_format == "jsonl" or (output_format == "auto" and output.endswith(".jsonl"))


def read_word_input(path, input_format, read_columns):
    """Sentences to tag: `(words, source, line, document, text)` from plain text or a column file.

    Plain text is one sentence per line, split into words as BERT splits raw
    text (`tasks.text.word_splitting.split_words`: punctuation and CJK ideographs
    are words of their own; what exported models do), and one document
    (`document` 0); the line as given is returned too, for character offsets
    (`text`: "" for a data file). With `input_format="data"`, or `"auto"` when the
    file looks like columns, `read_columns(path)` reads it and must return
    objects with `words`, `source`, `line` and `document` (their labels are
    not used).
    """
    if input_format == "data" or (input_format == "auto" and looks_like_columns(path)):
        return [(tuple(s.words), s.source, s.line, s.document, "") for s in read_columns(path)]
    sentences = [(tuple(word for word, _, _ in split_words(line)), path, number, 0, line)
                 for number, line in read_text_lines(path, strip=False)]
    if not sentences:
        raise DataFormatError(f"{path}: no sentences found")
    return sentences


def word_offsets(sentence):
    """`split_words(sentence.text)` (`(word, start_char, end_char)` of each word) for
    plain-text input, None otherwise: what `entity_record` takes, computed once per
    sentence."""
    return split_words(sentence.text) if sentence.text else None


def entity_record(sentence, start, end, label, offsets=None, **fields):
    """An entity of `tools/predict.py`'s JSONL: word offsets (`end` inclusive), label,
    `fields` (e.g. a score), its text and, for plain-text input, character offsets.

    `start_char` and `end_char` index the input line as given, so that
    `line[start_char:end_char]` is the entity's surface form (the `text`). `offsets`
    is the sentence's `word_offsets`: pass it for every entity of a sentence (without
    it each entity reads the whole line again, quadratic in a long line).

    Examples:
    >>> from types import SimpleNamespace  # a TaggedSentence or SpanSentence
    >>> line = "  Peter\u00a0Blackburn visited  Zürich, Switzerland."
    >>> sentence = SimpleNamespace(words=tuple(w for w, _, _ in split_words(line)), text=line)
    >>> entity_record(sentence, 0, 1, "PER")
    {'start': 0, 'end': 1, 'label': 'PER', 'text': 'Peter\xa0Blackburn', 'start_char': 2, 'end_char': 17}
    >>> entity_record(sentence, 3, 3, "LOC")
    {'start': 3, 'end': 3, 'label': 'LOC', 'text': 'Zürich', 'start_char': 27, 'end_char': 33}
    """
    record = {"start": int(start), "end": int(end), "label": label, **fields}
    if not sentence.text:
        return {**record, "text": " ".join(sentence.words[start:end + 1])}
    offsets = word_offsets(sentence) if offsets is None else offsets
    start_char, end_char = offsets[start][1], offsets[end][2]
    return {**record, "text": sentence.text[start_char:end_char], "start_char": start_char,
            "end_char": end_char}


def sentence_record(sentence, **fields):
    """A sentence of `tools/predict.py`'s JSONL: its words, `fields`, and the input
    line as given (`text`) for plain-text input."""
    record = {"words": list(sentence.words), **fields}
    if sentence.text:
        record["text"] = sentence.text
    return record


def write_output(output, lines):
    """Writes prediction lines to `output` atomically, or to standard output for "-"."""
    if output == "-":
        sys.stdout.writelines(lines)
        sys.stdout.flush()
    else:
        write_text_atomically(output, lines)
