"""`import nlpzoo`: the front door's names, its examples, and the helpers' own examples."""

import subprocess
import sys

import pytest

import nlpzoo
from tests.helpers.doctests import module_names, run_docstring_examples
from tests.helpers.paths import ROOT


@pytest.mark.parametrize("module_name", ["nlpzoo", "tests.helpers.doctests"])
def test_docstring_examples(module_name):
    assert run_docstring_examples(module_name) > 0


def test_front_door_names_load_lazily():
    assert set(nlpzoo.__all__) <= set(dir(nlpzoo))
    assert nlpzoo.load_trained.__module__ == "nlpzoo.zoo.runs.directory"
    with pytest.raises(AttributeError, match="no attribute 'build_modle'"):
        nlpzoo.build_modle  # noqa: B018


def test_importing_the_tools_package_loads_no_tensorflow():
    # The binaries quiet TensorFlow's logging in nlpzoo.tools before TensorFlow starts.
    code = "import sys, nlpzoo, nlpzoo.tools; print('tensorflow' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "False"


def test_module_names_walks_the_package():
    names = module_names("nlpzoo.tasks")
    assert "nlpzoo.tasks.registry" in names and "nlpzoo.tasks.text.tokenizer" in names
