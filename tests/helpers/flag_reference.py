"""The flag tables of docs/command_line.md, read from the binaries themselves.

    python -m tests.helpers.flag_reference --write   # after adding, removing or rewording a flag

Each binary is imported in its own process (several define a flag of the same name, which
absl refuses in one process) and every flag defined by a module of ours is listed: its
name, default and help text. The tables sit between FLAGS_BEGIN and FLAGS_END.
"""

import json
import os
import subprocess
import sys

from tests.helpers.paths import ROOT

DOC = os.path.join(ROOT, "docs", "command_line.md")
FLAGS_BEGIN = "<!-- flag tables: python -m tests.helpers.flag_reference --write -->"
FLAGS_END = "<!-- end of flag tables -->"
BINARIES = ("train", "evaluate", "predict", "calibrate", "compare", "export", "convert",
            "pretrain", "build_vocab", "embed", "probe", "distill", "multitask", "benchmark")

# Runs in a child process: imports one binary and prints its flags as JSON.
_LIST_FLAGS = """
import importlib, json, sys
from absl import flags
importlib.import_module("nlpzoo.tools." + sys.argv[1])
ours = ("nlpzoo.", "tools.", "tasks.", "zoo.", "layers.")
print(json.dumps(sorted(
    (flag.name, flag.default, " ".join((flag.help or "").split()))
    for module, defined in flags.FLAGS.flags_by_module_dict().items()
    if module.startswith(ours) for flag in defined)))
"""


def binary_flags(binary):
    """[(name, default, help)] of every flag tools/<binary>.py defines, sorted by name."""
    result = subprocess.run([sys.executable, "-c", _LIST_FLAGS, binary], cwd=ROOT,
                            capture_output=True, text=True, check=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    return [tuple(row) for row in json.loads(result.stdout.strip().splitlines()[-1])]


def format_default(default):
    """A flag's default as the table shows it: blank when there is none."""
    if default is None or default == "" or default == []:
        return ""
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, list):
        return "`" + ",".join(str(item) for item in default) + "`"
    return f"`{default}`"


def flag_tables():
    """The Markdown of every binary's flag table, in BINARIES order."""
    parts = []
    for binary in BINARIES:
        parts += [f"### `tools/{binary}.py`", "", "| flag | default | what |", "|---|---|---|"]
        for name, default, text in binary_flags(binary):
            # A pipe ends a table cell, even inside backticks (--label_separator's `|`).
            parts.append(f"| `--{name}` | {format_default(default).replace('|', chr(92) + '|')} | "
                         f"{text.replace('|', chr(92) + '|')} |")
        parts.append("")
    return "\n".join(parts).rstrip("\n")


def documented_tables(text):
    """The part of `text` between the markers."""
    start = text.index(FLAGS_BEGIN) + len(FLAGS_BEGIN)
    return text[start:text.index(FLAGS_END)].strip("\n")


def write(path=DOC):
    """Replaces what lies between the markers of `path` with `flag_tables()`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(FLAGS_BEGIN) + len(FLAGS_BEGIN)
    end = text.index(FLAGS_END)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:start] + "\n\n" + flag_tables() + "\n\n" + text[end:])


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    write()
