"""How much `fit` prints: a live progress bar on a terminal, one line per epoch in a log file."""

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
