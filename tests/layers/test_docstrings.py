"""The docstring examples of nlpzoo.layers run and print what they show."""

import pytest

from tests.helpers.doctests import module_names, run_docstring_examples


@pytest.mark.parametrize("module_name", module_names("nlpzoo.layers"))
def test_docstring_examples(module_name):
    run_docstring_examples(module_name)
