"""The flags of a binary that runs trained models on data (evaluate, predict), defined once.

Such a binary reads `--model_dir` or `--model` (several, comma-separated: an
ensemble), may load task modules of the user's (`--task_module`), overrides
a word-level model's `--stride` and shows `--progress`. It calls
`trained_model_flags.define()` at import time, then
`trained_model_flags.enable_progress()` at the start of `main` and
`trained_model_flags.load_models()`.
"""

from absl import flags

from nlpzoo.tools.cli.flags import (
    define_model_flags,
    define_progress_flag,
    define_stride_override_flag,
    define_task_module_flag,
    enable_progress,
    with_stride_override,
)

__all__ = ["define", "enable_progress", "load_models"]


def define(flag_values=flags.FLAGS, argv=None):
    """Defines `--task_module`, `--model_dir`/`--model` (ensembles allowed), `--stride`
    and `--progress`; `argv` (default `sys.argv`) names the task modules to import.

    Examples:
    >>> values = flags.FlagValues()
    >>> define(values, argv=["predict"])
    >>> _ = values(["predict", "--model_dir=runs/a,runs/b", "--stride=32"])
    >>> values.model_dir, values.stride, values.progress
    ('runs/a,runs/b', 32, True)
    """
    define_task_module_flag(flag_values, argv=argv)
    define_model_flags(flag_values, ensemble=True)
    define_stride_override_flag(flag_values)
    define_progress_flag(flag_values)


def load_models(flag_values=flags.FLAGS):
    """The `TrainedModel` that `--model_dir` or `--model` names (several: their ensemble,
    `zoo.runs.directory.load_models`), its task with `--stride` applied."""
    from nlpzoo.zoo.runs import directory  # here: it imports TensorFlow

    trained = directory.load_models(flag_values.model_dir, flag_values.model)
    return trained._replace(task=with_stride_override(trained.task, flag_values))
