"""tools/cli/flags.py and tools/cli/run_setup.py: the flags several binaries share, and how
their defaults resolve."""

import doctest
import types

import pytest

from nlpzoo.tools.cli import errors, trained_model_flags
from nlpzoo.tools.cli import flags as tool_flags
from nlpzoo.tools.cli import run_setup
from nlpzoo.tools.cli.flags import resolve_pack_length
from tests.helpers.binaries import run_tools


def test_doctests():
    # tools/ is outside the doctest paths (it holds absl binaries); this module is not one.
    assert doctest.testmod(tool_flags).failed == 0
    assert doctest.testmod(errors).failed == 0
    assert doctest.testmod(run_setup).failed == 0


@pytest.mark.parametrize("jit_compile, expected", [(False, 1), (True, 0)])
def test_pack_length_defaults_to_rows_of_the_longest_without_xla(jit_compile, expected):
    assert resolve_pack_length(None, jit_compile) == expected
    assert resolve_pack_length(0, jit_compile) == 0  # asked for no packing: none, either way


def test_packing_under_xla_is_refused_naming_both_flags():
    assert resolve_pack_length(32, jit_compile=False) == 32
    with pytest.raises(ValueError, match=r"--pack_length=32 needs --jit_compile=false"):
        resolve_pack_length(32, jit_compile=True)


def test_shared_binary_setup_and_error_wording_doctests():
    assert doctest.testmod(trained_model_flags).failed == 0
    assert doctest.testmod(errors).failed == 0


def test_binaries_name_the_flag_of_a_run_that_cannot_be_loaded(tmp_path):
    missing_file = tmp_path / "none.keras"
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    questions = tmp_path / "q.txt"
    questions.write_text("Who is he ?\n")
    results = run_tools({
        "predict": ("predict.py", f"--model={missing_file}", f"--input={questions}",
                    "--output=-"),
        "evaluate": ("evaluate.py", f"--model_dir={unfinished}", f"--data={questions}"),
    })
    expected = {
        "predict": f"error: --model={missing_file}: no such file",
        "evaluate": f"error: --model_dir={unfinished}: not a trained run: no best_model.keras",
    }
    for name, result in results.items():
        errors_seen = [line for line in result.stderr.splitlines() if line.startswith("error")]
        assert result.returncode == 1 and len(errors_seen) == 1, (name, result.stderr[-2000:])
        assert errors_seen[0].startswith(expected[name]), (name, errors_seen)


def test_one_rule_for_the_head_learning_rate():
    # tools/train.py's rule, for every binary: the preset's head rate on a pretrained
    # encoder only; --head_learning_rate when given (even equal to the default).
    defaults = types.SimpleNamespace(epochs=3, learning_rate=5e-5, head_learning_rate=1e-3,
                                     warmup_fraction=0.1)
    values = types.SimpleNamespace(epochs=None, learning_rate=None, head_learning_rate=None,
                                   warmup_fraction=None)
    assert run_setup.resolve_schedule(values, defaults, pretrained=True).head_learning_rate == 1e-3
    assert run_setup.resolve_schedule(values, defaults, pretrained=False).head_learning_rate is None
    values.head_learning_rate = 2e-4
    assert run_setup.resolve_schedule(values, defaults, pretrained=False).head_learning_rate == 2e-4
