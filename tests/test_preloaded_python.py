"""tests/helpers/preloaded_python.py: a binary forked from the preload server behaves as the
same command in a fresh interpreter (arguments, `__main__`, exit status, output, threads and
atexit at exit, signals), and is one only where that holds."""

import os
import signal
import subprocess
import tempfile
import textwrap
import threading
import time

import pytest

from tests.helpers import preloaded_python
from tests.helpers.binaries import finish_processes, start_python
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.skipif(not preloaded_python.available(),
                                reason="binaries are forked on Linux only, unless turned off")

_SCRIPT = textwrap.dedent("""\
    import atexit, os, sys, threading, time
    atexit.register(lambda: print("atexit ran", flush=True))
    here = os.path.dirname(os.path.abspath(__file__))
    print(__name__, os.path.basename(sys.argv[0]), sys.argv[1:], sys.path[0] == here,
          os.getcwd() == {root!r}, os.environ.get("TF_CONFIG"))
    print("to stderr", file=sys.stderr)
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread ended"))).start()
    if sys.argv[1] == "raise":
        raise ValueError("raised")
    sys.exit(int(sys.argv[1]))
""")


def _run(arguments, preload, monkeypatch):
    monkeypatch.setenv("NLPZOO_TEST_PRELOAD", preload)
    return finish_processes({"run": start_python(*arguments)})["run"]


def _was_forked(monkeypatch):
    check = "import sys; print('tensorflow' in sys.modules)"
    return _run(["-c", check], "1", monkeypatch).stdout.strip() == "True"


@pytest.mark.parametrize("argument", ["0", "3", "raise"])
def test_a_forked_script_ends_as_in_a_fresh_interpreter(tmp_path, monkeypatch, argument):
    script = tmp_path / "script.py"
    script.write_text(_SCRIPT.format(root=ROOT))
    monkeypatch.setenv("TF_CONFIG", '{"task": 1}')
    forked, fresh = (_run([str(script), argument], preload, monkeypatch) for preload in "10")
    assert _was_forked(monkeypatch)
    assert forked.returncode == fresh.returncode == {"0": 0, "3": 3, "raise": 1}[argument]
    assert forked.stdout == fresh.stdout
    assert fresh.stdout.startswith("__main__ script.py ['%s'] True True {\"task\": 1}\n" % argument)
    assert fresh.stdout.endswith("thread ended\natexit ran\n")
    assert forked.stderr.splitlines()[0] == fresh.stderr.splitlines()[0] == "to stderr"
    assert forked.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]


def test_dash_c_code_and_its_arguments_run_as_in_a_fresh_interpreter(monkeypatch):
    code = "import sys; print(__name__, sys.argv, repr(sys.path[0]))"
    forked, fresh = (_run(["-c", code, "x", "--y=1"], preload, monkeypatch) for preload in "10")
    assert forked.stdout == fresh.stdout == "__main__ ['-c', 'x', '--y=1'] ''\n"


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
def test_a_signalled_fork_reports_the_signal_as_popen_does(monkeypatch, signum):
    code = "import sys, time; print('up', flush=True); time.sleep(120)"
    codes = []
    for preload in "10":
        monkeypatch.setenv("NLPZOO_TEST_PRELOAD", preload)
        process = start_python("-c", code)
        stdout = process.output_files[0]
        while not (stdout.seek(0) or stdout.read()):
            assert process.poll() is None
            time.sleep(0.02)
        process.send_signal(signum)
        result = finish_processes({"run": process})["run"]
        codes.append((result.returncode, "KeyboardInterrupt" in result.stderr))
    assert codes[0] == codes[1] == (-signum, signum == signal.SIGINT)


def test_wait_with_a_timeout_raises_as_popen_does(monkeypatch):
    monkeypatch.setenv("NLPZOO_TEST_PRELOAD", "1")
    process = start_python("-c", "import time; time.sleep(120)")
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
    process.kill()
    assert process.wait(timeout=30) == -signal.SIGKILL


def test_forks_import_tensorflow_once_and_the_project_afresh_with_their_own_random_state(
        monkeypatch):
    code = ("import sys, random, numpy; print('tensorflow' in sys.modules, "
            "'nlpzoo' in sys.modules, random.random(), numpy.random.rand())")
    runs = [_run(["-c", code], "1", monkeypatch).stdout.split() for _ in range(2)]
    assert runs[0][:2] == runs[1][:2] == ["True", "False"]
    assert runs[0][2] != runs[1][2] and runs[0][3] != runs[1][3]


def test_a_run_whose_environment_or_verbosity_differs_starts_a_fresh_interpreter(monkeypatch):
    code = "import sys; print('tensorflow' in sys.modules)"
    assert _run(["-c", code], "1", monkeypatch).stdout == "True\n"
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")  # read as TensorFlow loads
    assert _run(["-c", code], "1", monkeypatch).stdout == "False\n"
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS")
    assert _run(["-c", code, "--verbosity=1"], "1", monkeypatch).stdout == "False\n"
    assert _run(["-c", code], "0", monkeypatch).stdout == "False\n"



def test_threads_share_the_server_and_each_gets_its_own_runs(monkeypatch):
    monkeypatch.setenv("NLPZOO_TEST_PRELOAD", "1")
    results = {}

    def run_some(name):
        processes = {f"{name}{i}": start_python("-c", f"print('{name}{i}')") for i in range(4)}
        results.update(finish_processes(processes))

    threads = [threading.Thread(target=run_some, args=(name,)) for name in "ab"]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(results) == [f"{name}{i}" for name in "ab" for i in range(4)]
    assert all(result.stdout == f"{name}\n" for name, result in results.items())
    assert time.monotonic() - started < 60  # no thread waited for another's message


def test_a_server_started_by_a_thread_outlives_the_thread():
    servers = []
    thread = threading.Thread(target=lambda: servers.append(
        preloaded_python.PreloadServer(env=dict(os.environ))))
    thread.start()
    thread.join(timeout=300)
    [server] = servers
    time.sleep(0.5)
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    process = server.start(["-c", "print('up')"], env=dict(os.environ), cwd=".",
                           stdout=out, stderr=err)
    assert process.wait(timeout=60) == 0 and server.alive()
    server.close()


class _ServerWithOneEndedRun:
    """Stands in for a `PreloadServer` whose run 1 (pid 4242) ended with status 0."""

    def __init__(self):
        self.exit_codes = {1: 0}

    def pump(self, timeout):
        pass


def test_a_reused_pid_does_not_take_an_earlier_runs_exit_status():
    # Pids come round within a session: a run must not end with its pid's last status.
    server = _ServerWithOneEndedRun()
    later = preloaded_python.PreloadedProcess(server, 2, 4242, ["python"])
    earlier = preloaded_python.PreloadedProcess(server, 1, 4242, ["python"])
    assert later.poll() is None and earlier.poll() == 0 and earlier.poll() == 0
