"""Readers for column-formatted tagging data (CoNLL-2003 and `word tag` files).

Pure Python, no TensorFlow: everything here can be used and tested without a model. Tag schemes
(IOB2, IOB1, BIOES) and tags <-> spans live in `tasks.words.tags`. Every family that reads
word-per-line files (tagging, span NER, probing) reads them through this module.
"""

import dataclasses
import re
import sys

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.line_reader import cleaned, read_lines
from nlpzoo.tasks.words.tags import (
    PREFIXES,
    canonical_scheme,
    iob1_to_iob2,
    scheme_prefixes,
    split_tag,
    transition_error,
)

_DOCSTART = "-DOCSTART-"
# Columns are separated by spaces or tabs only: str.split() would also split words at
# non-breaking spaces and other Unicode whitespace that real corpora contain inside tokens.
_COLUMN_SEPARATOR = re.compile(r"[ \t]+")


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """One sentence of words with one tag per word.

    Args:
        words: the words, in order.
        tags: one tag per word (e.g. `"B-PER"`, `"O"`).
        source: path of the file the sentence was read from ("" when built by hand).
        line: 1-based line of the first word in `source` (0 when built by hand). Word `k` of
            the sentence sits on line `line_of(k)`: `line + k` unless a word was dropped.
        document: 0-based index of the sentence's document in `source` (`-DOCSTART-` lines
            start documents); 0 when built by hand.
        left_context, right_context: words of the neighbouring sentences of the document,
            encoded as unlabelled context (`tasks.words.document_context`); empty by default.
        word_lines: the line of each word, when they are not consecutive (a reader dropped
            a word that cleaned to nothing); empty: word `k` is on line `line + k`.
        text: the raw line the words were split from (plain-text prediction input), so
            that entities get character offsets into it; "" otherwise.
        window: a `tasks.words.windows.Window` when this sentence is one window of a
            longer one (prediction and evaluation); None otherwise.

    Examples:
    >>> sentence = TaggedSentence(("EU", "rejects"), ("B-ORG", "O"), "eng.train", 1)
    >>> len(sentence), sentence.tags[0], sentence.left_context, sentence.line_of(1)
    (2, 'B-ORG', (), 2)
    """

    words: tuple[str, ...]
    tags: tuple[str, ...]
    source: str = ""
    line: int = 0
    document: int = 0
    left_context: tuple[str, ...] = ()
    right_context: tuple[str, ...] = ()
    word_lines: tuple[int, ...] = ()
    text: str = ""
    window: object = None

    def __post_init__(self):
        # Tuples keep the dataclass hashable and really frozen, whatever sequence was passed.
        for name in ("words", "tags", "left_context", "right_context", "word_lines"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if len(self.words) != len(self.tags):
            raise ValueError(
                f"{len(self.words)} words but {len(self.tags)} tags "
                f"(sentence at {self.source}:{self.line})"
            )
        if self.word_lines and len(self.word_lines) != len(self.words):
            raise ValueError(f"{len(self.words)} words but {len(self.word_lines)} word_lines "
                             f"(sentence at {self.source}:{self.line})")

    def __len__(self):
        return len(self.words)

    def line_of(self, index):
        """The 1-based line of word `index` in `source`."""
        return self.word_lines[index] if self.word_lines else self.line + index


# ---------------------------------------------------------------------------------------------
# Labels
# ---------------------------------------------------------------------------------------------


def _tags_of(item):
    """The tag sequence of a TaggedSentence, or the item itself when it already is one."""
    return item.tags if isinstance(item, TaggedSentence) else item


def label_list(sentences):
    """All tags of a data set in a stable order, for a model's output layer.

    `"O"` comes first (always included), then the observed tags sorted by entity type and,
    within a type, by prefix in the order B, I, E, S. Only observed tags are listed.

    Args:
        sentences: `TaggedSentence` objects or plain tag sequences.

    Returns:
        A list of tags.

    Examples:
    >>> label_list([["B-PER", "O", "B-LOC", "I-LOC", "I-PER"]])
    ['O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER']
    """
    observed = {tag for sentence in sentences for tag in _tags_of(sentence)} - {"O"}

    def order(tag):
        prefix, entity_type = split_tag(tag)
        return entity_type, PREFIXES.index(prefix)  # B, I, E, S

    return ["O"] + sorted(observed, key=order)


# ---------------------------------------------------------------------------------------------
# Reading column files
# ---------------------------------------------------------------------------------------------


def decoded_lines(path):
    """Yields `(line_number, text)` for each line of a UTF-8 file, without the line ending.

    `tasks.text.line_reader.read_lines`: streamed, `\\n`, `\\r\\n` and `\\r` endings, a UTF-8
    byte-order mark at the start dropped, invalid UTF-8 an error naming file, line and byte.

    Raises:
        FileNotFoundError: `path` does not exist.
        DataFormatError: a line is not valid UTF-8 (naming the file and line).

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "lines.txt")
    >>> with open(path, "wb") as file:
    ...     _ = file.write(b"\\xef\\xbb\\xbfEU\\r\\nrejects\\n")
    >>> list(decoded_lines(path))
    [(1, 'EU'), (2, 'rejects')]
    """
    return read_lines(path)


def _is_blank(text):
    """Blank: nothing but whitespace and characters the clean-up removes (a DOS end-of-file
    Ctrl-Z, a stray byte-order mark)."""
    return not cleaned(text).strip()


def _raw_sentences(path):
    """Groups the column lines of a file into sentences.

    Yields:
        `(first_line_number, [(line_number, columns), ...], document)` per sentence. Blank
        lines and `-DOCSTART-` lines end a sentence and are not part of any; a `-DOCSTART-`
        line after a sentence starts the next document (`document`, from 0).
    """
    rows, document, document_has_sentences = [], 0, False
    for line_number, text in decoded_lines(path):
        columns = [] if _is_blank(text) else _COLUMN_SEPARATOR.split(text.strip(" \t"))
        if columns and columns[0] != _DOCSTART:
            rows.append((line_number, columns))
            continue
        if rows:
            yield rows[0][0], rows, document
            rows, document_has_sentences = [], True
        if columns and document_has_sentences:  # -DOCSTART-
            document, document_has_sentences = document + 1, False
    if rows:
        yield rows[0][0], rows, document


def _describe_columns(num_columns):
    return "(word tag)" if num_columns == 2 else "(word ... tag)"


def _check_column_count(path, line_number, columns, num_columns):
    if len(columns) != num_columns:
        raise DataFormatError(
            f"{path}:{line_number}: expected {num_columns} columns "
            f"{_describe_columns(num_columns)}, found {len(columns)}"
        )


def _check_column_indices(path, line_number, num_columns, word_column, tag_column):
    if num_columns < 2:
        raise DataFormatError(
            f"{path}:{line_number}: expected at least 2 columns (word tag), found {num_columns}"
        )
    for name, index in (("word_column", word_column), ("tag_column", tag_column)):
        if not -num_columns <= index < num_columns:
            counted = f" (column {index + 1}, counting from 1)" if index >= 0 else ""
            raise DataFormatError(f"{path}:{line_number}: {name}={index} is out of range for "
                                  f"{num_columns} columns{counted}")


def _parse_sentence(path, first_line, rows, num_columns, word_column, tag_column, document):
    for line_number, columns in rows:
        _check_column_count(path, line_number, columns, num_columns)
    words = [columns[word_column] for _, columns in rows]
    # Interned: a 200 MB file repeats a dozen tags millions of times.
    tags = [sys.intern(columns[tag_column]) for _, columns in rows]
    return TaggedSentence(tuple(words), tuple(tags), str(path), first_line, document)


def _raw_file_sentences(path, num_columns, word_column, tag_column):
    """The sentences of a column file as written (words not cleaned yet), one at a time."""
    first = True
    for first_line, rows, document in _raw_sentences(path):
        if first:
            # Unless given, the first word line fixes the column count for the whole file.
            num_columns = len(rows[0][1]) if num_columns is None else num_columns
            _check_column_indices(path, first_line, num_columns, word_column, tag_column)
            first = False
        yield _parse_sentence(path, first_line, rows, num_columns, word_column, tag_column,
                              document)


def _clean_words(sentence):
    """`sentence` with its words cleaned (`tasks.text.text_cleaning.clean_text`); a word that
    cleans to nothing is dropped when tagged `O` and an error when it carries a label.
    None when no word is left."""
    words = [cleaned(word) for word in sentence.words]
    if all(words):
        return dataclasses.replace(sentence, words=words)
    for index, (word, tag) in enumerate(zip(words, sentence.tags)):
        if not word and tag != "O":
            raise DataFormatError(
                f"{sentence.source}:{sentence.line_of(index)}: expected a word, found only "
                f"control or format characters {sentence.words[index]!r} tagged {tag!r} (a "
                "word that cleans to nothing is dropped only when tagged O)")
    kept = [index for index, word in enumerate(words) if word]
    if not kept:
        return None
    return dataclasses.replace(
        sentence, words=[words[k] for k in kept], tags=[sentence.tags[k] for k in kept],
        line=sentence.line_of(kept[0]), word_lines=[sentence.line_of(k) for k in kept])


def _check_tags(sentence, scheme, allowed_prefixes):
    """Raises DataFormatError, naming file and line, on a malformed tag or (when `scheme` is
    given) a transition the scheme forbids."""
    previous_tag = None
    for index, tag in enumerate(sentence.tags):
        line_number = sentence.line_of(index)
        try:
            split_tag(tag, allowed_prefixes)
        except ValueError as error:
            raise DataFormatError(f"{sentence.source}:{line_number}: {error}") from None
        problem = scheme and transition_error(scheme, previous_tag, tag)
        if problem and scheme == "IOB2":
            problem += " (IOB1 data? pass convert_iob1=True)"
        if problem:
            raise DataFormatError(f"{sentence.source}:{line_number}: {problem}")
        previous_tag = tag
    problem = scheme and transition_error(scheme, previous_tag, None)  # BIOES: closed?
    if problem:
        last_line = sentence.line_of(len(sentence) - 1)
        raise DataFormatError(f"{sentence.source}:{last_line}: {problem}")


def _resolve_scheme(scheme, convert_iob1, any_tags):
    scheme = None if scheme is None else canonical_scheme(scheme)
    if convert_iob1 and scheme not in (None, "IOB1"):
        raise ValueError(f"convert_iob1=True reads IOB1 data, but scheme={scheme!r} was given")
    if any_tags and (scheme is not None or convert_iob1):
        raise ValueError("any_tags=True reads the tags as they are; it cannot be combined "
                         "with scheme or convert_iob1")
    return scheme


def iter_column_file(
    path, tag_column=-1, word_column=0, num_columns=None, scheme=None, convert_iob1=False,
    any_tags=False,
):
    """`read_column_file`, one sentence at a time: the file is streamed, never held whole.

    Errors come when the sentence at fault is reached (an empty file: at the end).

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.conll")
    >>> with open(path, "w") as file:
    ...     _ = file.write("EU B-ORG\\n\\nrejects O\\nGerman B-MISC")  # no final newline
    >>> sentences = iter_column_file(path)
    >>> next(sentences).words, next(sentences).tags
    (('EU',), ('O', 'B-MISC'))
    """
    scheme = _resolve_scheme(scheme, convert_iob1, any_tags)
    allowed_prefixes = "BI" if convert_iob1 else scheme_prefixes(scheme)
    found = False
    for sentence in _raw_file_sentences(path, num_columns, word_column, tag_column):
        if not any_tags:
            _check_tags(sentence, scheme, allowed_prefixes)
        sentence = _clean_words(sentence)
        if sentence is None:
            continue
        if convert_iob1:
            sentence = dataclasses.replace(sentence, tags=tuple(iob1_to_iob2(sentence.tags)))
        found = True
        yield sentence
    if not found:
        raise DataFormatError(f"{path}: no sentences found (empty, or only blank/-DOCSTART- lines)")


def read_column_file(
    path, tag_column=-1, word_column=0, num_columns=None, scheme=None, convert_iob1=False,
    any_tags=False,
):
    """Reads a column-formatted tagging file: one word per line, blank lines between sentences.

    Handles CoNLL-2003 (`word POS chunk NER`, tag last) and two-column `word tag` files, with
    columns separated by spaces or tabs (mixed freely). `-DOCSTART-` lines are skipped (they
    also end a sentence, and start a new document: each sentence's `document`). Lines end in
    `\\n`, `\\r\\n` or `\\r`; a UTF-8 byte-order mark is accepted; lines of only whitespace
    or control characters are blank. Words are cleaned as BERT does
    (`tasks.text.text_cleaning.clean_text`); a word that cleans to nothing (only control or
    format characters) is dropped when tagged `O` and is an error otherwise. With
    `any_tags=True` the tag column may hold any labels (the POS or chunk column of
    CoNLL-2003, for probing classifiers). The file is streamed (`iter_column_file`); the
    sentences are returned as a list, which training needs anyway (labels, shuffling).

    Args:
        path: the file, UTF-8 encoded.
        tag_column: index of the tag column (negative counts from the end).
        word_column: index of the word column.
        num_columns: number of columns on every line; by default the first word line fixes it.
        scheme: `None` accepts any `O`/`B-`/`I-`/`E-`/`S-` tags without checking their order;
            `"IOB2"` (or `"BIO"`), `"IOB1"` or `"BIOES"` also rejects prefixes and transitions
            the scheme forbids (e.g. `I-PER` after `O` in IOB2), as `tasks.words.tags.transition_error`
            words them.
        convert_iob1: convert IOB1 tags to IOB2 while reading (only `O`/`B-`/`I-` allowed;
            valid IOB2 passes through unchanged). Needs `scheme` to be `None` or `"IOB1"`.
        any_tags: read the tag column as plain labels (`NNP`, `B-NP`, ...), unchecked;
            `scheme` must be None and `convert_iob1` False.

    Returns:
        A list of `TaggedSentence`, in file order.

    Raises:
        FileNotFoundError: `path` does not exist (the message names it).
        DataFormatError: invalid UTF-8, a line with another number of columns, a tag outside
            the scheme, a labelled word of only control characters (each naming the file
            and line), or no sentence at all (naming the file).
        ValueError: contradicting arguments.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.conll")
    >>> with open(path, "w") as file:
    ...     _ = file.write("-DOCSTART- -X- -X- O\\n\\nEU NNP B-NP B-ORG\\nrejects VBZ B-VP O\\n")
    >>> [sentence] = read_column_file(path)
    >>> sentence.words, sentence.tags, sentence.line
    (('EU', 'rejects'), ('B-ORG', 'O'), 3)
    >>> read_column_file(path, tag_column=1, any_tags=True)[0].tags  # the POS column
    ('NNP', 'VBZ')
    """
    return list(iter_column_file(path, tag_column, word_column, num_columns, scheme,
                                 convert_iob1, any_tags))
