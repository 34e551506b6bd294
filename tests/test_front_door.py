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


def test_a_binary_starting_loads_no_tensorflow_before_it_is_quieted():
    # A binary (an nlpzoo-* command here) imports nlpzoo, then nlpzoo.tools quiets TensorFlow.
    code = ("import sys; sys.argv[0] = 'nlpzoo-train'; import nlpzoo, nlpzoo.tools; "
            "print('tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "False"


def test_import_nlpzoo_alone_loads_its_keras_files(tmp_path):
    # What a user of keras.saving.load_model imports: nothing but the package.
    path = tmp_path / "model.keras"
    nlpzoo.build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100).save(path)
    code = ("import keras, nlpzoo; "
            f"print(type(keras.saving.load_model({str(path)!r})).__name__)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "Classifier"


def test_module_names_walks_the_package():
    names = module_names("nlpzoo.tasks")
    assert "nlpzoo.tasks.registry" in names and "nlpzoo.tasks.text.tokenizer" in names
