"""Binaries started from tests as forks of a Python that has already imported TensorFlow.

A test that runs `python tools/train.py ...` spends much of a small run importing
TensorFlow, Keras, tf-text and KerasHub (21 s on the 2-core machine with two tests
running beside it; the project's own modules took 1.2 s more). One server per test process imports those third-party libraries once, then forks a
child for every binary a test starts: each child is still a process of its own (its own
pid, exit status, signals, locks, stdout and stderr files), it runs the script as `python
script` would (`sys.argv`, `sys.path[0]`, `__main__`, atexit handlers), and it imports the
project itself afresh, so a binary that forgets one of our imports fails here as it would
for a user. The server has run no TensorFlow op and started no thread pool, so the fork
takes no lock with it.

`tests.helpers.binaries.start_python` uses it unless the test needs what a fork cannot give:
a `preexec_fn` (a resource limit), an environment that differs in more than `PER_RUN_ENV`
(a variable TensorFlow may read at import), or `--verbosity` (`arguments_allow_fork`).
`NLPZOO_TEST_PRELOAD=0` starts every binary as a fresh interpreter.

>>> import subprocess, tempfile
>>> server = PreloadServer(env=dict(os.environ))
>>> out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
>>> process = server.start(["-c", "import sys; print(sys.argv[1:]); sys.exit(3)", "a"],
...                        env=dict(os.environ), cwd=".", stdout=out, stderr=err)
>>> process.wait(timeout=60)
3
>>> _ = out.seek(0); out.read()
"['a']\\n"
"""

import ctypes
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

# Heavy third-party imports done once by the server (never the project's own modules).
PRELOADED = ("numpy", "tensorflow", "keras", "tensorflow_text", "keras_hub")
# Environment variables a run may set differently from the server's (read after import).
PER_RUN_ENV = frozenset({"TF_CONFIG", "TMPDIR", "NLPZOO_TEST_PRELOAD", "PYTEST_CURRENT_TEST",
                         "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID",
                         "PYTEST_XDIST_WORKER_COUNT"})
_PR_SET_PDEATHSIG = 1  # prctl's option number (linux/prctl.h)
_MESSAGE_BYTES = 1 << 20


def available():
    """Whether binaries may be forked from a preloaded server here (Linux, not turned off)."""
    return sys.platform.startswith("linux") and os.environ.get("NLPZOO_TEST_PRELOAD") != "0"


def arguments_allow_fork(arguments):
    """Whether `python *arguments` may be a fork: not when it asks a binary for
    `--verbosity`, which lets TensorFlow print the start-up lines it prints at import (a
    fork imported it long before).

    >>> arguments_allow_fork(["tools/evaluate.py", "--model_dir=x", "--verbosity=1"])
    False
    """
    return not any(str(argument).startswith("--verbosity") for argument in arguments)


def env_allows_fork(server_env, env):
    """Whether a run with `env` may be a fork of a server started with `server_env`: they
    differ only in `PER_RUN_ENV`.

    >>> env_allows_fork({"A": "1", "TMPDIR": "/t"}, {"A": "1", "TMPDIR": "/u", "TF_CONFIG": "{}"})
    True
    >>> env_allows_fork({"A": "1"}, {"A": "2"})
    False
    """
    keys = (set(server_env) | set(env)) - PER_RUN_ENV
    return all(server_env.get(key) == env.get(key) for key in keys)


class PreloadedProcess:
    """A forked binary, with the part of `subprocess.Popen` the tests use: `pid`, `args`,
    `returncode`, `poll`, `wait`, `send_signal`, `terminate`, `kill`. Its exit status is
    known by its run number, not its pid: pids come round again within a test session
    (TensorFlow's threads take them from the same pool)."""

    def __init__(self, server, run, pid, args):
        self._server, self._run, self.pid, self.args = server, run, pid, args
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            self._server.pump(0)
            self.returncode = self._server.exit_codes.pop(self._run, None)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._server.pump(0.5 if left is None else min(left, 0.5))
        return self.returncode

    def send_signal(self, signum):
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


