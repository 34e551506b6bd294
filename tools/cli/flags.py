"""Flags and start-up steps that several binaries share, defined once.

Examples:
>>> from absl import flags as absl_flags
>>> values = absl_flags.FlagValues()
>>> define_model_flags(values)
>>> _ = values(["predict", "--model=best_model.keras"])
>>> values.model
'best_model.keras'
"""

import contextlib
import sys

from absl import flags

# Nothing heavy at import time (TensorFlow comes with `tasks.registry` and `zoo`):
# tools/export.py refuses a bad --output before TensorFlow starts.

TASK_MODULE_FLAG = "task_module"


def define_model_flags(flag_values=flags.FLAGS, what="a model", required=True,
                       ensemble=False):
    """`--model_dir` or `--model` (exactly one; at most one unless `required`): the trained
    model a binary reads; with `ensemble`, the help says that comma-separated models are
    averaged (read with `zoo.runs.directory.load_models`)."""
    several = (" Several, comma-separated (models of one task, labels and vocabulary, e.g. "
               "trained with different seeds): their ensemble, which averages their "
               "probabilities (CRFs: emissions and transitions) and decodes once."
               if ensemble else "")
    flags.DEFINE_string("model_dir", None, f"A model directory written by tools/train.py "
                        f"holding {what}.{several}", flag_values=flag_values)
    flags.DEFINE_string("model", None, "Instead of --model_dir: a .keras file written by "
                        "tools/train.py (it carries its vocabulary, labels and task options)."
                        + (" Several, comma-separated: their ensemble." if ensemble else ""),
                        flag_values=flag_values)
    flags.mark_flags_as_mutual_exclusive(["model_dir", "model"], required=required,
                                         flag_values=flag_values)


def define_encoder_source_flags(flag_values=flags.FLAGS,
                                what="the model whose encoder is used"):
    """`--init_checkpoint`, `--model_dir` or `--model` (exactly one): where an encoder comes
    from, and `--max_seq_length`.

    Read with `zoo.runs.directory.load_encoder_source`.
    """
    flags.DEFINE_string("init_checkpoint", None, "A pretrained checkpoint directory: Hugging "
                        "Face BERT (a sentence-transformers model such as all-MiniLM-L6-v2 "
                        "included), a KerasHub BertBackbone preset, or ours (a tools/pretrain.py "
                        "run directory stands for its encoder/).", flag_values=flag_values)
    define_model_flags(flag_values, what=what, required=False)
    flags.mark_flags_as_mutual_exclusive(["init_checkpoint", "model_dir", "model"],
                                         required=True, flag_values=flag_values)
    flags.DEFINE_integer("max_seq_length", None, "Longest packed sequence, in wordpieces; "
                         "longer texts are truncated. Default: a trained model's own; a "
                         "checkpoint's sentence-transformers max_seq_length "
                         "(sentence_bert_config.json), else its number of positions.",
                         lower_bound=4, flag_values=flag_values)


def define_pooling_flags(flag_values=flags.FLAGS):
    """`--pooling`, `--normalize`, `--layer`: how one vector per text is made (sentence
    embeddings); named as the head options they set."""
    flags.DEFINE_string("pooling", "mean", "How token vectors become one vector: mean "
                        "(over real tokens, as sentence-transformers), max, or cls.",
                        flag_values=flag_values)
    flags.DEFINE_boolean("normalize", True, "Scale each vector to unit L2 norm (dot product "
                         "= cosine similarity).", flag_values=flag_values)
    flags.DEFINE_string("layer", None, "Which hidden layer is pooled: an index (0 the "
                        "embeddings, the number of layers the last block, negative from the "
                        "end) or mean_last_4 (the mean of the last four); default: the last "
                        "layer (or the layer mix a trained model was built with).",
                        flag_values=flag_values)


def define_stride_override_flag(flag_values=flags.FLAGS):
    """`--stride` for binaries that run a trained word-level model (see
    `tasks.words.windows`); `with_stride_override` applies it."""
    from nlpzoo.tasks.words.windows import define_stride_flag  # light: numpy and absl only

    define_stride_flag(flag_values)


def with_stride_override(task, flag_values=flags.FLAGS):
    """`task` with `--stride` applied when given; a task without windows refuses it."""
    from nlpzoo.tools.cli.errors import UserError

    if flag_values.stride is None:
        return task
    if "stride" not in task.option_names():
        raise UserError(f"--stride: a {task.name} model reads no windows (only word-level "
                        "tasks such as tagging and span NER do)")
    return task.with_options(stride=flag_values.stride)


def model_source(flag_values=flags.FLAGS):
    """How the user named the model, for messages: `--model_dir=...` or `--model=...`."""
    if flag_values.model_dir:
        return f"--model_dir={flag_values.model_dir}"
    return f"--model={flag_values.model}"


def define_progress_flag(flag_values=flags.FLAGS):
    """`--progress` (on by default; `--noprogress` for none): progress on standard error.

    Read with `enable_progress` at the start of `main`.
    """
    flags.DEFINE_boolean("progress", True, "Show progress with the rate and time left on "
                         "standard error: one updating line on a terminal, otherwise a line "
                         "every 10% or 30 s (--noprogress: none).", flag_values=flag_values)


