"""A test's body run in a process of its own, as the test process would run it.

What TensorFlow keeps of a trained model after the model is gone (compiled functions,
XLA executables, oneDNN primitives) stays in a process until it ends: a pytest worker
that trains the every-family matrix grew 70-250 MB a pair, with `clear_session` and
`gc.collect` or without, and one was killed for memory at 16 GB. A body run with
`call_in_a_fresh_process` gives its memory back when it ends. The process is a fork of
the preload server where it can be (tests/helpers/preloaded_python.py: TensorFlow is
imported already), and starts as every test does (`prepare_as_a_test`).

>>> call_in_a_fresh_process(print, "hello").stdout
'hello\\n'
"""

import importlib
import json

import pytest

from tests.helpers.binaries import finish_processes, start_python

_CALL = """\
import importlib, json, sys
from tests.helpers.fresh_process import prepare_as_a_test
prepare_as_a_test()
module, name, arguments = json.loads(sys.argv[1])
getattr(importlib.import_module(module), name)(*arguments)
"""


def reset_keras_state():
    """What every test starts from, whatever the last one did: float32 and the seed 1234
    (`tests/conftest.py` calls it before each test)."""
    import keras

    keras.mixed_precision.set_global_policy("float32")
    keras.utils.set_random_seed(1234)


def prepare_as_a_test():
    """The state `tests/conftest.py` gives every test: the built-in tasks registered,
    Keras's datasets as in tests, and `reset_keras_state`."""
    from nlpzoo.tasks import builtin  # noqa: F401  (registers the built-in task families)
    from tests.helpers.autotuning import keras_datasets_as_in_tests

    keras_datasets_as_in_tests()
    reset_keras_state()


def call_in_a_fresh_process(function, *arguments):
    """Calls `function(*arguments)` (a module-level function; JSON arguments) in a
    process of its own; fails the test with its traceback if it raises. Returns the
    process's `CompletedProcess`."""
    module = function.__module__
    if module == "__main__" or getattr(importlib.import_module(module), function.__name__,
                                       None) is not function:
        raise ValueError(f"{function!r} is not a module-level function another process "
                         "can import")
    call = json.dumps([module, function.__name__, list(arguments)])
    result = finish_processes({"call": start_python("-c", _CALL, call)})["call"]
    if result.returncode != 0:
        pytest.fail(f"{function.__name__}{tuple(arguments)} failed in its own process "
                    f"(exit status {result.returncode}):\n{result.stderr[-8000:]}",
                    pytrace=False)
    return result
