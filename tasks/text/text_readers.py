"""Readers of labelled texts and text pairs: TREC label files, the MRPC TSV, CSV/TSV with
named (or numbered) columns, and JSONL.

Classification reads its data here; the bi-encoder its pairs and sentence embedding its
examples' type (`ClassificationExample`).

Every reader returns a list of `ClassificationExample`; errors name the file and
the 1-based line. Files are streamed (`tasks.text.line_reader`); lines may end in
`\\n`, `\\r\\n` or `\\r`; a byte-order mark is dropped; lines of only whitespace
or control characters are blank and skipped; a text that is empty after BERT's
clean-up (`tasks.text.text_cleaning.clean_text`) is an error. Texts are kept as
written: the tokenizer cleans them. Which CSV/TSV columns or JSONL keys hold the
text, the text pair and the label: `tasks.text.columns.Columns`
(`--text_column`, `--text_pair_column`, `--label_column`).
"""

import dataclasses
import os

from nlpzoo.tasks.io.errors import DataFormatError, MissingDataFileError
from nlpzoo.tasks.io.json_text import parse_json
from nlpzoo.tasks.text.columns import Columns
from nlpzoo.tasks.text.delimited_rows import DELIMITERS, first_row, read_records
from nlpzoo.tasks.text.label_lists import DEFAULT_SEPARATOR, labels_from_cell, labels_from_json
from nlpzoo.tasks.text.line_reader import cleaned, read_lines
from nlpzoo.tasks.text.prediction_io import looks_like_columns

FORMATS = ("trec", "trec_fine", "mrpc", "csv", "tsv", "jsonl")
# The formats that hold several labels per example (a JSONL list, a CSV/TSV cell split on a
# separator), and the column or key they are in by default.
MULTI_LABEL_FORMATS = ("csv", "tsv", "jsonl")
MULTI_LABEL_KEY = "labels"
# How each format looks, for the error of a file that none of them reads.
_LOOKS = {"trec": 'trec ("LABEL:fine text")',
          "mrpc": "mrpc (tab-separated, header Quality...)",
          "csv": "csv/tsv (a header with the column names {names})",
          "jsonl": "jsonl ({{...}} records with {keys})"}

# A UTF-8 byte-order mark, and the same three bytes after a second round of
# UTF-8 encoding (how the MRPC release's header begins).
_BYTE_ORDER_MARKS = ("\ufeff", "\u00ef\u00bb\u00bf")


@dataclasses.dataclass(frozen=True)
class ClassificationExample:
    """One example: a text, an optional second text (pair tasks) and a label (multi-label
    examples: a tuple of label names, possibly empty; `tasks.text.label_lists`).

    Examples:
    >>> ClassificationExample("Who was Galileo ?", label="HUM").text_pair is None
    True
    """

    text: str
    label: str
    text_pair: str = None
    source: str = ""
    line: int = 0


def _read_lines(path, invalid_utf8="error"):
    """Yields (line_number, text), streamed (`tasks.text.line_reader.read_lines`).

    Invalid UTF-8 is an error naming the file, line and byte, except with
    `invalid_utf8="latin-1"` (TREC: `train_5500.label` has one Latin-1 byte,
    0xF0 on line 66, in the original release), which decodes such a line as
    Latin-1 (nothing is dropped) and warns once. A doubly encoded byte-order
    mark at the start (the MRPC release's) is dropped like a plain one.
    """
    if not os.path.isfile(path):
        raise MissingDataFileError(f"{path}: no such file")
    for number, text in read_lines(path, invalid_utf8):
        if number == 1:
            for mark in _BYTE_ORDER_MARKS:
                if text.startswith(mark):
                    text = text[len(mark):]
        yield number, text


def _is_blank(text):
    """Nothing but whitespace and characters the clean-up removes."""
    return not cleaned(text).strip()


def _check_text(text, path, number, what="a text"):
    """Raises unless `text` keeps a word after BERT's clean-up."""
    if _is_blank(text):
        raise DataFormatError(f"{path}:{number}: expected {what}, found "
                              f"{'only control or format characters' if text.strip() else 'none'}"
                              f" ({text[:20]!r})")


