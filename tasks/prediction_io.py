"""What every task's prediction input and output share: plain-text lines, format choice."""

import os
import sys

from tasks.atomic_files import write_text_atomically
from tasks.errors import DataFormatError
from tasks.line_reader import cleaned, read_lines
from tasks.text_cleaning import split_clean_words

INPUT_FORMATS = ("auto", "text", "data")
OUTPUT_FORMATS = ("auto", "conll", "jsonl")


def read_text_lines(path):
    """`(line number, stripped line)` of every non-blank line of a UTF-8 file.

    Prediction input, read as the exported model reads text: lines end in `\\n`,
    `\\r\\n` or `\\r`, a byte-order mark is dropped, invalid UTF-8 becomes U+FFFD
    (removed by the clean-up; one warning names the first place), and a line of
    only whitespace and control or format characters is blank. Lines are kept as
    written (character offsets index them); models clean them.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> _ = open(path, "w").write("Who is he ?\\n\\n  What time\\r\\n\\x07\\u200b\\n")
    >>> read_text_lines(path)
    [(1, 'Who is he ?'), (3, 'What time')]
    """
    if not os.path.isfile(path):
        raise DataFormatError(f"{path}: no such file")
    return [(number, line.strip()) for number, line in read_lines(path, "replace")
            if cleaned(line).strip()]


def looks_like_columns(path):
    """Whether the first 50 lines are whitespace columns (≥ 2, the same count on each)."""
    lines = [line for _, line in read_text_lines(path)[:50]]
    return bool(lines) and all(len(line.split()) >= 2 for line in lines) and \
        len({len(line.split()) for line in lines}) == 1


def wants_jsonl(output, output_format):
    """JSONL when asked, or with `auto` for a `.jsonl` file; CoNLL otherwise."""
    return output_format == "jsonl" or (output_format == "auto" and output.endswith(".jsonl"))


def read_word_input(path, input_format, read_columns):
    """Sentences to tag: `(words, source, line, document)` from plain text or a column file.

    Plain text is one sentence per line, cleaned and split into words as
    `tasks.text_cleaning.split_clean_words` does (what exported models do), and one
    document (`document` 0). With `input_format="data"`, or `"auto"` when the
    file looks like columns, `read_columns(path)` reads it and must return
    objects with `words`, `source`, `line` and `document` (their labels are
    not used).
    """
    if input_format == "data" or (input_format == "auto" and looks_like_columns(path)):
        return [(tuple(s.words), s.source, s.line, s.document) for s in read_columns(path)]
    sentences = [(tuple(split_clean_words(line)), path, number, 0)
                 for number, line in read_text_lines(path)]
    if not sentences:
        raise DataFormatError(f"{path}: no sentences found")
    return sentences


def write_output(output, lines):
    """Writes prediction lines to `output` atomically, or to standard output for "-"."""
    if output == "-":
        sys.stdout.writelines(lines)
        sys.stdout.flush()
    else:
        write_text_atomically(output, lines)
