"""`--help` of every installed command lists its own flags and the shared ones, grouped,
without TensorFlow's or absl's (tools/cli/help.py), and exits 0."""

import configparser
import doctest
import json
import os
import re

from absl import flags

from nlpzoo.tools.cli import help as tool_help
from tests.helpers.binaries import finish_processes, start_python
from tests.helpers.paths import ROOT

# What each command's help must list (besides --helpfull's hint); train's from issue 36.
KEY_FLAGS = {
    "nlpzoo-train": ["--task", "--train_data", "--eval_data", "--init_checkpoint", "--head",
                     "--pooling", "--mixed_precision", "--context_sentences",
                     "--validation_split", "--text_column", "--text_pair_column",
                     "--label_column", "--distribution_strategy", "--objective"],
    "nlpzoo-predict": ["--model_dir", "--input"],
    "nlpzoo-evaluate": ["--model_dir", "--data"],
    "nlpzoo-export": ["--model_dir"],
    "nlpzoo-distill": ["--train_data", "--teacher"],
    "nlpzoo-pretrain": ["--model_dir", "--mixed_precision"],
}
FOREIGN = re.compile(r"--(\[no\])?(tpu_|xla_|logtostderr|alsologtostderr|log_dir|verbosity"
                     r"|stderrthreshold|only_check_args|pdb|run_with)")


def _console_scripts():
    """{command: module} of setup.cfg's console_scripts."""
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    lines = config["options.entry_points"]["console_scripts"].strip().splitlines()
    return {name.strip(): target.split(":")[0].strip()
            for name, target in (line.split("=") for line in lines)}


# One process imports every command's module in turn and keeps its help text: the flags a
# module defines (its own, and those of the shared define_* functions it calls) are removed
# before the next is imported, so that none clashes (13 processes would take minutes here).
_ALL_HELP = """
import json, sys
from absl import flags
from nlpzoo.tools.cli import help
texts = {}
for command, module in json.loads(sys.argv[1]).items():
    before = set(flags.FLAGS)
    sys.argv[0] = command
    main = __import__(module, fromlist=["main"]).main
    texts[command] = help.help_text(module, "", flags.FLAGS)
    for name in set(flags.FLAGS) - before:
        if name in flags.FLAGS:
            delattr(flags.FLAGS, name)
print(json.dumps(texts))
"""


def test_every_command_lists_its_key_flags_and_none_of_tensorflows():
    commands = _console_scripts()
    assert len(commands) >= 13
    # As an installed command runs: its module imported (not __main__), argv[0] the command
    # (absl's own --help listed nothing then).
    processes = {"all": start_python("-c", _ALL_HELP, json.dumps(commands)),
                 "train": start_python("-c", "import sys; sys.argv[0] = 'nlpzoo-train'; "
                                       "import nlpzoo.tools.train as m; m.entry_point()",
                                       "--help")}
    results = finish_processes(processes)
    assert results["all"].returncode == 0, results["all"].stderr[-3000:]
    texts = json.loads(results["all"].stdout.splitlines()[-1])
    train = results["train"]
    assert train.returncode == 0, train.stderr[-2000:]
    assert train.stdout.startswith("Fine-tunes") and "Try --helpfull" in train.stdout
    texts["nlpzoo-train (--help)"] = train.stdout
    KEY_FLAGS["nlpzoo-train (--help)"] = KEY_FLAGS["nlpzoo-train"]
    for command, text in texts.items():
        listed = set(re.findall(r"^  --(?:\[no\])?(\w+)", text, re.MULTILINE))
        assert listed, command
        for name in KEY_FLAGS.get(command, ()):
            assert name[2:] in listed, (command, name)
        assert not FOREIGN.search(text), (command, FOREIGN.search(text))


def test_helpshort_is_help_and_helpfull_keeps_everything():
    results = finish_processes({
        flag: start_python(os.path.join(ROOT, "tools", "evaluate.py"), flag)
        for flag in ("--helpshort", "--helpfull")})
    assert results["--helpshort"].returncode == 0
    assert results["--helpshort"].stdout.startswith("Evaluates")
    assert "--model_dir" in results["--helpshort"].stdout
    assert "logtostderr" in results["--helpfull"].stdout  # absl's: only in the full list
    assert "--model_dir" in results["--helpfull"].stdout


def test_groups_by_defining_module_with_the_binarys_own_first():
    values = flags.FlagValues()
    flags.DEFINE_string("own", None, "The binary's.", flag_values=values,
                        module_name="nlpzoo.tools.fake")
    flags.DEFINE_integer("seed", 1, "Shared.", flag_values=values,
                         module_name="nlpzoo.tools.cli.run_setup")
    flags.DEFINE_boolean("logtostderr", False, "absl's.", flag_values=values,
                         module_name="absl.logging")
    flags.DEFINE_integer("context_sentences", 0, "Words.", flag_values=values,
                         module_name="nlpzoo.tasks.words.document_context")
    groups = tool_help.key_flag_groups("nlpzoo.tools.fake", values)
    assert [(heading.split(" (")[0], [f.name for f in group]) for heading, group in groups] == [
        ("Flags of this binary", ["own"]),
        ("Run setup shared by the training binaries: run directory, encoder, vocabulary, "
         "data, schedule", ["seed"]),
        ("Word-level tasks", ["context_sentences"]),
    ]
    text = tool_help.help_text("nlpzoo.tools.fake", "Does things.", values)
    assert "--seed: Shared.\n    (default: '1')" in text and "logtostderr" not in text


def test_doctests():
    assert doctest.testmod(tool_help).failed == 0
