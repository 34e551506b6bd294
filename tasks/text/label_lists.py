"""The label set of a multi-label example, from a JSONL list or a CSV/TSV cell.

A multi-label example has any number of labels, none included. In JSONL
they are a list (`"labels": ["sports", "politics"]`, or `[]`); in a CSV/TSV
cell they are joined by a separator (`sports|politics`; an empty cell is no
label). Either way the result is a tuple of names in the order written,
without repeats, each stripped of surrounding spaces.
"""

from nlpzoo.tasks.io.errors import DataFormatError

DEFAULT_SEPARATOR = "|"


def _distinct(names):
    return tuple(dict.fromkeys(names))


def labels_from_json(value, where, key="labels"):
    """The label names of a JSONL record's `key` value: a list of strings (or integers).

    Args:
        value: the decoded JSON value.
        where: `path:line`, the start of the error's message.
        key: the record's key, for the message.

    Examples:
    >>> labels_from_json(["sports", " politics", "sports", 3], "a.jsonl:1")
    ('sports', 'politics', '3')
    >>> labels_from_json("sports", "a.jsonl:2")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: a.jsonl:2: 'labels' must be a list ... found 'sports'
    """
    if not isinstance(value, list):
        raise DataFormatError(f"{where}: {key!r} must be a list of label names (multi-label), "
                              f"found {value!r:.60}")
    names = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int)) or not str(item).strip():
            raise DataFormatError(f"{where}: {key!r} must hold label names (non-empty strings), "
                                  f"found {item!r:.60}")
        names.append(str(item).strip())
    return _distinct(names)


def labels_from_cell(cell, separator=DEFAULT_SEPARATOR):
    """The label names of a CSV/TSV cell: split on `separator`, empty parts dropped.

    Examples:
    >>> labels_from_cell("sports| politics |sports"), labels_from_cell("  ")
    (('sports', 'politics'), ())
    """
    if not separator:
        raise ValueError("the label separator must be a non-empty string")
    return _distinct(part.strip() for part in cell.split(separator) if part.strip())
