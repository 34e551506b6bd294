"""Reading texts one by one: plain text (one per line), JSON lines with a "text" field,
or WikiText (one text per line, cleaned as pretraining's corpus reader cleans it).

What sentence embeddings embed and fill-mask fills in (and evaluates on).

All skip blank lines; every text keeps its file and 1-based line, and
errors name them (`path:LINE: what is wrong`). Text and JSONL lines are read as
prediction input is (`tasks.text.prediction_io.read_text_lines`): invalid UTF-8
becomes U+FFFD, removed by the clean-up, with a warning; a JSONL "text" that is
empty after the clean-up is an error. WikiText is read as the pretraining corpus
is (`tasks.text.corpus`), where invalid UTF-8 is an error naming the line and byte.
"""

import dataclasses
import os

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.io.json_text import InvalidJson, parse_json
from nlpzoo.tasks.text.corpus import wikitext_texts
from nlpzoo.tasks.text.line_reader import cleaned, read_lines
from nlpzoo.tasks.text.prediction_io import read_text_lines

FORMATS = ("text", "jsonl", "wikitext")


@dataclasses.dataclass(frozen=True)
class Sentence:
    """One text to embed, and where it was read.

    Examples:
    >>> Sentence("A cat sat.", source="in.txt", line=3)
    Sentence(text='A cat sat.', source='in.txt', line=3)
    """

    text: str
    source: str = ""
    line: int = 0


def infer_format(path):
    """"jsonl" for a `.jsonl`/`.json` file or one whose first line is a JSON object, else "text".

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".txt")
    >>> _ = open(path, "w").write('{"text": "hi"}\\n')
    >>> infer_format(path), infer_format("x.jsonl")
    ('jsonl', 'jsonl')
    """
    if path.lower().endswith((".jsonl", ".json")):
        return "jsonl"
    # The first non-blank line decides: read no further.
    first = next((line.strip() for _, line in read_lines(path, "replace")
                  if cleaned(line).strip()), "")
    if first.startswith("{"):
        try:
            return "jsonl" if isinstance(parse_json(first, path, strict=False), dict) else "text"
        except InvalidJson:
            return "text"
    return "text"


def read_sentences(path, data_format=None):
    """The texts of `path`, in file order (blank lines skipped).

    Args:
        path: a UTF-8 file: one text per line ("text"), or JSON lines, each
            an object with a string "text" (other fields ignored; "jsonl"),
            or WikiText ("wikitext": its lines as `tools/pretrain.py
            --corpus_format=wikitext` reads them, `tasks.text.corpus.wikitext_texts`:
            headings dropped, `@-@` and the other escapes undone, `<unk>`
            removed; a model pretrained on cleaned WikiText is evaluated on
            the same kind of text).
        data_format: one of `FORMATS`; inferred when None (`infer_format`:
            "jsonl" or "text"; "wikitext" is never guessed).

    Returns:
        A list of `Sentence`, at least one.

    Raises:
        DataFormatError: no such file, a line that is not a JSON object with
            a string "text", or no text at all; the message names the file
            and line.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".jsonl")
    >>> _ = open(path, "w").write('{"text": "A cat."}\\n\\n{"id": 2, "text": "Dogs."}\\n')
    >>> [(s.text, s.line) for s in read_sentences(path)]
    [('A cat.', 1), ('Dogs.', 3)]
    """
    if data_format is None:
        if not os.path.isfile(path):
            raise DataFormatError(f"{path}: no such file")
        data_format = infer_format(path)
    if data_format not in FORMATS:
        raise ValueError(f"unknown data format {data_format!r}; expected one of "
                         f"{', '.join(FORMATS)}")
    if data_format == "wikitext":
        sentences = [Sentence(text, path, number) for number, text in wikitext_texts(path)]
        if not sentences:
            raise DataFormatError(f"{path}: no texts found (the file is empty or holds "
                                  "only headings)")
        return sentences
    lines = read_text_lines(path)
    if data_format == "text":
        sentences = [Sentence(line, path, number) for number, line in lines]
    else:
        sentences = [Sentence(_jsonl_text(line, path, number), path, number)
                     for number, line in lines]
    if not sentences:
        raise DataFormatError(f"{path}: no texts found (the file is empty or blank)")
    return sentences


def _jsonl_text(line, path, number):
    record = parse_json(line, path, number, strict=False)  # raw control characters allowed
    if not isinstance(record, dict) or "text" not in record:
        raise DataFormatError(f"{path}:{number}: expected a JSON object with a \"text\" field")
    if not isinstance(record["text"], str):
        raise DataFormatError(f"{path}:{number}: \"text\" must be a string, got "
                              f"{type(record['text']).__name__}")
    if not cleaned(record["text"]).strip():
        raise DataFormatError(f"{path}:{number}: expected a \"text\" with words, found "
                              f"{record['text'][:20]!r}")
    return record["text"]