def read_trec(path, fine_labels=False):
    """Reads a TREC question file: `COARSE:fine question text` per line.

    Args:
        path: the `.label` file.
        fine_labels: use the 50 fine labels (`LOC:city`) instead of the 6
            coarse ones (`LOC`).
    """
    examples = []
    for number, line in _read_lines(path, invalid_utf8="latin-1"):
        if _is_blank(line):
            continue
        label, _, text = line.partition(" ")
        coarse, colon, fine = label.partition(":")
        if not colon or not coarse or not fine or _is_blank(text):
            raise DataFormatError(
                f"{path}:{number}: expected 'COARSE:fine question text', "
                f"found {line[:60]!r}"
            )
        examples.append(
            ClassificationExample(
                text=text.strip(),
                label=label if fine_labels else coarse,
                source=path,
                line=number,
            )
        )
    return _non_empty(examples, path)


def read_mrpc(path):
    """Reads the MRPC TSV: a header row, then `Quality  #1 ID  #2 ID  #1 String  #2 String`.

    Fields are split on tabs only; quotes are kept as text (the corpus has
    unbalanced quotes that a CSV reader would misread).
    """
    examples = []
    lines = _read_lines(path)
    header = next(lines, None)
    if header is None or not header[1].startswith("Quality"):
        raise DataFormatError(
            f"{path}:1: expected the MRPC header 'Quality\\t#1 ID\\t#2 ID\\t#1 String\\t#2 String'"
        )
    for number, line in lines:
        if _is_blank(line):
            continue
        fields = line.split("\t")
        if len(fields) != 5:
            raise DataFormatError(
                f"{path}:{number}: expected 5 tab-separated fields, found {len(fields)}"
            )
        if fields[0] not in ("0", "1"):
            raise DataFormatError(
                f"{path}:{number}: expected Quality 0 or 1, found {fields[0]!r}"
            )
        _check_text(fields[3], path, number, "a '#1 String'")
        _check_text(fields[4], path, number, "a '#2 String'")
        examples.append(
            ClassificationExample(
                text=fields[3], text_pair=fields[4], label=fields[0],
                source=path, line=number,
            )
        )
    return _non_empty(examples, path)


def read_jsonl(path, label_key="label", require_label=True, columns=None, multi_label=False):
    """Reads JSON lines with `text`, an optional `text_pair` and a label.

    Args:
        path: the `.jsonl` file.
        label_key: the field that holds the label (kept as text: `str()` of
            its value; a bi-encoder's graded score is read from "score").
        require_label: a record without `label_key` is an error; when False
            (prediction input) its label is "".
        columns: other keys (`tasks.text.columns.Columns`, names only): e.g.
            `Columns(text="sentence")` reads `{"sentence": ..., "label": ...}`.
        multi_label: the label is a list of names, read as a tuple
            (`tasks.text.label_lists.labels_from_json`); anything else is an error.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".jsonl")
    >>> _ = open(path, "w").write('{"sentence": "Hi there", "intent": "greet"}\\n')
    >>> [(e.text, e.label) for e in read_jsonl(path, columns=Columns("sentence", "intent"))]
    [('Hi there', 'greet')]
    """
    keys = (columns or Columns()).names(label_key)
    for role, key in keys.items():
        if isinstance(key, int):
            raise DataFormatError(f"{path}: JSONL records are read by key: --{role}_column "
                                  f"must be a name, not the index {key}")
    text_key, label_key = keys["text"], keys["label"]
    pair_key = keys.get("text_pair", "text_pair")
    examples = []
    for number, line in _read_lines(path):
        if _is_blank(line):
            continue
        record = parse_json(line, path, number, strict=False)  # raw control characters allowed
        if (not isinstance(record, dict) or text_key not in record
                or (require_label and label_key not in record)):
            wanted = f"{text_key!r} and {label_key!r}" if require_label else repr(text_key)
            found = f" (found {', '.join(map(repr, record))})" if isinstance(record, dict) else ""
            raise DataFormatError(f"{path}:{number}: expected an object with {wanted}{found}")
        text, pair = record[text_key], record.get(pair_key)
        if "text_pair" in keys and pair is None:
            raise DataFormatError(f"{path}:{number}: expected an object with {pair_key!r}")
        if not isinstance(text, str) or not (pair is None or isinstance(pair, str)):
            raise DataFormatError(f"{path}:{number}: {text_key!r} and {pair_key!r} must be "
                                  "strings")
        _check_text(text, path, number, f"a {text_key!r}")
        if pair is not None:
            _check_text(pair, path, number, f"a {pair_key!r}")
        if multi_label and label_key in record:
            label = labels_from_json(record[label_key], f"{path}:{number}", label_key)
        else:
            label = _single_label(record, label_key, path, number)
        examples.append(
            ClassificationExample(
                text=text, text_pair=pair, label=label, source=path, line=number,
            )
        )
    return _non_empty(examples, path)


