"""`--help` and `--helpshort`: a binary's own flags and the shared ones it uses, grouped.

absl's `--help` lists the key flags of `sys.argv[0]`'s module: nothing for an
installed command (`nlpzoo-train` is a wrapper script), and the shared flags defined
in `tools/cli/` or `tasks/` are not the binary's. Here the key flags of a binary are
every flag that its own module and our packages (`nlpzoo.*`) define; they are
declared as absl key flags of the binary (`FlagValues.register_key_flag_for_module`)
and printed grouped by the module that defines them, under a heading that says
what they are. TensorFlow's and absl's own flags (logging, TPU, XLA) are left to
`--helpfull`, which keeps absl's full list. Help exits 0.

Examples:
>>> from absl import flags
>>> values = flags.FlagValues()
>>> _ = flags.DEFINE_string("train_data", None, "Training data file.", flag_values=values)
>>> print(help_text("nlpzoo.tools.cli.help", "Trains.", values))  # doctest: +NORMALIZE_WHITESPACE
Trains.
<BLANKLINE>
Flags of this binary (nlpzoo.tools.cli.help):
  --train_data: Training data file.
<BLANKLINE>
Try --helpfull for every flag, TensorFlow's and absl's included.
"""

import sys

from absl import app, flags

_PACKAGE = "nlpzoo."
# What the shared modules' flags are, for their headings (others: their docstring's first
# line); the first _SHARED are listed right after the binary's own, in this order.
_SHARED = 5
HEADINGS = {
    "nlpzoo.tools.cli.run_setup": "Run setup shared by the training binaries: run directory, "
                                  "encoder, vocabulary, data, schedule",
    "nlpzoo.tools.cli.data_flags": "Your own data: CSV/TSV/JSONL columns and the validation "
                                   "split (docs/own_data.md)",
    "nlpzoo.tools.cli.flags": "Shared: the model to load, hardware, packing, training loop, "
                              "progress",
    "nlpzoo.tools.cli.trained_model_flags": "Trained models (several make an ensemble)",
    "nlpzoo.tasks.training.distribution": "Distribution over devices and hosts",
    "nlpzoo.tasks.modeling.pooling_flag": "--task=classification and --task=bi_encoder: pooling",
    "nlpzoo.tasks.modeling.objective_flag": "--task=classification and --task=bi_encoder: "
                                            "objective",
    "nlpzoo.tasks.words.windows": "Word-level tasks (tagging, span_ner): long sentences",
    "nlpzoo.tasks.words.document_context": "Word-level tasks (tagging, span_ner): context",
    "nlpzoo.tasks.words.shapes": "Word-level tasks (tagging, span_ner): word shapes",
}


def _heading(module_name):
    """What a module's flags are: `HEADINGS`, a task's name, or its docstring's first line."""
    if module_name in HEADINGS:
        return HEADINGS[module_name]
    parts = module_name.split(".")
    if len(parts) == 4 and parts[:2] == ["nlpzoo", "tasks"] and parts[3] == "task":
        return f"--task={parts[2]}"
    doc = (getattr(sys.modules.get(module_name), "__doc__", None) or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ").split(". ")[0].rstrip(".") or module_name


def key_flag_groups(main_module_name, flag_values=flags.FLAGS):
    """[(heading, [flags])]: the binary's own flags first, then those of each of our
    modules, in the order they were defined."""
    by_module = flag_values.flags_by_module_dict()
    groups, seen = [], set()
    ours = [name for name in by_module if name.startswith(_PACKAGE) and name != main_module_name]
    shared = list(HEADINGS)[:_SHARED]  # the shared modules first, in HEADINGS' order
    names = ([main_module_name] + [name for name in shared if name in ours]
             + [name for name in ours if name not in shared])
    for name in names:
        group = []
        for flag in by_module.get(name, ()):
            if id(flag) not in seen:
                seen.add(id(flag))
                group.append(flag)
        if group:
            heading = ("Flags of this binary" if name == main_module_name
                       else _heading(name))
            groups.append((f"{heading} ({name})", sorted(group, key=lambda f: f.name)))
    return groups


def _describe(flag):
    """A flag as absl's help writes it: name, help, default."""
    name = f"--[no]{flag.name}" if flag.boolean else f"--{flag.name}"
    text = f"{name}: {flag.help}"
    if flag.default is not None and flag.default_as_str:
        text += f"\n(default: {flag.default_as_str})"
    lines = text.split("\n")
    wrapped = [flags.text_wrap(lines[0], indent="    ", firstline_indent="  ")]
    wrapped += [flags.text_wrap(line, indent="    ") for line in lines[1:]]
    return "\n".join(wrapped)


def help_text(main_module_name, doc, flag_values=flags.FLAGS):
    """The binary's docstring, then its key flags by group."""
    parts = [(doc or "").rstrip()]
    for heading, group in key_flag_groups(main_module_name, flag_values):
        parts.append(f"{heading}:\n" + "\n".join(_describe(flag) for flag in group))
    parts.append("Try --helpfull for every flag, TensorFlow's and absl's included.")
    return "\n\n".join(part for part in parts if part)


class _HelpFlag(app.HelpFlag):
    """`--help` (`-?`): the grouped key flags; exits 0."""

    main_module_name = None
    doc = None

    def parse(self, arg):
        if self._parse(arg):
            print(help_text(self.main_module_name, self.doc))
            sys.exit(0)


class _HelpshortFlag(_HelpFlag):
    """`--helpshort`: the same as `--help`."""

    NAME = "helpshort"
    SHORT_NAME = None


def install(main, flag_values=flags.FLAGS):
    """Makes `--help` and `--helpshort` of the binary whose `main` this is list its key
    flags (and declares them absl key flags of its module); call before `app.run`."""
    module_name = main.__module__
    if module_name == "__main__":  # absl names the main module's flags by the script's path
        module_name = sys.argv[0]
    app.define_help_flags()  # absl's, once; ours replace --help, -? and --helpshort
    for name in ("help", "?", "helpshort"):
        if name in flag_values:
            delattr(flag_values, name)
    for flag_class in (_HelpFlag, _HelpshortFlag):
        flag = flag_class()
        flag.main_module_name = module_name
        flag.doc = getattr(sys.modules.get(main.__module__), "__doc__", None)
        flags.DEFINE_flag(flag, flag_values, module_name="absl.app")
    for _, group in key_flag_groups(module_name, flag_values):
        for flag in group:
            flag_values.register_key_flag_for_module(module_name, flag)
            flag_values.register_key_flag_for_module(sys.argv[0], flag)
