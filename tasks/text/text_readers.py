"""Readers of labelled texts and text pairs: TREC label files, the MRPC TSV and JSONL.

Classification reads its data here; the bi-encoder its pairs and sentence embedding its
examples' type (`ClassificationExample`).

Every reader returns a list of `ClassificationExample`; errors name the file and
the 1-based line. Files are streamed (`tasks.text.line_reader`); lines may end in
`\\n`, `\\r\\n` or `\\r`; a byte-order mark is dropped; lines of only whitespace
or control characters are blank and skipped; a text that is empty after BERT's
clean-up (`tasks.text.text_cleaning.clean_text`) is an error. Texts are kept as
written: the tokenizer cleans them.
"""

import dataclasses
import json
import os

from nlpzoo.tasks.io.errors import DataFormatError, MissingDataFileError
from nlpzoo.tasks.text.line_reader import cleaned, read_lines

FORMATS = ("trec", "trec_fine", "mrpc", "jsonl")

# A UTF-8 byte-order mark, and the same three bytes after a second round of
# UTF-8 encoding (how the MRPC release's header begins).
_BYTE_ORDER_MARKS = ("\ufeff", "\u00ef\u00bb\u00bf")


@dataclasses.dataclass(frozen=True)
class ClassificationExample:
    """One example: a text, an optional second text (pair tasks) and a label.

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


def read_jsonl(path, label_key="label", require_label=True):
    """Reads JSON lines with `text`, an optional `text_pair` and a label.

    Args:
        path: the `.jsonl` file.
        label_key: the field that holds the label (kept as text: `str()` of
            its value; a bi-encoder's graded score is read from "score").
        require_label: a record without `label_key` is an error; when False
            (prediction input) its label is "".
    """
    examples = []
    for number, line in _read_lines(path):
        if _is_blank(line):
            continue
        try:
            record = json.loads(line, strict=False)  # raw control characters allowed
        except json.JSONDecodeError as error:
            raise DataFormatError(f"{path}:{number}: not valid JSON: {error.msg}")
        if (not isinstance(record, dict) or "text" not in record
                or (require_label and label_key not in record)):
            wanted = f"'text' and {label_key!r}" if require_label else "'text'"
            raise DataFormatError(f"{path}:{number}: expected an object with {wanted}")
        pair = record.get("text_pair")
        if not isinstance(record["text"], str) or not (pair is None or isinstance(pair, str)):
            raise DataFormatError(f"{path}:{number}: 'text' and 'text_pair' must be strings")
        _check_text(record["text"], path, number, "a 'text'")
        if pair is not None:
            _check_text(pair, path, number, "a 'text_pair'")
        label = str(record[label_key]) if label_key in record else ""
        examples.append(
            ClassificationExample(
                text=record["text"], text_pair=pair, label=label, source=path, line=number,
            )
        )
    return _non_empty(examples, path)


def _non_empty(examples, path):
    if not examples:
        raise DataFormatError(f"{path}: no examples found")
    return examples


def infer_format(path):
    """Guesses the format from the file name, then from the first line."""
    name = os.path.basename(path).lower()
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    if name.endswith(".label"):
        return "trec"
    first = next(_read_lines(path, invalid_utf8="latin-1"), (0, ""))[1]
    if first.startswith("Quality\t"):
        return "mrpc"
    if first.lstrip().startswith("{"):
        return "jsonl"
    head = first.partition(" ")[0]
    if ":" in head and head.split(":")[0].isupper():
        return "trec"
    raise DataFormatError(
        f"{path}: cannot tell the data format; pass --data_format (one of {', '.join(FORMATS)})"
    )


def read_examples(path, data_format=None):
    """Reads `path` in `data_format` (inferred when None)."""
    data_format = data_format or infer_format(path)
    if data_format == "trec":
        return read_trec(path)
    if data_format == "trec_fine":
        return read_trec(path, fine_labels=True)
    if data_format == "mrpc":
        return read_mrpc(path)
    if data_format == "jsonl":
        return read_jsonl(path)
    raise ValueError(f"unknown data format {data_format!r}; expected one of {FORMATS}")
