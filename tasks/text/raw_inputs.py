"""Telling raw Python inputs (texts, text pairs, word lists) from the tensors a model takes.

Task models take a dict of feature tensors (or a dataset of them); what a
user types is a list of strings, of `(text, text_pair)` tuples or of word
lists. `EncoderTaskModel.fit`, `evaluate` and `predict` send the latter
through their task (`Task.raw_examples`).
"""

import numpy as np


def _is_text(value):
    return isinstance(value, (str, np.str_))


def _is_raw_item(item):
    """A text, or a sequence of texts (a pair, a word list; an empty word list too)."""
    if _is_text(item):
        return True
    if isinstance(item, (list, tuple)) or (isinstance(item, np.ndarray) and item.ndim == 1):
        return all(_is_text(part) for part in item)
    return False


def is_raw_input(x):
    """Whether `x` is raw inputs: a non-empty list, tuple or numpy array of texts, of
    text pairs or of word lists (not a dict of features, a tensor or a dataset).

    Examples:
    >>> is_raw_input(["Who wrote War and Peace ?"]), is_raw_input([("a", "b")])
    (True, True)
    >>> is_raw_input(np.array([["EU", "rejects"]])), is_raw_input({"token_ids": [[2, 3]]})
    (True, False)
    >>> is_raw_input(np.array([[2, 3]])), is_raw_input([])
    (False, False)
    """
    if isinstance(x, np.ndarray):
        if x.size == 0:
            return False
        if x.dtype.kind in "US":
            return True
        return x.dtype.kind == "O" and _is_raw_item(x.reshape(len(x), -1)[0].tolist()
                                                     if x.ndim > 1 else x[0])
    return isinstance(x, (list, tuple)) and len(x) > 0 and _is_raw_item(x[0])


def raw_values(values):
    """`values` as plain Python: a list whose items are `str`, `int` or tuples of them
    (numpy strings and integers converted), for `Task.raw_examples`.

    Examples:
    >>> raw_values(np.array([["a", "b"]]))
    [('a', 'b')]
    >>> raw_values(np.array([2, 0])), raw_values(["x", ["y", "z"]])
    ([2, 0], ['x', ('y', 'z')])
    """
    def plain(value):
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if isinstance(value, (list, tuple)):
            return tuple(plain(part) for part in value)
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return value

    if isinstance(values, np.ndarray):
        values = values.tolist()
    return [plain(value) for value in values]


def label_name(value, labels, where):
    """The label name a raw target stands for: a name as it is, an integer id (numpy too)
    as `labels[id]`; `where` (e.g. "y[3]") starts the error for an id out of range.

    Unknown names are left to the task's pipeline, whose error lists the known ones.

    Examples:
    >>> label_name(1, ["ABBR", "DESC"], "y[0]"), label_name("HUM", ["ABBR"], "y[1]")
    ('DESC', 'HUM')
    >>> label_name(5, ["ABBR", "DESC"], "y[2]")
    Traceback (most recent call last):
    ...
    ValueError: y[2]: label id 5 is not in 0..1 (labels: ABBR, DESC)
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{where}: a label is a name or an id, not {value!r}")
    if isinstance(value, (int, np.integer)):
        if not 0 <= int(value) < len(labels):
            raise ValueError(f"{where}: label id {int(value)} is not in 0..{len(labels) - 1} "
                             f"(labels: {', '.join(labels)})")
        return labels[int(value)]
    return str(value)


def check_targets(inputs, targets):
    """Raises a `ValueError` unless `targets` is None or has one entry per input.

    >>> check_targets(["a", "b"], ["x"])
    Traceback (most recent call last):
    ...
    ValueError: 2 inputs but 1 labels (y)
    """
    if targets is not None and len(targets) != len(inputs):
        raise ValueError(f"{len(inputs)} inputs but {len(targets)} labels (y)")
