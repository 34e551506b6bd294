"""`import nlpzoo`: the front door's names, its examples, and the helpers' own examples."""

import os
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
    # A binary (an nlpzoo-* command here) imports nlpzoo, then nlpzoo.tools quiets TensorFlow;
    # TensorFlow may load after that (nlpzoo.tools imports Keras for a binary), never before.
    code = """if True:
        import sys
        sys.argv[0] = "nlpzoo-train"
        quiet_when_tensorflow_loads = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name == "tensorflow" and not quiet_when_tensorflow_loads:
                    tools = sys.modules.get("nlpzoo.tools")
                    quiet_when_tensorflow_loads.append(
                        getattr(tools, "_quiet", None) is not None
                        and sys.modules.get("os").environ.get("TF_CPP_MIN_LOG_LEVEL") == "3")
                return None

        sys.meta_path.insert(0, Watch())
        import nlpzoo, nlpzoo.tools
        print(quiet_when_tensorflow_loads, "sklearn" in sys.modules)
    """
    environment = {name: value for name, value in os.environ.items()
                   if name != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True, env=environment)
    # Quiet before TensorFlow loaded; Keras loaded without scikit-learn (about 0.6 s).
    assert result.stdout.strip() == "[True] False"


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
