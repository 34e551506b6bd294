"""One glibc malloc arena for a binary's process: tensors allocated without page-fault churn.

glibc gives each new thread that allocates its own arena (up to 8 per core),
and an arena other than the main one grows in heaps that glibc unmaps as soon
as they empty. TensorFlow's compute threads allocate every op's output: when
batches change shape (packed rows do, at every batch), a thread's heap empties
between ops and is mapped again for the next, and every page of it faults in
anew. Measured on the CoNLL-2003 finetune benchmark (`tools/benchmark.py
--what=finetune`, AMD EPYC, 2026-11-29): our packed tagger's prediction pass
took 1.6-1.7 s with about 265,000 minor page faults after training, 1.2 s
with under 2,000 on one arena; KerasHub's, in the same process, 1.45-1.5 s
either way. glibc's main arena grows with `brk` and keeps its memory (up to its trim
threshold), so one arena for the process ends the churn.

`MALLOC_ARENA_MAX` set by the user wins (glibc reads it at start); elsewhere
than glibc (macOS, musl) nothing changes. Arenas made before the call stay,
so the binaries call it before any thread starts (`nlpzoo.tools`).

Examples:
>>> use_one_malloc_arena(environ={"MALLOC_ARENA_MAX": "4"})  # the user's choice stands
False
"""

import ctypes
import os
import sys

_M_ARENA_MAX = -8  # mallopt's parameter number for the arena limit (glibc's malloc.h)


def use_one_malloc_arena(environ=None):
    """Limits glibc malloc to one arena for the rest of the process.

    Args:
        environ: the environment to read `MALLOC_ARENA_MAX` from (default: os.environ).

    Returns:
        True when the limit was set; False when the user set `MALLOC_ARENA_MAX`, or
        the C library is not glibc (no `mallopt`), or it refused.
    """
    environ = os.environ if environ is None else environ
    if "MALLOC_ARENA_MAX" in environ or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask, or one without mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(_M_ARENA_MAX, 1) == 1