def _single_label(record, key, path, number):
    """The record's label as a string ("" when it has none): a string, a number or true/
    false as written; null, a list or an object is an error naming the line, never a
    label spelt "None" or "['x']".

    >>> _single_label({"label": 3}, "label", "d.jsonl", 1), _single_label({}, "label", "d.jsonl", 2)
    ('3', '')
    >>> _single_label({"label": ["a", "b"]}, "label", "d.jsonl", 3)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: d.jsonl:3: "label" must be a string or a number, found a list (several labels per text: --multi_label)
    """
    if key not in record:
        return ""
    value = record[key]
    if isinstance(value, (str, int, float)):
        return str(value)
    found = "null" if value is None else "a list" if isinstance(value, list) else "an object"
    hint = " (several labels per text: --multi_label)" if isinstance(value, list) else ""
    raise DataFormatError(f'{path}:{number}: "{key}" must be a string or a number, found '
                          f"{found}{hint}")


def _non_empty(examples, path):
    if not examples:
        raise DataFormatError(f"{path}: no examples found")
    return examples


def read_delimited(path, data_format="csv", columns=None, label_key="label",
                   require_label=True, label_separator=None):
    """Reads a CSV or TSV file's examples from its columns (`tasks.text.columns`).

    Args:
        path: the file.
        data_format: "csv" or "tsv".
        columns: which columns (a `Columns`; by default the header's `text`,
            `label` and, when present, `text_pair`).
        label_key: the label column's name when `columns` gives none.
        require_label: when False (prediction input) a file without the label
            column is read, every label "".
        label_separator: multi-label: each label cell is split on it into a tuple
            of names (`tasks.text.label_lists.labels_from_cell`; an empty cell is
            no label); None: the cell is one label, which must not be empty.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".csv")
    >>> _ = open(path, "w").write('text,label\\n"Who wrote ""Hamlet"", and when ?",HUM\\n')
    >>> [(e.text, e.label, e.line) for e in read_delimited(path)]
    [('Who wrote "Hamlet", and when ?', 'HUM', 2)]
    """
    if not os.path.isfile(path):
        raise MissingDataFileError(f"{path}: no such file")
    examples = []
    for number, record in read_records(path, data_format, columns, label_key, require_label):
        for role in ("text", "text_pair"):
            if role in record:
                _check_text(record[role], path, number, f"a {role}")
        label = record.get("label", "").strip()
        if label_separator is not None and "label" in record:
            label = labels_from_cell(label, label_separator)
        elif require_label and not label:
            raise DataFormatError(f"{path}:{number}: expected a label, found none")
        examples.append(ClassificationExample(
            text=record["text"], text_pair=record.get("text_pair"), label=label,
            source=path, line=number))
    return examples


def _header_names(path, delimiter):
    """The first row's fields as column names, when it has two or more."""
    row = first_row(path, delimiter)
    return [name.strip() for name in row] if row and len(row) >= 2 else []


def _named_columns(columns, label_key):
    """The column names a header must have (the text and label, unless given by index)."""
    return [name for name in (columns or Columns()).names(label_key).values()
            if not isinstance(name, int)]


