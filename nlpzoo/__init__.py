"""nlpzoo: a Keras 3 model zoo for transfer learning in NLP (the front door).

>>> import nlpzoo
>>> model = nlpzoo.build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=1000)
>>> model.output_shape
(None, 3)
>>> "bert_tiny_classifier" in nlpzoo.list_presets()
True

The packages: `nlpzoo.layers` (Keras layers), `nlpzoo.tasks` (one folder per
task family and the machinery they share), `nlpzoo.zoo` (presets, checkpoints,
trained runs) and `nlpzoo.tools` (the command-line binaries). Installed, they
sit under this package; in a clone of the repository they are the top-level
folders `layers/`, `tasks/`, `zoo/` and `tools/`, which this package reaches
through its `__path__`.

Importing the package registers its Keras classes, so that
`keras.saving.load_model(path)` reads any of its `.keras` files with no
`custom_objects`; in one of its binaries `nlpzoo.tools` quiets TensorFlow's
logging first, before TensorFlow starts.
"""

import importlib
import os
import warnings

# Our datasets shuffle themselves (`tf.data`); Keras's `fit` warns that its own
# `shuffle=True` (the default) is ignored for a `tf.data.Dataset`: not news here.
warnings.filterwarnings("ignore", message="`shuffle=True` was passed, but will be ignored",
                        category=UserWarning)
# Our `.keras` files keep no optimizer state (`save_without_optimizer_state`); loading one
# builds a fresh optimizer and Keras warns that it skipped the saved one's few counters
# (iterations, learning rate, a loss scale's: under 10; saved slots would be 2 per weight).
warnings.filterwarnings("ignore", message=r"Skipping variable loading for optimizer '[^']*', "
                        r"because it has \d+ variables whereas the saved optimizer has \d "
                        "variables", category=UserWarning)

_CLONE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if (not os.path.isdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers"))
        and os.path.isfile(os.path.join(_CLONE_ROOT, "layers", "__init__.py"))):
    # Running from a clone (or an editable install): the packages are its top-level folders.
    __path__.append(_CLONE_ROOT)

# Front-door name -> the module that defines it.
_FRONT_DOOR = {
    "build_model": "nlpzoo.zoo.builder",
    "build_encoder": "nlpzoo.zoo.builder",
    "get_preset": "nlpzoo.zoo.builder",
    "list_presets": "nlpzoo.zoo.builder",
    "load_pretrained": "nlpzoo.zoo.builder",
    "load_trained": "nlpzoo.zoo.runs.directory",
    "RunDirectoryError": "nlpzoo.tasks.io.errors",  # what load_trained raises
}

__all__ = sorted(_FRONT_DOOR)


def __getattr__(name):
    if name in _FRONT_DOOR:
        value = getattr(importlib.import_module(_FRONT_DOOR[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nlpzoo' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_FRONT_DOOR))


# Last, once `__path__` is complete: our Keras classes and task families are registered (this
# loads TensorFlow), so that `keras.saving.load_model` reads our `.keras` files with nothing
# else imported. Not while one of our binaries starts: `nlpzoo.tools` first quiets
# TensorFlow, and the binary loads what it needs.
from nlpzoo.tasks.io.console import running_a_binary  # noqa: E402  (loads no TensorFlow)


def _keras_backend():
    import keras
    return keras.backend.backend()


# The task families need TensorFlow; under another Keras backend (JAX on a GPU machine without
# TensorFlow: benchmarks/gpu_check_keras.py) only `nlpzoo.layers` is used, and nothing more loads.
if not running_a_binary() and _keras_backend() == "tensorflow":
    importlib.import_module("nlpzoo.zoo")