class PreloadServer:
    """The test process's end of one server (see the module's docstring): `start` forks a
    run, `pump` collects the exit statuses the server reports. Threads may share it (the
    shared trainings of tests/helpers/trained_models.py wait in threads of their own):
    one at a time reads the server's messages, and a run's start is read by the thread
    that asked for it. The server ends when the process that started it does."""

    def __init__(self, env, cwd=None):
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env = dict(env)
        self.exit_codes = {}  # {run number: exit status}, until its PreloadedProcess reads it
        self._started = []  # (run number, pid) of starts not yet handed out
        self._lock = threading.RLock()
        self._socket = here
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.preloaded_python", str(there.fileno())],
            pass_fds=(there.fileno(),), env=self.env, cwd=cwd or _root(),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        there.close()
        message = self._receive(timeout=600)
        if message != {"ready": True}:
            raise RuntimeError(f"the preload server did not start: {message}")

    def alive(self):
        return self._process.poll() is None

    def _receive(self, timeout):
        ready, _, _ = select.select([self._socket], [], [], timeout)
        if not ready:
            return None
        data = self._socket.recv(_MESSAGE_BYTES)
        if not data:
            raise RuntimeError("the preload server ended (killed?); "
                               f"exit status {self._process.wait()}")
        return json.loads(data)

    def pump(self, timeout):
        """Reads the server's messages for up to `timeout` seconds (stops at the first)."""
        with self._lock:
            message = self._receive(timeout)
            while message is not None:
                if "exited" in message:
                    self.exit_codes[message["exited"]] = message["returncode"]
                else:
                    self._started.append((message["started"], message["pid"]))
                message = self._receive(0)

    def start(self, arguments, env, cwd, stdout, stderr):
        """Forks `python *arguments` with `env` and `cwd`, its output in the open files
        `stdout` and `stderr`; a `PreloadedProcess`."""
        request = json.dumps({"arguments": list(arguments), "env": dict(env), "cwd": str(cwd)})
        with self._lock:  # the next start the server reports is this one's
            socket.send_fds(self._socket, [request.encode()], [stdout.fileno(), stderr.fileno()])
            deadline = time.monotonic() + 600
            while not self._started:
                if not self.alive() or time.monotonic() > deadline:
                    raise RuntimeError("the preload server did not start the run")
                self.pump(1)
            run, pid = self._started.pop(0)
        return PreloadedProcess(self, run, pid, [sys.executable, *arguments])

    def close(self):
        self._socket.close()
        self._process.wait(timeout=60)


def _root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --- the server (python -m tests.helpers.preloaded_python FD) ---------------------------------


def _die_with_parent():
    """A run forked here is killed when the server ends (the server forks it from its
    one thread: Linux sends the signal when the forking thread ends)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _exit_code(error):
    """The exit status Python gives an uncaught SystemExit."""
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code
    print(error.code, file=sys.stderr)
    return 1


def _run(arguments):
    """Runs `python *arguments` (a script or `-c CODE`) in this process; its exit status."""
    import runpy
    import types

    if arguments[0] == "-c":
        sys.argv, sys.path[0] = ["-c", *arguments[2:]], ""
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        exec(compile(arguments[1], "<string>", "exec"), main.__dict__)
    else:
        script = arguments[0]
        sys.argv = list(arguments)
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")
    return 0


def _child(request, out_fd, err_fd):
    """In the forked child: becomes the run `request` asks for, then exits."""
    import atexit
    import random
    import tempfile
    import threading
    import traceback

    _die_with_parent()
    null = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((null, 0), (out_fd, 1), (err_fd, 2)):
        os.dup2(source, target)
        os.close(source)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    # What a fresh interpreter would not share with its siblings.
    random.seed()
    sys.modules["numpy"].random.seed()
    tempfile.tempdir = None
    try:
        code = _run(request["arguments"])
    except SystemExit as error:
        code = _exit_code(error)
    except KeyboardInterrupt:
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _reap(channel, runs):
    """Reports the exit status of each run that ended; `runs`: {pid: run number}."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in runs:
            channel.send(json.dumps({"exited": runs.pop(pid),
                                     "returncode": os.waitstatus_to_exitcode(status)}).encode())


def serve(fd):
    """The server's loop: one forked run per request, each exit status reported. It
    ends when the test process does (its parent changes), whichever thread of it started
    the server, and its runs with it (`_die_with_parent`)."""
    parent = os.getppid()
    channel = socket.socket(fileno=fd)
    import importlib

    # TensorFlow's C++ start-up lines, printed before its logging starts whatever
    # TF_CPP_MIN_LOG_LEVEL says, would land in the test run's output.
    kept_stderr, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        for name in PRELOADED:
            importlib.import_module(name)
    finally:
        os.dup2(kept_stderr, 2)
        os.close(kept_stderr)
        os.close(null)
    channel.send(json.dumps({"ready": True}).encode())
    runs, numbers = {}, itertools.count(1)  # {pid: run number} of the runs still going
    while os.getppid() == parent:
        ready, _, _ = select.select([channel], [], [], 0.05)
        _reap(channel, runs)
        if not ready:
            continue
        message, fds, _, _ = socket.recv_fds(channel, _MESSAGE_BYTES, 2)
        if not message:
            return
        request = json.loads(message)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            channel.close()
            _child(request, *fds)
        for descriptor in fds:
            os.close(descriptor)
        runs[pid] = run = next(numbers)
        channel.send(json.dumps({"started": run, "pid": pid}).encode())


if __name__ == "__main__":
    serve(int(sys.argv[1]))
