"""Running the binaries of tools/ from tests: one at a time or several at once."""

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from tests.helpers import preloaded_python
from tests.helpers.paths import ROOT

TOOL_TIMEOUT_S = 600
# The environment before any test changed it: the preload server's (see `start_python`).
_ENV_AT_IMPORT = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
_PRELOAD_SERVERS = {}  # {pid of the test process: its PreloadServer}
_PRELOAD_LOCK = threading.Lock()  # threads of a test process start binaries too


def tool_path(name):
    """tools/<name>, e.g. tool_path("train.py")."""
    return os.path.join(ROOT, "tools", name)


_PR_SET_PDEATHSIG = 1  # prctl's option number (linux/prctl.h)
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _dying_with(parent, preexec_fn):
    """A `preexec_fn` that has the child killed when `parent` (this test process) dies,
    then runs `preexec_fn`: a pytest worker that crashes (out of memory) leaves no
    binary running to slow, or starve, the tests after it. Linux sends the signal when
    the *thread* that started the child ends: start binaries from the test's thread
    (or one that outlives them), as every helper here does."""
    def prepare_child():
        if _LIBC is not None:
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)
        if preexec_fn is not None:
            preexec_fn()
    return prepare_child


def _preload_server():
    """This test process's preload server (started on first use, again if it died), or
    None where binaries are not forked from one."""
    if not preloaded_python.available():
        return None
    with _PRELOAD_LOCK:
        server = _PRELOAD_SERVERS.get(os.getpid())
        if server is None or not server.alive():
            server = preloaded_python.PreloadServer(env=_ENV_AT_IMPORT, cwd=ROOT)
            _PRELOAD_SERVERS[os.getpid()] = server
        return server


def start_python(*arguments, preexec_fn=None):
    """Starts `python *arguments` in the repository root; see `finish_processes`.

    Output goes to temporary files, not pipes, so that many processes can run
    at once without one blocking on a full pipe. `preexec_fn` runs in the child
    before Python starts (e.g. to set a `resource` limit). The child is killed
    if this process dies first. Without `preexec_fn`, and with the environment the
    tests started with (up to `preloaded_python.PER_RUN_ENV`), the child is forked from
    a Python that has imported TensorFlow already (tests/helpers/preloaded_python.py says
    when it is not).

    >>> finish_processes({"hi": start_python("-c", "print('hi')")})["hi"].stdout
    'hi\\n'
    """
    stdout, stderr = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    server = _preload_server() if preexec_fn is None else None
    if (server is not None and preloaded_python.env_allows_fork(server.env, env)
            and preloaded_python.arguments_allow_fork(arguments)):
        process = server.start(arguments, env=env, cwd=ROOT, stdout=stdout, stderr=stderr)
    else:
        process = subprocess.Popen([sys.executable, *arguments], stdout=stdout, stderr=stderr,
                                   env=env, cwd=ROOT,
                                   preexec_fn=_dying_with(os.getpid(), preexec_fn))
    process.output_files = (stdout, stderr)
    return process


def start_tool(tool, *flags, preexec_fn=None):
    """Starts tools/<tool> with `flags`; see `finish_processes`."""
    return start_python(tool_path(tool), *flags, preexec_fn=preexec_fn)


def finish_processes(processes):
    """Waits for {name: process}; returns {name: CompletedProcess} with their output."""
    results = {}
    try:
        for name, process in processes.items():
            process.wait(timeout=TOOL_TIMEOUT_S)
            stdout, stderr = process.output_files
            stdout.seek(0)
            stderr.seek(0)
            results[name] = subprocess.CompletedProcess(
                process.args, process.returncode, stdout.read(), stderr.read())
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
            for f in process.output_files:
                f.close()
    return results


def run_tool(tool, *flags):
    """Runs tools/<tool> with `flags` to the end; a `subprocess.CompletedProcess`."""
    return finish_processes({tool: start_tool(tool, *flags)})[tool]


def run_tools(commands, at_once=None, preexec_fn=None):
    """Runs {name: (tool, *flags)} at the same time; {name: CompletedProcess}.

    With `at_once`, at most that many run together (the next starts as one ends:
    a cap on the memory many TensorFlow processes take). `preexec_fn`: see
    `start_python`.
    """
    if at_once is None:
        return finish_processes({name: start_tool(*command, preexec_fn=preexec_fn)
                                 for name, command in commands.items()})
    waiting, running, results = list(commands.items()), {}, {}
    try:
        while waiting or running:
            while waiting and len(running) < at_once:
                name, command = waiting.pop(0)
                running[name] = start_tool(*command, preexec_fn=preexec_fn)
                running[name].started = time.monotonic()
            done = [name for name, process in running.items() if process.poll() is not None
                    or time.monotonic() - process.started > TOOL_TIMEOUT_S]
            if done:
                results.update(finish_processes({name: _killed(running.pop(name))
                                                 for name in done}))
            else:
                time.sleep(0.1)
    finally:
        finish_processes({name: _killed(process) for name, process in running.items()})
    return {name: results[name] for name in commands}


def _killed(process):
    """`process`, killed if it still runs (out of time, or the caller failed)."""
    if process.poll() is None:
        process.kill()
    return process


def json_line(stdout):
    """The first line of `stdout` that is a JSON object (what evaluate.py prints)."""
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][0])


def one_error_line(result):
    """The one `error: ...` line of a binary that failed as a user's mistake should make it
    fail: exit status 1, no traceback, exactly one such line on stderr."""
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-2000:]
    return errors[0]
