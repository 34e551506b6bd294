"""Command-line binaries (absl flags): train, evaluate, predict, calibrate, export, pretrain, ...

Importing the package quiets TensorFlow for every binary (before TensorFlow
is imported): no C++ start-up lines, no retracing warnings
(`tasks.io.console.quiet_tensorflow`); `--verbosity=1` shows them. When a
binary is the program being run, a Ctrl-C during its start-up (importing TensorFlow takes seconds) ends it
with one line and status 130 rather than an import traceback;
`tools.cli.errors.run` takes over once its `main` starts.
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


def _is_binary_of_ours():
    program = os.path.abspath(getattr(sys.modules.get("__main__"), "__file__", None) or "")
    return (os.path.dirname(program) == os.path.dirname(os.path.abspath(__file__))
            or os.path.basename(sys.argv[0] if sys.argv else "").startswith("nlpzoo-"))


if _is_binary_of_ours():
    signal.signal(signal.SIGINT, _interrupted_while_starting)
    from nlpzoo.tasks.io.console import quiet_tensorflow

    _quiet = quiet_tensorflow()
