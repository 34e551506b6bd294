"""Readers for column-formatted tagging data (CoNLL-2003 and `word tag` files) and tag schemes.

Pure Python, no TensorFlow: everything here can be used and tested without a model.

Tag schemes understood here:

- IOB2 (also called BIO): every entity starts with `B-TYPE`, continues with `I-TYPE`.
- IOB1: an entity starts with `I-TYPE`; `B-TYPE` only marks the first word of an entity that
  directly follows another entity of the same type.
- BIOES (IOBES): `B-` begin, `I-` inside, `E-` end, `S-` single-word entity.

Spans are `(start, end, type)` over word positions with an inclusive `end`.
"""

import dataclasses
import re

from tasks.errors import DataFormatError

SCHEMES = ("IOB2", "IOB1", "BIOES")

# Which tag prefixes (besides the bare "O") each scheme allows.
_PREFIXES_OF_SCHEME = {"IOB2": "BI", "IOB1": "BI", "BIOES": "BIES", None: "BIES"}
# label_list order inside one entity type.
_PREFIX_ORDER = {"B": 0, "I": 1, "E": 2, "S": 3}
_DOCSTART = "-DOCSTART-"
_UTF8_BOM = b"\xef\xbb\xbf"
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
            the sentence sits on line `line + k`.

    Examples:
    >>> sentence = TaggedSentence(("EU", "rejects"), ("B-ORG", "O"), "eng.train", 1)
    >>> len(sentence), sentence.tags[0]
    (2, 'B-ORG')
    """

    words: tuple[str, ...]
    tags: tuple[str, ...]
    source: str = ""
    line: int = 0

    def __post_init__(self):
        # Tuples keep the dataclass hashable and really frozen, whatever sequence was passed.
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "tags", tuple(self.tags))
        if len(self.words) != len(self.tags):
            raise ValueError(
                f"{len(self.words)} words but {len(self.tags)} tags "
                f"(sentence at {self.source}:{self.line})"
            )

    def __len__(self):
        return len(self.words)


# ---------------------------------------------------------------------------------------------
# Tags and spans
# ---------------------------------------------------------------------------------------------


def split_tag(tag, allowed_prefixes="BIES"):
    """Splits a tag into its prefix and entity type.

    Args:
        tag: a tag such as `"B-PER"` or `"O"`. The type is everything after the first `-`,
            so `"B-SOME-TYPE"` has type `"SOME-TYPE"`.
        allowed_prefixes: the prefix letters accepted besides the bare `"O"`.

    Returns:
        `(prefix, type)`; `("O", None)` for `"O"`.

    Raises:
        ValueError: the tag is not `"O"` nor an allowed prefix, a `-` and a non-empty type.

    Examples:
    >>> split_tag("B-PER"), split_tag("O")
    (('B', 'PER'), ('O', None))
    """
    if tag == "O":
        return "O", None
    prefix, dash, entity_type = tag.partition("-")
    if len(prefix) != 1 or prefix not in allowed_prefixes or not dash or not entity_type:
        choices = "/".join(f"{p}-" for p in allowed_prefixes)
        raise ValueError(f"tag {tag!r} is not O nor {choices} followed by an entity type")
    return prefix, entity_type


def _tags_of(item):
    """The tag sequence of a TaggedSentence, or the item itself when it already is one."""
    return item.tags if isinstance(item, TaggedSentence) else item


def _continues_entity(previous, current):
    """Whether tag `current` extends the entity that `previous` belongs to (conlleval rules):
    only `I-x` or `E-x` right after `B-x` or `I-x` of the same type does."""
    previous_prefix, previous_type = previous
    current_prefix, current_type = current
    return previous_prefix in "BI" and current_prefix in "IE" and previous_type == current_type


def tags_to_spans(tags):
    """Entity spans of a tag sequence, read as `seqeval`'s default mode (= conlleval) reads it.

    Any non-`O` tag starts a new entity unless it is `I-x`/`E-x` right after `B-x`/`I-x` of the
    same type. So an `I-x` after `O`, at the start, or after another type starts an entity (the
    lenient reading that makes IOB1 and slightly invalid IOB2 usable), and `E-x`/`S-x` of
    BIOES behave as `seqeval` treats them.

    Args:
        tags: a sequence of tags (`O`, or `B-`/`I-`/`E-`/`S-` followed by a type).

    Returns:
        A list of `(start, end, type)` with an inclusive `end`, sorted by `start`.

    Raises:
        ValueError: a tag is not of that form.

    Examples:
    >>> tags_to_spans(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [(0, 1, 'PER'), (3, 3, 'LOC'), (4, 4, 'LOC'), (5, 5, 'ORG')]
    """
    spans = []
    previous = ("O", None)
    for position, tag in enumerate(tags):
        current = split_tag(tag)
        if _continues_entity(previous, current):
            start, _, entity_type = spans[-1]
            spans[-1] = (start, position, entity_type)
        elif current[0] != "O":
            spans.append((position, position, current[1]))
        # conlleval closes an entity after E-x and S-x even when I-x/E-x of the same type follow.
        previous = current if current[0] in "BI" else ("O", None)
    return spans


def spans_to_tags(spans, length):
    """IOB2 tags for non-overlapping entity spans; the inverse of `tags_to_spans` on valid IOB2.

    Args:
        spans: `(start, end, type)` triples with an inclusive `end`, in any order.
        length: number of words in the sentence.

    Returns:
        A list of `length` IOB2 tags.

    Raises:
        ValueError: a span is empty, out of range, or overlaps another.

    Examples:
    >>> spans_to_tags([(0, 1, "PER"), (3, 3, "LOC")], 5)
    ['B-PER', 'I-PER', 'O', 'B-LOC', 'O']
    """
    tags = ["O"] * length
    for start, end, entity_type in sorted(spans):
        if not 0 <= start <= end < length:
            raise ValueError(f"span {(start, end, entity_type)} is outside 0..{length - 1}")
        if any(tag != "O" for tag in tags[start : end + 1]):
            raise ValueError(f"span {(start, end, entity_type)} overlaps another span")
        tags[start] = f"B-{entity_type}"
        tags[start + 1 : end + 1] = [f"I-{entity_type}"] * (end - start)
    return tags


def iob1_to_iob2(tags):
    """Converts IOB1 tags to IOB2: an `I-x` that does not continue an `x` entity becomes `B-x`.

    Valid IOB2 input comes back unchanged, and the result reads as the same entities under
    `tags_to_spans`.

    Args:
        tags: a sequence of `O`, `B-x` and `I-x` tags.

    Returns:
        A list of IOB2 tags.

    Raises:
        ValueError: a tag is not `O`, `B-x` or `I-x`.

    Examples:
    >>> iob1_to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC']
    """
    converted = []
    previous = ("O", None)
    for tag in tags:
        prefix, entity_type = split_tag(tag, allowed_prefixes="BI")
        if prefix == "I" and not _continues_entity(previous, (prefix, entity_type)):
            tag = f"B-{entity_type}"
        converted.append(tag)
        previous = (prefix, entity_type)
    return converted


def _entity_start_counts(tag_sequences):
    """Counts entities that begin with `I-` and entities that begin with `B-`.

    "Begin" means at the sentence start, after `O`, or after a tag of another type; a `B-x`
    right after `B-x`/`I-x` is the IOB1 separator of adjacent same-type entities and is not
    counted.
    """
    starts_with_i = starts_with_b = 0
    for tags in tag_sequences:
        previous_type = None
        for tag in tags:
            prefix, entity_type = split_tag(tag)
            if entity_type is not None and entity_type != previous_type:
                starts_with_i += prefix == "I"
                starts_with_b += prefix == "B"
            previous_type = entity_type if prefix in "BI" else None
    return starts_with_i, starts_with_b


def detect_scheme(sentences):
    """Guesses the tag scheme of a data set.

    The rule:

    1. `"BIOES"` if any tag starts with `E-` or `S-`.
    2. Otherwise count entity beginnings (a `B-x`/`I-x` at the sentence start, after `O` or
       after another type). `"IOB1"` if more of them use `I-` than `B-`: in clean IOB1 every
       beginning is `I-` (`B-` only separates adjacent entities of one type), in clean IOB2
       every one is `B-`, and a majority vote survives a few annotation slips.
    3. `"IOB2"` otherwise, including ties and data without entities (both read the same).

    Args:
        sentences: `TaggedSentence` objects or plain tag sequences.

    Returns:
        `"IOB2"`, `"IOB1"` or `"BIOES"`.

    Raises:
        ValueError: a tag is not `O` nor `B-`/`I-`/`E-`/`S-` followed by a type.

    Examples:
    >>> detect_scheme([["B-PER", "I-PER", "O"]]), detect_scheme([["I-PER", "O", "I-LOC"]])
    ('IOB2', 'IOB1')
    >>> detect_scheme([["S-PER", "O", "B-LOC", "E-LOC"]])
    'BIOES'
    """
    tag_sequences = [_tags_of(sentence) for sentence in sentences]
    if any(split_tag(tag)[0] in "ES" for tags in tag_sequences for tag in tags):
        return "BIOES"
    starts_with_i, starts_with_b = _entity_start_counts(tag_sequences)
    return "IOB1" if starts_with_i > starts_with_b else "IOB2"


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
        return entity_type, _PREFIX_ORDER[prefix]

    return ["O"] + sorted(observed, key=order)


# ---------------------------------------------------------------------------------------------
# Reading column files
# ---------------------------------------------------------------------------------------------


def _decoded_lines(path):
    """Yields `(line_number, text)` for each line of a UTF-8 file, without the line ending.

    Lines are decoded one by one so that a decoding error can name its line. `\\n` and `\\r\\n`
    endings are both accepted; a UTF-8 byte-order mark at the start is dropped.
    """
    with open(path, "rb") as file:
        data = file.read()
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    for line_number, raw_line in enumerate(data.split(b"\n"), start=1):
        try:
            yield line_number, raw_line.rstrip(b"\r").decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataFormatError(
                f"{path}:{line_number}: not valid UTF-8 "
                f"({error.reason} at byte {error.start} of the line)"
            ) from None


def _raw_sentences(path):
    """Groups the column lines of a file into sentences.

    Yields:
        `(first_line_number, [(line_number, columns), ...])` per sentence. Blank lines and
        `-DOCSTART-` lines (document boundaries) end a sentence and are not part of any.
    """
    rows = []
    for line_number, text in _decoded_lines(path):
        stripped = text.strip(" \t")
        columns = _COLUMN_SEPARATOR.split(stripped) if stripped else []
        if columns and columns[0] != _DOCSTART:
            rows.append((line_number, columns))
        elif rows:
            yield rows[0][0], rows
            rows = []
    if rows:
        yield rows[0][0], rows


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
            raise ValueError(f"{name}={index} is out of range for {num_columns} columns in {path}")


def _parse_sentence(path, first_line, rows, num_columns, word_column, tag_column):
    for line_number, columns in rows:
        _check_column_count(path, line_number, columns, num_columns)
    words = [columns[word_column] for _, columns in rows]
    tags = [columns[tag_column] for _, columns in rows]
    return TaggedSentence(tuple(words), tuple(tags), str(path), first_line)


def _parse_file(path, num_columns, word_column, tag_column):
    sentences = []
    for first_line, rows in _raw_sentences(path):
        if not sentences:
            # Unless given, the first word line fixes the column count for the whole file.
            num_columns = len(rows[0][1]) if num_columns is None else num_columns
            _check_column_indices(path, first_line, num_columns, word_column, tag_column)
        sentences.append(
            _parse_sentence(path, first_line, rows, num_columns, word_column, tag_column)
        )
    return sentences


def _transition_error(previous_tag, tag, scheme):
    """Why `tag` may not follow `previous_tag` (None at the sentence start) in `scheme`, or
    None when it may."""
    previous_prefix, previous_type = split_tag(previous_tag or "O")
    prefix, entity_type = split_tag(tag)
    inside_same_entity = previous_prefix in "BI" and previous_type == entity_type
    after = f"after {previous_tag!r}" if previous_tag else "at the start of a sentence"
    if scheme == "IOB2" and prefix == "I" and not inside_same_entity:
        return f"{tag!r} {after} is not valid IOB2 (IOB1 data? pass convert_iob1=True)"
    if scheme == "IOB1" and prefix == "B" and not inside_same_entity:
        return f"{tag!r} {after} is not valid IOB1 (B- only separates adjacent same-type entities)"
    if scheme == "BIOES" and prefix in "IE" and not inside_same_entity:
        return f"{tag!r} {after} is not valid BIOES"
    if scheme == "BIOES" and prefix in "OBS" and previous_prefix in "BI":
        return f"{tag!r} {after} is not valid BIOES (an entity must end with E-)"
    return None


def _check_tags(sentence, scheme, allowed_prefixes):
    """Raises DataFormatError, naming file and line, on a malformed tag or (when `scheme` is
    given) a transition the scheme forbids."""
    previous_tag = None
    for line_number, tag in enumerate(sentence.tags, start=sentence.line):
        try:
            split_tag(tag, allowed_prefixes)
        except ValueError as error:
            raise DataFormatError(f"{sentence.source}:{line_number}: {error}") from None
        problem = scheme and _transition_error(previous_tag, tag, scheme)
        if problem:
            raise DataFormatError(f"{sentence.source}:{line_number}: {problem}")
        previous_tag = tag
    if scheme == "BIOES" and split_tag(previous_tag)[0] in "BI":
        last_line = sentence.line + len(sentence) - 1
        raise DataFormatError(
            f"{sentence.source}:{last_line}: the sentence ends inside entity {previous_tag!r} "
            "(BIOES entities end with E-)"
        )


def _resolve_scheme(scheme, convert_iob1):
    if scheme is not None:
        scheme = scheme.upper()
        if scheme not in SCHEMES:
            raise ValueError(f"scheme={scheme!r}: expected one of {SCHEMES} or None")
    if convert_iob1 and scheme not in (None, "IOB1"):
        raise ValueError(f"convert_iob1=True reads IOB1 data, but scheme={scheme!r} was given")
    return scheme


def read_column_file(
    path, tag_column=-1, word_column=0, num_columns=None, scheme=None, convert_iob1=False
):
    """Reads a column-formatted tagging file: one word per line, blank lines between sentences.

    Handles CoNLL-2003 (`word POS chunk NER`, tag last) and two-column `word tag` files, with
    columns separated by spaces or tabs. `-DOCSTART-` lines are skipped (they also end a
    sentence), `\\r\\n` line endings and a UTF-8 byte-order mark are accepted.

    Args:
        path: the file, UTF-8 encoded.
        tag_column: index of the tag column (negative counts from the end).
        word_column: index of the word column.
        num_columns: number of columns on every line; by default the first word line fixes it.
        scheme: `None` accepts any `O`/`B-`/`I-`/`E-`/`S-` tags without checking their order;
            `"IOB2"`, `"IOB1"` or `"BIOES"` also rejects prefixes and transitions the scheme
            forbids (e.g. `I-PER` after `O` in IOB2).
        convert_iob1: convert IOB1 tags to IOB2 while reading (only `O`/`B-`/`I-` allowed;
            valid IOB2 passes through unchanged). Needs `scheme` to be `None` or `"IOB1"`.

    Returns:
        A list of `TaggedSentence`, in file order.

    Raises:
        FileNotFoundError: `path` does not exist (the message names it).
        DataFormatError: invalid UTF-8, a line with another number of columns, a tag outside
            the scheme (each naming the file and line), or no sentence at all (naming the file).
        ValueError: contradicting arguments.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.conll")
    >>> with open(path, "w") as file:
    ...     _ = file.write("-DOCSTART- -X- -X- O\\n\\nEU NNP B-NP B-ORG\\nrejects VBZ B-VP O\\n")
    >>> [sentence] = read_column_file(path)
    >>> sentence.words, sentence.tags, sentence.line
    (('EU', 'rejects'), ('B-ORG', 'O'), 3)
    """
    scheme = _resolve_scheme(scheme, convert_iob1)
    sentences = _parse_file(path, num_columns, word_column, tag_column)
    if not sentences:
        raise DataFormatError(f"{path}: no sentences found (empty, or only blank/-DOCSTART- lines)")
    allowed_prefixes = "BI" if convert_iob1 else _PREFIXES_OF_SCHEME[scheme]
    for sentence in sentences:
        _check_tags(sentence, scheme, allowed_prefixes)
    if convert_iob1:
        sentences = [dataclasses.replace(s, tags=tuple(iob1_to_iob2(s.tags))) for s in sentences]
    return sentences
