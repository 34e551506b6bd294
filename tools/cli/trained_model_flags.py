"""The flags of a binary that runs trained models on data (evaluate, predict), defined once.

Such a binary reads `--model_dir` or `--model` (several, comma-separated: an
ensemble), may load task modules of the user's (`--task_module`), overrides
a word-level model's `--stride` and shows `--progress`. With `untrained=True`
it also reads `--task` and `--init_checkpoint`: the model of a task that needs
no training (`Task.trainable` False: fill_mask, sentence_embedding), built on
a checkpoint's encoder (or a trained model's, or a tools/pretrain.py run's)
with `--max_seq_length`. It calls `trained_model_flags.define()` at import
time, then `trained_model_flags.enable_progress()` at the start of `main` and
`trained_model_flags.load_models()`.
"""

from absl import flags

from nlpzoo.tasks.io.errors import UserError
from nlpzoo.tools.cli.flags import (
    define_model_flags,
    define_progress_flag,
    define_stride_override_flag,
    define_task_module_flag,
    enable_progress,
    with_stride_override,
)

__all__ = ["define", "enable_progress", "load_models", "untrained_task"]


def define(flag_values=flags.FLAGS, argv=None, untrained=False):
    """Defines `--task_module`, `--model_dir`/`--model` (ensembles allowed), `--stride`
    and `--progress`; `argv` (default `sys.argv`) names the task modules to import.
    `untrained` adds `--task`, `--init_checkpoint` and `--max_seq_length` (module docstring).

    Examples:
    >>> values = flags.FlagValues()
    >>> define(values, argv=["predict"])
    >>> _ = values(["predict", "--model_dir=runs/a,runs/b", "--stride=32"])
    >>> values.model_dir, values.stride, values.progress
    ('runs/a,runs/b', 32, True)
    >>> values = flags.FlagValues()
    >>> define(values, argv=["predict"], untrained=True)
    >>> _ = values(["predict", "--task=fill_mask", "--init_checkpoint=bert"])
    >>> values.task, values.init_checkpoint, values.model_dir
    ('fill_mask', 'bert', None)
    """
    define_task_module_flag(flag_values, argv=argv)
    define_model_flags(flag_values, ensemble=True, required=not untrained)
    if untrained:
        flags.DEFINE_string("task", None, "Instead of a trained model: the model of this task, "
                            "one that needs no training (fill_mask, sentence_embedding) or "
                            "works untrained too (prompt_classification, zero-shot, with its "
                            "--pattern and --verbalizer), built on the encoder (and the "
                            "pretraining heads it needs) of --init_checkpoint, of a "
                            "tools/pretrain.py --model_dir, or of a trained model.",
                            flag_values=flag_values)
        flags.DEFINE_string("init_checkpoint", None, "With --task: a pretrained checkpoint "
                            "directory (Hugging Face BERT, KerasHub, or ours: a "
                            "tools/pretrain.py run directory stands for its encoder/).",
                            flag_values=flag_values)
        flags.DEFINE_integer("max_seq_length", None, "With --task: the longest packed "
                             "sequence, in word pieces (longer texts are truncated); default: "
                             "the checkpoint's number of positions.", lower_bound=4,
                             flag_values=flag_values)
        flags.mark_flags_as_mutual_exclusive(["init_checkpoint", "model_dir", "model"],
                                             required=True, flag_values=flag_values)
        _define_zero_shot_flags(flag_values)
    define_stride_override_flag(flag_values)
    define_progress_flag(flag_values)


def _define_zero_shot_flags(flag_values):
    """The own flags of the trainable tasks that also work untrained (`Task.zero_shot`:
    prompt classification's --pattern, --verbalizer), for `--task`."""
    from nlpzoo.tasks import builtin  # noqa: F401  (registers the built-in tasks)
    from nlpzoo.tasks.registry import get_task_class, task_names

    for name in task_names():
        task_class = get_task_class(name)
        if task_class.zero_shot and task_class.trainable:
            task_class.define_flags(flag_values)


def untrained_task(name, flag_values=flags.FLAGS):
    """The `Task` registered as `name`, checked to need no training or to work untrained
    (`Task.zero_shot`, its options from its flags) (`--task`)."""
    from nlpzoo.tasks.registry import get_task_class, task_names

    try:
        task_class = get_task_class(name)
        if task_class.trainable and task_class.zero_shot:
            return task_class(**task_class.options_from_flags(flag_values)[0])
        task = task_class()
    except ValueError as error:
        raise UserError(f"--task: {error}")
    if task.trainable:
        ready = [other for other in task_names() if not get_task_class(other).trainable
                 or get_task_class(other).zero_shot]
        raise UserError(f"--task={task.name} needs training: train it with tools/train.py and "
                        f"use its --model_dir; --task builds only tasks that need none "
                        f"({', '.join(ready)})")
    return task


def load_models(flag_values=flags.FLAGS):
    """The `TrainedModel` that `--model_dir` or `--model` names (several: their ensemble,
    `zoo.runs.directory.load_models`), its task with `--stride` applied; with `--task`,
    that task's model on the chosen encoder (`zoo.runs.directory.build_untrained_model`)."""
    from nlpzoo.zoo.runs import directory  # here: it imports TensorFlow

    task_name = flag_values["task"].value if "task" in flag_values else None
    if task_name:
        return directory.build_untrained_model(
            untrained_task(task_name, flag_values), flag_values.init_checkpoint, flag_values.model_dir,
            flag_values.model, flag_values.max_seq_length)
    if "init_checkpoint" in flag_values and flag_values.init_checkpoint:
        raise UserError(f"--init_checkpoint={flag_values.init_checkpoint} needs --task: the "
                        "task (one that needs no training) whose model is built on it")
    trained = directory.load_models(flag_values.model_dir, flag_values.model)
    return trained._replace(task=with_stride_override(trained.task, flag_values))
