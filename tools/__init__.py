"""Command-line binaries (absl flags): train, evaluate, predict, calibrate, export, pretrain, ...

Importing the package quiets TensorFlow's C++ start-up logging (before
TensorFlow is imported), for every binary. When a binary is the program being
run, a Ctrl-C during its start-up (importing TensorFlow takes seconds) ends it
with one line and status 130 rather than an import traceback;
`tools.cli.errors.run` takes over once its `main` starts.
"""

import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _interrupted_while_starting(signum, frame):
    sys.stderr.write("interrupted (Ctrl-C) while starting: nothing was written\n")
    os._exit(130)


def _is_binary_of_ours():
    program = os.path.abspath(getattr(sys.modules.get("__main__"), "__file__", None) or "")
    return (os.path.dirname(program) == os.path.dirname(os.path.abspath(__file__))
            or os.path.basename(sys.argv[0] if sys.argv else "").startswith("nlpzoo-"))


if _is_binary_of_ours():
    signal.signal(signal.SIGINT, _interrupted_while_starting)
