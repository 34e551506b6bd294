"""Which fields of a CSV, TSV or JSONL file hold the text, the text pair and the label.

`--text_column`, `--text_pair_column` and `--label_column` (tools/train.py) each take
a header name (`sentence`) or a 0-based index (`1`); a JSONL record is read by key,
so there they are names only. Left out, the text is the column named `text`, the label
the one named `label` (the bi-encoder's cosine objective: `score`), and a column
named `text_pair`, when there is one, makes the examples pairs.

The header rule of a CSV/TSV file (`header_row`), one of two cases:

- some column is given by name (the defaults are names): the first row is the
  header and must name every such column;
- every column is given by index: the first row is a header when its label cell
  is not the label of any other row (a header's `label` is not a class; a real
  first example's class comes back further down). Without a label column
  (texts to predict) a file read by index has no header.
"""

import dataclasses

from nlpzoo.tasks.io.errors import DataFormatError


def _column(value):
    """A flag's value as a column: an int for a 0-based index, else the name (None stays)."""
    if value is None or isinstance(value, int):
        return value
    value = str(value).strip()
    return int(value) if value.isdigit() else value


@dataclasses.dataclass(frozen=True)
class Columns:
    """The text, text-pair and label columns: names, 0-based indices, or None (the default).

    Examples:
    >>> columns = Columns.from_flags("sentence", None, "2")
    >>> columns.text, columns.label, columns.text_pair
    ('sentence', 2, None)
    >>> columns.indices(["id", "sentence", "label"], default_label="label")
    {'text': 1, 'label': 2}
    >>> Columns().indices(["text", "label", "text_pair"], default_label="label")
    {'text': 0, 'label': 1, 'text_pair': 2}
    """

    text: object = None
    label: object = None
    text_pair: object = None

    @classmethod
    def from_flags(cls, text_column=None, text_pair_column=None, label_column=None):
        """From the flags' strings: digits are an index, anything else a name."""
        return cls(text=_column(text_column), label=_column(label_column),
                   text_pair=_column(text_pair_column))

    def given(self):
        """Whether any column was given (not every one left to its default)."""
        return any(value is not None for value in dataclasses.astuple(self))

    def by_index(self):
        """Whether the text column and every other one given are indices (no name to find
        in a header)."""
        return isinstance(self.text, int) and all(
            isinstance(value, (int, type(None))) for value in (self.label, self.text_pair))

    def names(self, default_label):
        """{role: name or index} of the columns read, defaults filled in (the pair only when
        given)."""
        names = {"text": "text" if self.text is None else self.text,
                 "label": default_label if self.label is None else self.label}
        if self.text_pair is not None:
            names["text_pair"] = self.text_pair
        return names

    def indices(self, header, default_label, label_required=True, where=""):
        """{role: 0-based index} of the columns read, resolved against `header` (a list of
        names; None for a file read by index). A missing name is a `DataFormatError`
        naming it and what the header has; so is a missing label when it is required. A
        column named `text_pair` is read when no pair column was given."""
        wanted = self.names(default_label)
        if header is not None and self.text_pair is None and "text_pair" in header:
            wanted["text_pair"] = "text_pair"
        resolved = {}
        for role, column in wanted.items():
            if isinstance(column, int):
                resolved[role] = column
            elif header is not None and column in header:
                positions = [index for index, name in enumerate(header) if name == column]
                if len(positions) > 1:
                    raise DataFormatError(
                        f"{where}the header names {len(positions)} columns {column!r} (columns "
                        f"{' and '.join(str(index) for index in positions)}, 0-based): which "
                        f"to read is ambiguous; rename one, or give --{role}_column as a "
                        "0-based index")
                resolved[role] = positions[0]
            elif role == "label" and not label_required:
                continue
            elif header is None:
                raise DataFormatError(f"{where}no {role} column: give --{role}_column "
                                      "(a 0-based index, the file has no header)")
            else:
                raise DataFormatError(
                    f"{where}no column named {column!r}; the header has: {', '.join(header)} "
                    f"(give --{role}_column as a name from it, or as a 0-based index)")
        return resolved