def enable_progress(flag_values=flags.FLAGS):
    """Turns the reporters of `tasks.io.progress` on or off as `--progress` says."""
    from nlpzoo.tasks.io.progress import set_enabled  # here: it imports Keras

    set_enabled(flag_values.progress)


@contextlib.contextmanager
def vocabulary_progress(enabled):
    """Within it, `tasks.io.progress` reporters report when `enabled` (`--progress`): vocabulary
    learning in a training binary. Off again afterwards, so that the validation run after
    every epoch prints no progress lines."""
    from nlpzoo.tasks.io.progress import set_enabled  # here: it imports Keras

    set_enabled(enabled)
    try:
        yield
    finally:
        set_enabled(False)


def define_hardware_flags(flag_values=flags.FLAGS):
    """`--mixed_precision` and `--jit_compile`, both "auto" by default (follow the hardware)."""
    from nlpzoo.zoo.hardware import JIT_COMPILE_CHOICES, MIXED_PRECISION_CHOICES

    flags.DEFINE_enum("mixed_precision", "auto", MIXED_PRECISION_CHOICES,
                      "Dtype policy; auto: mixed_bfloat16 on GPUs and CPUs that support it.",
                      flag_values=flag_values)
    flags.DEFINE_enum("jit_compile", "auto", JIT_COMPILE_CHOICES,
                      "XLA compilation; auto: on with a GPU, off on CPU.",
                      flag_values=flag_values)


def define_packing_flag(flag_values=flags.FLAGS):
    """`--pack_length`: packing short examples into shared rows (`TransformerEncoder.pack_length`).

    Read with `resolve_pack_length`, which picks the default from XLA.
    """
    flags.DEFINE_integer("pack_length", None, "Pack short examples into rows of this many tokens "
                         "(block-diagonal attention, positions restarting per example): the "
                         "same model and outputs with less padding to compute; rows are at "
                         "least as long as each batch's longest example, so 1 packs into rows "
                         "of the longest (the fastest on length-grouped training batches). "
                         "Needs --jit_compile off. 0: no packing, batches padded to length "
                         "buckets. Default: 1 with XLA off (the default on CPU), 0 with XLA on.",
                         lower_bound=0, flag_values=flag_values)


def resolve_pack_length(pack_length, jit_compile):
    """The `pack_length` a model trains with: `--pack_length`'s value, or its default.

    Packing makes the number of rows depend on the data, which XLA cannot compile, so
    the default is 1 (rows of each batch's longest example: the least padding and the
    fewest attention scores) without XLA and 0 (no packing) with it.

    Examples:
    >>> resolve_pack_length(None, jit_compile=False), resolve_pack_length(None, True)
    (1, 0)
    >>> resolve_pack_length(128, jit_compile=False)
    128
    >>> resolve_pack_length(128, jit_compile=True)
    Traceback (most recent call last):
    ...
    ValueError: --pack_length=128 needs --jit_compile=false: the number of packed rows depends on the data, and XLA compiles static shapes only
    """
    if pack_length is None:
        return 0 if jit_compile else 1
    if pack_length and jit_compile:
        raise ValueError(f"--pack_length={pack_length} needs --jit_compile=false: the number "
                         "of packed rows depends on the data, and XLA compiles static shapes "
                         "only")
    return pack_length


def define_training_loop_flags(flag_values=flags.FLAGS, resumable=True):
    """`--checkpoint_every_steps` and `--log_every_steps` of `zoo.runs.training_loop`.

    A binary that saves its state on a schedule of its own (`resumable=False`,
    tools/pretrain.py: `--steps_per_checkpoint`) gets `--log_every_steps` alone.
    """
    if resumable:
        flags.DEFINE_integer("checkpoint_every_steps", 500, "Save the training state (weights, "
                             "optimizer, step, random state) every this many steps, besides "
                             "every epoch's end; a killed run resumes from the last save (0: "
                             "epoch ends only).", lower_bound=0, flag_values=flag_values)
    flags.DEFINE_integer("log_every_steps", 50, "Write the training loss and learning rate "
                         "to TensorBoard every this many steps (and at each epoch's end).",
                         lower_bound=1, flag_values=flag_values)


def define_task_module_flag(flag_values=flags.FLAGS, argv=None):
    """`--task_module`: modules that register tasks of their own, imported right away.

    The modules are imported before the flags are parsed (they are read from
    `argv`, `sys.argv` by default), so that their tasks can define flags and
    their models can be loaded. Returns the module names.
    """
    flags.DEFINE_multi_string(TASK_MODULE_FLAG, [], "Python module that registers a task of "
                              "your own (tasks.registry.register_task); repeatable.",
                              flag_values=flag_values)
    modules = _values_in_argv(TASK_MODULE_FLAG, sys.argv if argv is None else argv)
    if not modules:
        return modules
    from nlpzoo.tasks.registry import import_task_modules

    try:
        import_task_modules(modules)
    except ValueError as error:
        sys.exit(f"error: --{TASK_MODULE_FLAG}: {error}")
    return modules


def _values_in_argv(name, argv):
    values = []
    for i, argument in enumerate(argv[1:], 1):
        if argument.startswith(f"--{name}="):
            values.append(argument.split("=", 1)[1])
        elif argument == f"--{name}" and i + 1 < len(argv):
            values.append(argv[i + 1])
    return values
