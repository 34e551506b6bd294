"""docs/command_line.md lists every flag of every binary as the binaries define it."""

import pytest

from tests.helpers import flag_reference


def test_defaults_read_as_on_the_command_line():
    assert flag_reference.format_default(None) == ""
    assert flag_reference.format_default(False) == "`false`"
    assert flag_reference.format_default(0.03) == "`0.03`"
    assert flag_reference.format_default(["a", "b"]) == "`a,b`"


def test_the_tables_are_read_between_their_markers():
    text = (f"intro\n{flag_reference.FLAGS_BEGIN}\n\n| `--x` | | y |\n\n"
            f"{flag_reference.FLAGS_END}\nafter\n")
    assert flag_reference.documented_tables(text) == "| `--x` | | y |"


@pytest.mark.slow  # imports each of the 14 binaries in its own process: about a minute
def test_the_flag_tables_are_current():
    with open(flag_reference.DOC, encoding="utf-8") as f:
        documented = flag_reference.documented_tables(f.read())
    assert documented == flag_reference.flag_tables(), (
        "docs/command_line.md's flag tables are stale: run "
        "`python -m tests.helpers.flag_reference --write`")