def infer_format(path, columns=None, tried=FORMATS, what="classification", label_key="label"):
    """Guesses the format from the file name, then from the first line: JSON, the MRPC or
    a CSV/TSV header naming the columns, a TREC label. A file none of `tried` reads is a
    `DataFormatError` saying how each looks, what line 1 is and, when it looks like
    CoNLL columns or a header-less table, what reads it.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".txt")
    >>> _ = open(path, "w").write("sentence\\tlabel\\nHi there\\tgreet\\n")
    >>> infer_format(path, Columns(text="sentence"))
    'tsv'
    """
    name = os.path.basename(path).lower()
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    if name.endswith(".label") and "trec" in tried:
        return "trec"
    first = next(_read_lines(path, invalid_utf8="latin-1"), (0, ""))[1]
    if first.startswith("Quality\t") and "mrpc" in tried:
        return "mrpc"
    for data_format in ("csv", "tsv"):
        if name.endswith("." + data_format) and data_format in tried:
            return data_format
    if first.lstrip().startswith("{"):
        return "jsonl"
    named = _named_columns(columns, label_key)
    for data_format in ("tsv", "csv"):  # a tab-separated header may hold commas in its names
        header = _header_names(path, DELIMITERS[data_format])
        if data_format in tried and named and all(column in header for column in named):
            return data_format
    if "trec" in tried and _looks_like_trec(first):
        return "trec"
    raise DataFormatError(_not_readable(path, first, tried, what, named, label_key))


def _looks_like_trec(line):
    """`COARSE:fine text`: an upper-case class, a colon, then the question."""
    head = line.partition(" ")[0]
    return ":" in head and head.split(":")[0].isupper()


def _not_readable(path, first, tried, what, named, label_key):
    """The message of a file that no format reads: what was tried and what line 1 is."""
    looks = [_LOOKS[data_format].format(names=", ".join(named) or "text, label",
                                        keys=f"'text' and {label_key!r}")
             for data_format in tried if data_format in _LOOKS]
    hint = ""
    if _looks_like_trec(first):
        hint = " (it looks like TREC questions: --task=classification reads those)"
    elif looks_like_columns(path):
        hint = " (it looks like CoNLL columns: --task=tagging reads those)"
    elif any(len(_header_names(path, delimiter)) >= 2 for delimiter in DELIMITERS.values()):
        hint = (" (it looks like a table: name its columns with --text_column and "
                "--label_column, as header names or 0-based indices, and --data_format=csv "
                "or tsv)")
    return (f"{path}: not a {what} file: tried {', '.join(looks)}; line 1 is "
            f"{first[:80]!r}{hint}")


def read_examples(path, data_format=None, columns=None, multi_label=False,
                  label_separator=DEFAULT_SEPARATOR):
    """Reads `path` in `data_format` (inferred when None), with `columns` for CSV, TSV and
    JSONL (`tasks.text.columns.Columns`).

    With `multi_label`, each example's label is a tuple of names: a JSONL list, or a
    CSV/TSV cell split on `label_separator`; their column (key) is `labels` unless
    `columns` names another, and TREC and MRPC files (one label each) are refused.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".csv")
    >>> _ = open(path, "w").write("text,labels\\nRain and goals,weather|sports\\nHi,\\n")
    >>> [e.label for e in read_examples(path, multi_label=True)]
    [('weather', 'sports'), ()]
    """
    if multi_label:
        data_format = data_format or infer_format(path, columns, tried=MULTI_LABEL_FORMATS,
                                                  what="multi-label", label_key=MULTI_LABEL_KEY)
        if data_format not in MULTI_LABEL_FORMATS:
            raise DataFormatError(f"{path}: multi-label examples are read from "
                                  f"{', '.join(MULTI_LABEL_FORMATS)} files, not {data_format} "
                                  "(one label per example)")
        if data_format == "jsonl":
            return read_jsonl(path, MULTI_LABEL_KEY, columns=columns, multi_label=True)
        return read_delimited(path, data_format, columns, MULTI_LABEL_KEY,
                              label_separator=label_separator)
    data_format = data_format or infer_format(path, columns)
    if data_format == "trec":
        return read_trec(path)
    if data_format == "trec_fine":
        return read_trec(path, fine_labels=True)
    if data_format == "mrpc":
        return read_mrpc(path)
    if data_format in DELIMITERS:
        return read_delimited(path, data_format, columns)
    if data_format == "jsonl":
        return read_jsonl(path, columns=columns)
    raise ValueError(f"unknown data format {data_format!r}; expected one of {FORMATS}")
