"""JSON from users' files, read through one door: every way a JSON text can be unusable
(not JSON, not UTF-8, nested deeper than the parser goes, a field of the wrong type) is a
one-line `DataFormatError` naming the file, the line where there is one, and the field.

Python's parser recurses once per level of `[` or `{`: a document nested some thousand
levels deep (a few kilobytes of `[[[[…`) ends in `RecursionError`, which no reader may let
reach the user. No data or checkpoint file has more than a handful of levels, so such a
document is refused as what it is. `tests/tasks/io/test_json_text.py` keeps every reader
of the library on this module (no `json.load` elsewhere).
"""

import json

from nlpzoo.tasks.io.errors import DataFormatError, MissingDataFileError, PlacedError


class InvalidJson(PlacedError, DataFormatError):
    """A JSON text that cannot be used: its `place` (`path` or `path:LINE`) and the
    `problem`; the message is `place: problem`.

    Examples:
    >>> error = InvalidJson("corpus.jsonl:3", "not valid JSON: Expecting value (column 1)")
    >>> str(error), error.place, error.problem
    ('corpus.jsonl:3: not valid JSON: Expecting value (column 1)', 'corpus.jsonl:3', 'not valid JSON: Expecting value (column 1)')
    """


def parse_json(text, path, line=None, strict=True):
    """The value of the JSON `text`; `path` (and `line`) name its source in errors.

    Args:
        text: the JSON text (`str`, or UTF-8 `bytes`; a byte-order mark is dropped).
        path: the file it comes from (or what else holds it: `TF_CONFIG`).
        line: the 1-based line of a JSON-lines file that `text` is; None for a whole
            document (a syntax error then names its line in the document).
        strict: False accepts raw control characters inside strings (JSON lines
            written by hand or by tools that do not escape them).

    Raises:
        InvalidJson: not JSON, not UTF-8, or nested too deeply to read.

    Examples:
    >>> parse_json('{"text": "a"}', "data.jsonl", 1)
    {'text': 'a'}
    >>> parse_json('{"text": ', "data.jsonl", 2)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.json_text.InvalidJson: data.jsonl:2: not valid JSON: Expecting value (column 10)
    >>> parse_json("[" * 100_000, "deep.json")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.json_text.InvalidJson: deep.json: not valid JSON: nested too deeply ([ or { inside each other more times than a JSON reader here follows)
    """
    where = f"{path}:{line}" if line is not None else str(path)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise InvalidJson(where, f"not valid JSON: not UTF-8 text (byte {error.start}: "
                                     f"{error.reason})") from None
    try:
        return json.loads(text, strict=strict)
    except json.JSONDecodeError as error:
        at = f"{path}:{error.lineno}" if line is None else where
        raise InvalidJson(at, f"not valid JSON: {error.msg} (column {error.colno})") from None
    except RecursionError:
        raise InvalidJson(where, "not valid JSON: nested too deeply ([ or { inside each other "
                                 "more times than a JSON reader here follows)") from None


def read_json_file(path, expected=None, what="the file"):
    """The JSON value of the file `path` (of the type `expected`, when given).

    Raises:
        MissingDataFileError: no such file (`path: no such file`).
        InvalidJson: as `parse_json`, or a value of another type than `expected`.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.json")
    >>> _ = open(path, "w").write('["a", "b"]')
    >>> read_json_file(path, list)
    ['a', 'b']
    >>> read_json_file(path, dict, "the label file")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.json_text.InvalidJson: .../labels.json: expected the label file to hold a JSON object ({...}), found a list
    """
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except (FileNotFoundError, NotADirectoryError):
        raise MissingDataFileError(f"{path}: no such file") from None
    value = parse_json(raw, path)
    if expected is not None:
        expect_type(value, expected, str(path), what=what)
    return value


# Each JSON type: what an error says is expected, and what it says was found (bool
# before int: Python's True is an int, JSON's true is not a number).
_JSON_TYPES = ((bool, "true or false", "true or false"),
               (dict, "a JSON object ({...})", "an object"),
               (list, "a JSON list ([...])", "a list"), (str, "a string", "a string"),
               (int, "an integer", "a number"), (float, "a number", "a number"))


def _json_type_name(value):
    found = next((name for kind, _, name in _JSON_TYPES if isinstance(value, kind)), None)
    return found or ("null" if value is None else type(value).__name__)


def expect_type(value, expected, where, field=None, what=None):
    """`value` when it is of the type `expected` (a type or a tuple of types), else
    `InvalidJson` naming `where` and the `field` path (`model.vocab`). A JSON `true`
    is not a number here, though Python's `bool` is an `int`.

    Examples:
    >>> expect_type({"type": "BPE"}, dict, "tokenizer.json", "model")
    {'type': 'BPE'}
    >>> expect_type("BPE", dict, "tokenizer.json", "model")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.json_text.InvalidJson: tokenizer.json: expected "model" to be a JSON object ({...}), found a string
    >>> expect_type(True, (int, float), "config.json", "hidden_size")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.json_text.InvalidJson: config.json: expected "hidden_size" to be an integer or a number, found true or false
    """
    kinds = expected if isinstance(expected, tuple) else (expected,)
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return value
    expected_names = {kind: name for kind, name, _ in _JSON_TYPES}
    wanted = " or ".join(expected_names.get(kind, kind.__name__) for kind in kinds)
    subject = f'"{field}" to be' if field else f"{what or 'the file'} to hold"
    raise InvalidJson(where, f"expected {subject} {wanted}, found {_json_type_name(value)}")
