"""Command-line binaries (absl flags): train, evaluate, predict, calibrate, export, pretrain, ...

Importing the package quiets TensorFlow for every binary (before TensorFlow
is imported): no C++ start-up lines, no retracing warnings
(`tasks.io.console.quiet_tensorflow`); `--verbosity=1` shows them. When a
binary is the program being run, a Ctrl-C during its start-up (importing TensorFlow takes seconds) ends it
with one line and status 130 rather than an import traceback;
`tools.cli.errors.run` takes over once its `main` starts. A binary's process
also allocates from one glibc malloc arena (`tools.cli.malloc_arenas`): per-thread
arenas made TensorFlow's tensors fault their pages in again at every batch.
"""

import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


_quiet = None  # the stderr filter of a binary (tasks.io.console.StderrFilter)


def _interrupted_while_starting(signum, frame):
    if _quiet is not None:
        _quiet.stop()  # os._exit runs no atexit: the line below must not wait in the filter
    sys.stderr.write("interrupted (Ctrl-C) while starting: nothing was written\n")
    os._exit(130)


from nlpzoo.tasks.io.console import quiet_tensorflow, running_a_binary  # noqa: E402  (no TF)
from nlpzoo.tools.cli.malloc_arenas import use_one_malloc_arena  # noqa: E402  (no TF)


def _import_keras_without_scikit_learn():
    """Imports Keras with scikit-learn hidden from it: Keras imports scikit-learn (about a
    second of every start) only for its scikit-learn wrappers, which no binary uses.
    Hidden only while Keras loads: a user's --task_module can still import it."""
    if "sklearn" in sys.modules:
        return
    sys.modules["sklearn"] = None  # `import sklearn` raises ImportError: Keras skips it
    try:
        import keras  # noqa: F401
    finally:
        if "sklearn" in sys.modules and sys.modules["sklearn"] is None:
            del sys.modules["sklearn"]


if running_a_binary():
    signal.signal(signal.SIGINT, _interrupted_while_starting)
    use_one_malloc_arena()  # before any thread starts (each would get an arena of its own)
    _quiet = quiet_tensorflow()
    _import_keras_without_scikit_learn()
