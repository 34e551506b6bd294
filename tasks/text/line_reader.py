"""The lines of a UTF-8 text file, streamed: what every data reader starts from.

One definition of a line for every reader: `\\n`, `\\r\\n` and a lone `\\r`
(old Mac) each end a line, and nothing else does (not U+2028, U+0085 or the
other characters `str.splitlines` would also split at, so line numbers are
the ones an editor shows). A UTF-8 byte-order mark at the start is dropped.
A file ending without a final newline loses nothing.

The file is read in blocks of `BLOCK_BYTES` and never held whole, and a line
longer than `MAX_LINE_BYTES` (1 MiB) is an error naming the file and the line
(`DataFormatError`), raised once that many bytes of it are read: memory stays
bounded by the block and the line limit, whatever the file holds. No data set
of the project comes near the limit (the longest lines of ../shared/data: 3,443
bytes in WikiText-2, 463 in MRPC; a 1 MiB line is some 180,000 words); a file
holding one long line is something else (e.g. a JSON document, not JSON lines)
or needs splitting into sentences or paragraphs.

Invalid UTF-8 is an error naming the file, the line and the byte offset
(`DataFormatError`); with `invalid_utf8="replace"` (sniffing a file's format) each
bad byte sequence becomes U+FFFD, which `tasks.text.text_cleaning.clean_text` then
removes, and one warning names the first place. `"latin-1"` decodes each line that
is not UTF-8 as Latin-1 (every byte a character, none lost), with the same warning:
for prediction input (a file saved in a single-byte encoding keeps its letters) and
releases known to hold such lines (TREC's `train_5500.label`).
"""

import logging
import re

from nlpzoo.tasks.io.errors import DataFormatError, MissingDataFileError
from nlpzoo.tasks.text.text_cleaning import REPLACEMENT_CHARACTER, clean_text

BLOCK_BYTES = 1 << 20
MAX_LINE_BYTES = 1 << 20  # the longest line (its bytes, less the line break) any reader takes
_UTF8_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_BREAK_BYTES = re.compile(rb"\r\n|\r|\n")
INVALID_UTF8_POLICIES = ("error", "replace", "latin-1")


class _LineTooLong(Exception):
    """The line after the blocks yielded so far is longer than the limit."""


def _blocks(file, max_line_bytes):
    """Yields byte blocks of `file` that end at a line break (or at the end of the file).

    A block never ends on a `\\r` whose `\\n` may follow in the next read, and never
    inside a UTF-8 character (its bytes are all >= 0x80, never a line break). A line
    still without its break after `max_line_bytes` bytes raises `_LineTooLong`: while a
    long line is pending, reads stop one byte past the limit, so that no more of it is
    ever held. (A line in a block can still be longer: `_check_line_lengths`.)
    """
    pending = b""
    while True:
        data = file.read(max(1, min(BLOCK_BYTES, max_line_bytes + 1 - len(pending))))
        if not data:
            break
        data = pending + data
        cut = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1
        if cut == 0:  # no line break yet: one long line, keep reading
            if len(data) - data.endswith(b"\r") > max_line_bytes:
                raise _LineTooLong()
            pending = data
            continue
        pending = data[cut:]
        yield data[:cut]
    if pending:
        yield pending


def too_long_message(path, line, max_line_bytes=MAX_LINE_BYTES, what="a line"):
    """The one message for a line (or a CSV field, `what`) over the limit of every reader.

    >>> too_long_message("data.csv", 3, what="a field")
    'data.csv:3: a field longer than 1,048,576 bytes (the most a line of data may hold: one sentence, text or paragraph per line); split it'
    """
    return (f"{path}:{line}: {what} longer than {max_line_bytes:,} bytes (the most a line of "
            "data may hold: one sentence, text or paragraph per line); split it")


def _check_line_lengths(path, block, first_line, max_line_bytes):
    """`DataFormatError` for the first line of `block` longer than `max_line_bytes`."""
    if len(block) <= max_line_bytes:  # the usual block: no line in it can be too long
        return
    for index, line in enumerate(_LINE_BREAK_BYTES.split(block)):
        if len(line) > max_line_bytes:
            raise DataFormatError(too_long_message(path, first_line + index, max_line_bytes))


def _invalid_utf8_message(path, block, first_line, block_offset, error):
    """`path:LINE: ...` for the undecodable byte at `error.start` of `block`."""
    before = block[: error.start]
    breaks = list(_LINE_BREAK_BYTES.finditer(before))
    line = first_line + len(breaks)
    line_start = breaks[-1].end() if breaks else 0
    bad = block[error.start:error.end]
    return (f"{path}:{line}: not valid UTF-8: found byte(s) {bad.hex(' ')} at byte "
            f"{error.start - line_start} of the line (byte {block_offset + error.start} of "
            f"the file; {error.reason}); expected UTF-8 text: convert the file "
            "(e.g. iconv -f latin1 -t utf-8)")


