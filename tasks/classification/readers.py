"""Readers for text classification data: TREC label files, the MRPC TSV and JSONL.

Every reader returns a list of `ClassificationExample`; errors name the file and
the 1-based line.
"""

import dataclasses
import json
import logging
import os

from tasks.errors import DataFormatError

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


def _read_lines(path):
    """Yields (line_number, text) decoding each line as UTF-8.

    A line that is not valid UTF-8 is decoded as Latin-1 (every byte is a
    character, so nothing is dropped) and reported once per file: TREC's
    `train_5500.label` has one such byte (0xF0 on line 66) in the original release.
    """
    if not os.path.isfile(path):
        raise DataFormatError(f"{path}: no such file")
    fallback_lines = []
    try:
        with open(path, "rb") as f:
            raw_lines = f.read().split(b"\n")
    except OSError as error:
        raise DataFormatError(f"{path}: cannot read: {error.strerror}")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
            fallback_lines.append(number)
        if number == 1:
            for mark in _BYTE_ORDER_MARKS:
                if text.startswith(mark):
                    text = text[len(mark):]
        yield number, text.rstrip("\r")
    if fallback_lines:
        logging.warning(
            "%s: line(s) %s are not valid UTF-8; decoded them as Latin-1",
            path,
            ", ".join(map(str, fallback_lines[:10])),
        )


def read_trec(path, fine_labels=False):
    """Reads a TREC question file: `COARSE:fine question text` per line.

    Args:
        path: the `.label` file.
        fine_labels: use the 50 fine labels (`LOC:city`) instead of the 6
            coarse ones (`LOC`).
    """
    examples = []
    for number, line in _read_lines(path):
        if not line.strip():
            continue
        label, _, text = line.partition(" ")
        coarse, colon, fine = label.partition(":")
        if not colon or not coarse or not fine or not text.strip():
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
        if not line.strip():
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
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataFormatError(f"{path}:{number}: not valid JSON: {error.msg}")
        if (not isinstance(record, dict) or "text" not in record
                or (require_label and label_key not in record)):
            wanted = f"'text' and {label_key!r}" if require_label else "'text'"
            raise DataFormatError(f"{path}:{number}: expected an object with {wanted}")
        pair = record.get("text_pair")
        if not isinstance(record["text"], str) or not (pair is None or isinstance(pair, str)):
            raise DataFormatError(f"{path}:{number}: 'text' and 'text_pair' must be strings")
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
    first = next(_read_lines(path), (0, ""))[1]
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
