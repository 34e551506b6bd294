"""tools/cli/flags.py: the flags several binaries share, and how their defaults resolve."""

import doctest

import pytest

from nlpzoo.tools.cli import flags as tool_flags
from nlpzoo.tools.cli.flags import resolve_pack_length


def test_doctests():
    # tools/ is outside the doctest paths (it holds absl binaries); this module is not one.
    assert doctest.testmod(tool_flags).failed == 0


@pytest.mark.parametrize("jit_compile, expected", [(False, 1), (True, 0)])
def test_pack_length_defaults_to_rows_of_the_longest_without_xla(jit_compile, expected):
    assert resolve_pack_length(None, jit_compile) == expected
    assert resolve_pack_length(0, jit_compile) == 0  # asked for no packing: none, either way


def test_packing_under_xla_is_refused_naming_both_flags():
    assert resolve_pack_length(32, jit_compile=False) == 32
    with pytest.raises(ValueError, match=r"--pack_length=32 needs --jit_compile=false"):
        resolve_pack_length(32, jit_compile=True)
