"""A binary's process allocates from one glibc malloc arena (tools.cli.malloc_arenas).

Each check runs in a fresh interpreter and counts the arenas glibc reports
(`malloc_info`, one `<heap nr=...>` element per arena) after threads have
allocated.
"""

import ctypes
import doctest
import os
import subprocess
import sys
import textwrap

import pytest

from nlpzoo.tools.cli import malloc_arenas
from nlpzoo.tools.cli.malloc_arenas import use_one_malloc_arena
from tests.helpers.paths import ROOT


def test_doctests():  # tools/ is outside the doctest paths
    assert doctest.testmod(malloc_arenas).failed == 0


def _glibc():
    try:
        libc = ctypes.CDLL(None)
        return hasattr(libc, "mallopt") and hasattr(libc, "malloc_info")
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(),
                                reason="glibc's malloc (mallopt, malloc_info) is not this "
                                       "process's C library")

# Prints the number of arenas after 4 threads, alive at once, have each allocated 1 MiB (an
# arena a finished thread leaves is reused by the next one: they must overlap).
_COUNT_ARENAS = textwrap.dedent("""
    import ctypes, os, tempfile, threading
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = (ctypes.c_void_p,)
    libc.fdopen.restype = ctypes.c_void_p
    libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.fclose.argtypes = (ctypes.c_void_p,)

    together = threading.Barrier(4)

    def allocate():
        together.wait()
        memory = libc.malloc(1 << 20)
        together.wait()
        libc.free(memory)

    threads = [threading.Thread(target=allocate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with tempfile.TemporaryFile() as report:
        stream = libc.fdopen(os.dup(report.fileno()), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        report.seek(0)
        print("arenas", report.read().decode().count("<heap nr="))
""")


def _arenas(prelude, env=None):
    environment = {name: value for name, value in os.environ.items()
                   if name != "MALLOC_ARENA_MAX"}  # glibc's default unless a test sets it
    environment.update(TF_CPP_MIN_LOG_LEVEL="3", **(env or {}))
    result = subprocess.run([sys.executable, "-c", prelude + _COUNT_ARENAS],
                            capture_output=True, text=True, env=environment, timeout=120,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.split("arenas")[-1])


def test_threads_share_one_arena_after_the_call():
    limited = "from nlpzoo.tools.cli.malloc_arenas import use_one_malloc_arena\n" \
              "assert use_one_malloc_arena()\n"
    assert _arenas("") > 1  # glibc's default: an arena per thread that allocates
    assert _arenas(limited) == 1


def test_the_users_malloc_arena_max_stands():
    assert not use_one_malloc_arena(environ={"MALLOC_ARENA_MAX": "2"})
    prelude = "from nlpzoo.tools.cli.malloc_arenas import use_one_malloc_arena\n" \
              "assert not use_one_malloc_arena()\n"
    assert _arenas(prelude, env={"MALLOC_ARENA_MAX": "3"}) == 3


def test_a_binary_runs_tensorflow_on_one_arena():
    # running_a_binary() is true for a program named nlpzoo-*: what `nlpzoo.tools` then does.
    prelude = textwrap.dedent("""
        import sys
        sys.argv = ["nlpzoo-check"]
        import nlpzoo.tools
        import tensorflow as tf
        x = tf.random.normal([256, 256])
        tf.reduce_sum(tf.matmul(x, x)).numpy()  # TensorFlow's compute threads allocate
    """)
    assert _arenas(prelude) == 1
