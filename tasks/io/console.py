"""What a binary prints: `fit`'s progress (a live bar on a terminal, one line per epoch in a
log file), and TensorFlow quieted (`quiet_tensorflow`: no C++ start-up lines, no retracing
warnings, unless `--verbosity` asks for them)."""

import logging
import os
import re
import sys


def fit_verbosity(stream=None):
    """`verbose` for `model.fit`: 1 (a step-level progress bar) on a terminal, else 2.

    Keras cannot make this choice itself: Keras 3.15's progress bar counts
    every POSIX process as an interactive display (`"posix" in sys.modules`),
    so `verbose=1` into a file or a pipe writes a carriage-return-and-ANSI
    colour line every 0.05 s. `verbose=2` writes one plain line per epoch (an
    epoch of tools/pretrain.py is one checkpoint interval).

    Args:
        stream: where Keras prints; `sys.stdout` when omitted.

    Examples:
    >>> import io
    >>> fit_verbosity(io.StringIO())  # a log file, a pipe: no isatty
    2
    >>> class Terminal(io.StringIO):
    ...     def isatty(self):
    ...         return True
    >>> fit_verbosity(Terminal())
    1
    """
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        return 1 if isatty is not None and isatty() else 2
    except ValueError:  # a closed stream
        return 2


# TensorFlow's C++ start-up lines. absl's C++ logging writes them before
# `absl::InitializeLog()` runs, which TF_CPP_MIN_LOG_LEVEL does not reach (TensorFlow
# 2.21 prints them once per shared library that loads them): they are dated
# "0000 00:00:<seconds since 1970>" (`I0000 00:00:1795583364.85 826 port.cc:153] oneDNN
# ...`), which a line of Python's absl logging (`W1125 05:11:46.09 ...`) never is.
# A fatal one (`F0000`) passes: the process is about to die and it says why.
_PRE_INIT_LOG = re.compile(r"^[IWE]0000 00:00:\d")
TENSORFLOW_NOISE = (
    "WARNING: All log messages before absl::InitializeLog() is called",
    "To enable the following instructions:",  # cpu_feature_guard's second line
)

# TensorFlow's Python INFO lines (through absl), by their start.
TENSORFLOW_INFO = ("Function `", "Sharding callback duration", "Writing fingerprint to",
                   "Assets written to", "Fingerprint not found", "Found untraced functions")


def is_tensorflow_noise(line):
    """Whether `line` (of stderr) is one of TensorFlow's C++ start-up lines.

    Examples:
    >>> is_tensorflow_noise("I0000 00:00:1795.85 826 port.cc:153] oneDNN custom operations on.")
    True
    >>> is_tensorflow_noise("W1125 05:11:46.090445 1405 windows.py:261] 8 of 12 sentences")
    False
    >>> is_tensorflow_noise("train.txt:3: tag 'X' is not O")
    False
    """
    return bool(_PRE_INIT_LOG.match(line)) or line.startswith(TENSORFLOW_NOISE)


class StderrFilter:
    """Drops TensorFlow's C++ start-up lines from this process's stderr, passing the rest.

    C++ code writes to file descriptor 2 directly, below `sys.stderr`, so the
    filter swaps descriptor 2 for a pipe; a thread reads the pipe and writes
    every line that is not `is_tensorflow_noise` to the real stderr, at once
    (a traceback or an error line shows as before). `stop` (also run at exit)
    puts the real stderr back and writes out what is left in the pipe.

    Examples:
    >>> quiet = StderrFilter().start()
    >>> quiet.stop()
    """

    def __init__(self, keep=lambda line: not is_tensorflow_noise(line)):
        self.keep = keep
        self._saved = None
        self._thread = None

    def start(self):
        import atexit
        import fcntl
        import threading

        sys.stderr.flush()
        self._saved = os.dup(2)
        read_end, write_end = os.pipe()
        try:  # room for a burst written while the reader waits for the GIL
            fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except OSError:
            pass
        os.dup2(write_end, 2)
        os.close(write_end)
        self._thread = threading.Thread(target=self._pass_through, args=(read_end,),
                                        name="stderr-filter", daemon=True)
        self._thread.start()
        atexit.register(self.stop)
        return self

    def _pass_through(self, read_end):
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                self._write([line + b"\n" for line in lines])
        self._write([pending] if pending else [])

    def _write(self, lines):
        kept = b"".join(line for line in lines if self.keep(line.decode("utf-8", "replace")))
        while kept:
            try:
                kept = kept[os.write(self._saved, kept):]
            except OSError:  # the real stderr is gone (a closed pipe): nothing to do
                return

    def stop(self):
        """Puts the real stderr back on descriptor 2 and writes out the filtered rest."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self._saved, 2)  # closes the pipe's last write end (unless a child holds it)
        thread.join(timeout=2)


def verbosity_requested(argv):
    """Whether `argv` asks absl for `--verbosity` (`-v`) ≥ 1, i.e. to see TensorFlow's lines.

    Examples:
    >>> verbosity_requested(["train.py", "--verbosity=1"])
    True
    >>> verbosity_requested(["train.py", "-v", "0"])
    False
    >>> verbosity_requested(["train.py", "--task=tagging"])
    False
    """
    for index, argument in enumerate(argv):
        name, equals, value = argument.partition("=")
        if name not in ("--verbosity", "-v"):
            continue
        if not equals:
            value = argv[index + 1] if index + 1 < len(argv) else ""
        try:
            return int(value) >= 1
        except ValueError:
            return False
    return False


class _DropTensorFlowChatter:
    """A `logging` filter: drops TensorFlow's retracing warnings and its INFO lines."""

    def filter(self, record):
        if "tf.function retracing" in record.getMessage():
            return False
        # TensorFlow's INFO lines through absl, e.g. when it writes a SavedModel.
        return not (record.levelno < logging.WARNING
                    and record.getMessage().startswith(TENSORFLOW_INFO))


def running_a_binary():
    """True when the program being run is one of our binaries: a `tools/<name>.py`
    script (`python tools/train.py`, `python -m nlpzoo.tools.train`) or an
    `nlpzoo-<name>` command. They quiet TensorFlow before it starts
    (`nlpzoo.tools`), so `import nlpzoo` then leaves TensorFlow unloaded.

    >>> running_a_binary()  # a test runner, not one of ours
    False
    """
    program = os.path.abspath(getattr(sys.modules.get("__main__"), "__file__", None) or "")
    # tasks/io/console.py -> the folder beside tasks/ (a clone's tools/, nlpzoo/tools installed)
    tools = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "tools")
    return (os.path.dirname(program) == tools
            or os.path.basename(sys.argv[0] if sys.argv else "").startswith("nlpzoo-"))


def quiet_tensorflow(argv=None):
    """Quiets TensorFlow for a binary, unless `argv` asks for `--verbosity` ≥ 1.

    Call it before TensorFlow is imported. It drops TensorFlow's C++ start-up
    lines from stderr (`StderrFilter`), its Python INFO lines and its
    tf.function retracing warnings (validation batches of a few bucket
    lengths each trace once: expected, not a problem to fix). Every other
    line of stderr passes. Returns the `StderrFilter`, or None when nothing
    was quieted.

    Examples:
    >>> quiet_tensorflow(["train.py", "--verbosity=1"]) is None
    True
    """
    argv = sys.argv if argv is None else argv
    if verbosity_requested(argv):
        return None
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in ("tensorflow", "absl"):
        logging.getLogger(name).addFilter(_DropTensorFlowChatter())
    return StderrFilter().start()