def _decode_leniently(block, invalid_utf8):
    if invalid_utf8 == "replace":
        return block.decode("utf-8", errors="replace")
    lines = _LINE_BREAK_BYTES.split(block)
    breaks = [match.group() for match in _LINE_BREAK_BYTES.finditer(block)] + [b""]
    decoded = []
    for line, line_break in zip(lines, breaks):
        try:
            decoded.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            decoded.append(line.decode("latin-1"))
        decoded.append(line_break.decode("ascii"))
    return "".join(decoded)


def read_lines(path, invalid_utf8="error"):
    """Yields `(line_number, text)` for every line of a UTF-8 file, without its line break.

    Lines are numbered from 1; blank lines are yielded too (readers decide what they
    mean). A file ending in a line break has no empty last line after it.

    Args:
        path: the file.
        invalid_utf8: `"error"` (training and evaluation data), `"replace"`
            (prediction input: U+FFFD per bad sequence) or `"latin-1"` (a line that is
            not UTF-8 is decoded as Latin-1); both with one warning per file.

    Raises:
        MissingDataFileError: no such file (a `DataFormatError` and a `FileNotFoundError`).
        DataFormatError: the file cannot be read, a line is longer than `MAX_LINE_BYTES`
            (naming the file and the line), or (with `"error"`) invalid UTF-8, naming
            the file, the line and the byte offsets in the line and in the file.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "lines.txt")
    >>> with open(path, "wb") as file:
    ...     _ = file.write(b"\\xef\\xbb\\xbfEU\\r\\nrejects\\rGerman\\n\\ncall\\xe2\\x80\\xa8s")
    >>> list(read_lines(path))
    [(1, 'EU'), (2, 'rejects'), (3, 'German'), (4, ''), (5, 'call\\u2028s')]
    >>> with open(path, "wb") as file:
    ...     _ = file.write(b"ok\\nna\\xefve\\n")
    >>> list(read_lines(path))
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: ...lines.txt:2: not valid UTF-8: found byte(s) ef at byte 2
    of the line (byte 5 of the file; invalid continuation byte); expected UTF-8 text: ...
    """
    if invalid_utf8 not in INVALID_UTF8_POLICIES:
        raise ValueError(f"invalid_utf8 must be one of {INVALID_UTF8_POLICIES}, "
                         f"got {invalid_utf8!r}")
    try:
        file = open(path, "rb")
    except FileNotFoundError:
        raise MissingDataFileError(f"{path}: no such file") from None
    except OSError as error:
        raise DataFormatError(f"{path}: cannot read: {error.strerror}") from None
    max_line_bytes = MAX_LINE_BYTES
    with file:
        line_number, offset, first_problem = 1, 0, None
        blocks = _blocks(file, max_line_bytes)
        while True:
            try:
                block = next(blocks, None)
            except _LineTooLong:
                raise DataFormatError(too_long_message(path, line_number, max_line_bytes)
                                      ) from None
            if block is None:
                break
            _check_line_lengths(path, block, line_number, max_line_bytes)
            start = 0
            if offset == 0 and block.startswith(_UTF8_BOM):
                start = len(_UTF8_BOM)
            try:
                text = block[start:].decode("utf-8")
            except UnicodeDecodeError as error:
                error.start, error.end = error.start + start, error.end + start
                message = _invalid_utf8_message(path, block, line_number, offset, error)
                if invalid_utf8 == "error":
                    raise DataFormatError(message) from None
                first_problem = first_problem or message
                text = _decode_leniently(block[start:], invalid_utf8)
            lines = _LINE_BREAK.split(text)
            if lines[-1] == "":  # the block ended with a line break
                lines.pop()
            for line in lines:
                yield line_number, line
                line_number += 1
            offset += len(block)
        if first_problem:
            what = ("invalid bytes became U+FFFD, which the clean-up removes"
                    if invalid_utf8 == "replace" else "such lines were decoded as Latin-1")
            logging.warning("%s (the first); %s", first_problem.split("; expected UTF-8")[0],
                            what)


def cleaned(text):
    """`tasks.text.text_cleaning.clean_text(text)`, without a loop over the characters of the
    (usual) text that holds nothing to remove.

    Every removed character is a control or format character (not printable) or U+FFFD,
    so a printable text without U+FFFD is returned as it is.

    Examples:
    >>> cleaned("Black\\u200bburn"), cleaned("Blackburn 🙂")
    ('Blackburn', 'Blackburn 🙂')
    """
    if text.isprintable() and REPLACEMENT_CHARACTER not in text:
        return text
    return clean_text(text)
