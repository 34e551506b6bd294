"""The records of a CSV or TSV file, by column role (text, text pair, label), with line numbers.

Fields are parsed by Python's `csv` module: a quoted field may hold the
delimiter, quotes (doubled) and line breaks. Lines come from
`tasks.text.line_reader` (one definition of a line, a byte-order mark dropped,
invalid UTF-8 an error naming the line); blank lines are skipped. A field may be as
long as a line may (`MAX_LINE_BYTES`, the one limit of every reader; the `csv` module's
own default, 131,072 characters, is not a property of the data). Which row is a
header and which columns are read: `tasks.text.columns`.
"""

import csv

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.columns import Columns
from nlpzoo.tasks.text.line_reader import MAX_LINE_BYTES, read_lines, too_long_message

DELIMITERS = {"csv": ",", "tsv": "\t"}


def _rows(path, delimiter, invalid_utf8="error"):
    """Yields (first line number, fields) of every non-blank row."""
    numbered = read_lines(path, invalid_utf8)
    state = {"line": 0}

    def lines():  # the csv module wants each line with its break (a quoted one spans lines)
        for number, text in numbered:
            state["line"] = number
            yield text + "\n"

    reader = csv.reader(lines(), delimiter=delimiter)
    start = 1
    while True:
        # The limit is the csv module's, for every reader in the process: ours while a row
        # of ours is parsed, the caller's again after.
        previous_limit = csv.field_size_limit(MAX_LINE_BYTES)
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            if "field larger than field limit" in str(error):
                raise DataFormatError(too_long_message(path, start, what="a field")) from None
            raise DataFormatError(f"{path}:{start}: not valid CSV: {error}") from None
        finally:
            csv.field_size_limit(previous_limit)
        if any(field.strip() for field in fields):
            yield start, fields
        start = state["line"] + 1


def first_row(path, delimiter):
    """The fields of the first non-blank row (None for an empty file); used to guess a
    format from its header.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".csv")
    >>> _ = open(path, "w").write('\\ntext,label\\n"a, b",X\\n')
    >>> first_row(path, ",")
    ['text', 'label']
    """
    for _, fields in _rows(path, delimiter, invalid_utf8="replace"):
        return fields
    return None


def _is_header(rows, label_index):
    """The rule for files read by index: the first row's label is no other row's label."""
    if label_index is None or len(rows) < 2:
        return False
    first = rows[0][1]
    if label_index >= len(first):
        return False
    labels = {fields[label_index].strip() for _, fields in rows[1:] if label_index < len(fields)}
    return first[label_index].strip() not in labels


def read_records(path, data_format, columns=None, default_label="label", require_label=True):
    """`(line, {role: field})` of every example of a CSV or TSV file, roles among `text`,
    `text_pair` and `label` (the label left out when the file has none and it is not
    required).

    Args:
        path: the file.
        data_format: "csv" or "tsv".
        columns: a `tasks.text.columns.Columns` (the defaults when None).
        default_label: the label column's name when `columns` gives none.
        require_label: whether every record must have a label.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".csv")
    >>> _ = open(path, "w").write('id,sentence,label\\n1,"Hello, world",greeting\\n')
    >>> read_records(path, "csv", Columns(text="sentence"))
    [(2, {'text': 'Hello, world', 'label': 'greeting'})]
    >>> _ = open(path, "w").write('1,Hi,A\\n2,Bye,B\\n3,Yo,A\\n')
    >>> [line for line, _ in read_records(path, "csv", Columns(text=1, label=2))]
    [1, 2, 3]
    """
    columns = columns or Columns()
    rows = list(_rows(path, DELIMITERS[data_format]))
    if not rows:
        raise DataFormatError(f"{path}: no examples found")
    if columns.by_index():
        header = None
        if _is_header(rows, columns.label):
            rows = rows[1:]
    else:
        number, header = rows[0]
        header = [name.strip() for name in header]
        rows = rows[1:]
    indices = columns.indices(header, default_label, require_label,
                              where=f"{path}:{rows[0][0] if header is None else number}: ")
    needed = max(indices.values()) + 1
    roles = ", ".join(sorted(indices, key=indices.get))
    records = []
    for line, fields in rows:
        if len(fields) < needed:
            raise DataFormatError(f"{path}:{line}: {len(fields)} column"
                                  f"{'' if len(fields) == 1 else 's'}, expected at least "
                                  f"{needed} ({roles})")
        records.append((line, {role: fields[index] for role, index in indices.items()}))
    if not records:
        raise DataFormatError(f"{path}: no examples found (only a header)")
    return records
