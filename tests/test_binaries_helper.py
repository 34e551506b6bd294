"""tests/helpers/binaries.py: a binary started by a test dies with the test's process, so a
pytest worker that crashes (killed for memory) leaves nothing running beside the next tests."""

import os
import subprocess
import sys
import time

import pytest

from tests.helpers.paths import ROOT

# A stand-in for a pytest worker: starts a long child through start_python, prints the
# child's pid, then dies at once without cleaning up (as a worker killed by the kernel).
_WORKER = """
import os, sys
sys.path.insert(0, {root!r})
from tests.helpers.binaries import start_python
child = start_python("-c", "import time; time.sleep(120)")
print(child.pid, flush=True)
os._exit(9)
"""


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split(") ", 1)[1][0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl's death signal is Linux's")
@pytest.mark.parametrize("preload", ["1", "0"], ids=["forked", "fresh_interpreter"])
def test_a_started_binary_is_killed_when_the_process_that_started_it_dies(preload):
    worker = subprocess.run([sys.executable, "-c", _WORKER.format(root=ROOT)],
                            capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, NLPZOO_TEST_PRELOAD=preload))
    assert worker.returncode == 9, worker.stderr
    child = int(worker.stdout.split()[0])
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(child)
    if alive:
        os.kill(child, 9)
    assert not alive, "the child outlived the process that started it"
