"""Your own data: the column flags of CSV/TSV/JSONL files and the validation split.

`--text_column`, `--text_pair_column` and `--label_column` name (or number, from 0)
the columns of a CSV/TSV file or the keys of JSONL records (`tasks.text.columns`);
`--validation_split=0.1` holds a share of `--train_data` out for validation when there
is no `--eval_data` (`tasks.text.validation_split`). docs/own_data.md shows them at work.

Examples:
>>> from absl import flags
>>> values = flags.FlagValues()
>>> define_data_flags(values)
>>> values(["train", "--text_column=sentence", "--label_column=2"])[1:]
[]
>>> columns_from_flags(values)
Columns(text='sentence', label=2, text_pair=None)
"""

import os

from absl import flags

from nlpzoo.tasks.io.errors import UserError
from nlpzoo.tasks.text.columns import Columns
from nlpzoo.tasks.text.validation_split import (
    describe_split,
    example_labels,
    split_for_validation,
)

COLUMN_FLAGS = ("text_column", "text_pair_column", "label_column")


def define_data_flags(flag_values=flags.FLAGS):
    """Defines `--text_column`, `--text_pair_column`, `--label_column` and
    `--validation_split`."""
    flags.DEFINE_string("text_column", None, "CSV/TSV: the text's column, a header name or a "
                        "0-based index (JSONL: the record's key); 'text' when omitted.",
                        flag_values=flag_values)
    flags.DEFINE_string("text_pair_column", None, "CSV/TSV/JSONL: the second text's column of "
                        "pair tasks (name or 0-based index); a column named 'text_pair' when "
                        "omitted and present.", flag_values=flag_values)
    flags.DEFINE_string("label_column", None, "CSV/TSV/JSONL: the label's column (name or "
                        "0-based index); 'label' when omitted (the bi-encoder's cosine "
                        "objective: 'score').", flag_values=flag_values)
    flags.DEFINE_float("validation_split", None, "Without --eval_data: hold out this share of "
                       "--train_data for validation (seeded by --seed, stratified by label "
                       "for classification), e.g. 0.1.", lower_bound=0.0, upper_bound=1.0,
                       flag_values=flag_values)


def columns_from_flags(flag_values=flags.FLAGS):
    """The `Columns` the flags name."""
    return Columns.from_flags(flag_values.text_column, flag_values.text_pair_column,
                              flag_values.label_column)


def _read_options(task, flag_values):
    """`task.read`'s keyword arguments for the column flags (none when none is given)."""
    columns = columns_from_flags(flag_values)
    if not columns.given():
        return {}
    if "csv" not in task.formats:
        given = [f"--{name}" for name in COLUMN_FLAGS if flag_values[name].value is not None]
        raise UserError(f"{', '.join(given)}: --task={task.name} has no CSV/TSV columns to "
                        f"name (it reads {', '.join(task.formats)})")
    return {"columns": columns}


def read_training_data(task, flag_values=flags.FLAGS):
    """(training examples, validation examples, what the validation data is called, the
    split's record for config.json or None) from `--train_data` and `--eval_data` or
    `--validation_split`; prints the split's one line."""
    options = _read_options(task, flag_values)
    fraction, eval_data = flag_values.validation_split, flag_values.eval_data
    if eval_data and fraction is not None:
        raise UserError("--eval_data and --validation_split: give one (a validation file, or "
                        "the share of --train_data to hold out)")
    if not eval_data and fraction is None:
        raise UserError("no validation data: pass --eval_data=<file>, or "
                        "--validation_split=0.1 to hold out 10% of --train_data")
    if fraction is not None and not 0.0 < fraction < 1.0:
        raise UserError(f"--validation_split={fraction}: expected a share in (0, 1), e.g. 0.1")
    train = task.read(flag_values.train_data, flag_values.data_format, **options)
    if eval_data:
        return train, task.read(eval_data, flag_values.data_format, **options), eval_data, None
    labels = example_labels(train, task.label_names)
    source = os.path.basename(flag_values.train_data)
    train, held_out = split_for_validation(train, fraction, flag_values.seed, labels,
                                           source=flag_values.train_data)
    print(describe_split(len(held_out), len(train) + len(held_out), source,
                         labels is not None, flag_values.seed), flush=True)
    record = {"fraction": fraction, "seed": flag_values.seed, "stratified": labels is not None,
              "held_out": len(held_out)}
    name = f"{flag_values.train_data} (validation split {fraction:g}, seed {flag_values.seed})"
    return train, held_out, name, record


def trained_columns(config):
    """`task.read`'s keyword arguments for the columns a run was trained with (its
    config's `columns`, the column flags it was given): evaluation and prediction read
    files laid out as its training data was. {} when it named none.

    >>> trained_columns({"columns": {"text_column": "review", "label_column": "2"}})
    {'columns': Columns(text='review', label=2, text_pair=None)}
    >>> trained_columns({"columns": None})
    {}
    """
    named = (config or {}).get("columns")
    return {"columns": Columns.from_flags(**named)} if named else {}
