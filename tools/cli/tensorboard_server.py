"""A `tensorboard` program on a free localhost port, for scripts and tests that read it."""

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from nlpzoo.tasks.io.json_text import parse_json


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now.

    Examples:
    >>> 0 < free_port() < 65536
    True
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TensorBoardServer:
    """`python -m tensorboard.main --logdir <logdir>` on a free port of 127.0.0.1.

    `get` and `post` read its JSON HTTP API (`/data/runs`,
    `/data/plugin/scalars/...`); `wait_for_runs` waits until it has read the
    logs; `stop` ends it. Also a context manager that stops it on exit.

    Args:
        logdir: the folder of runs to serve.
        output: a file object for the program's own output (None: discarded).

    Examples:
    >>> import tempfile
    >>> with TensorBoardServer(tempfile.mkdtemp()) as server:
    ...     server.url.startswith("http://127.0.0.1:")
    True
    """

    def __init__(self, logdir, output=None):
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
             "--host", "127.0.0.1", "--port", str(port)],
            stdout=output or subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def get(self, path, **query):
        """The JSON answer to GET `path` with `query` parameters."""
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        with urllib.request.urlopen(url, timeout=10) as response:
            return parse_json(response.read(), url)

    def post(self, path, body):
        """The JSON answer to POST `path` with the JSON `body` (the HParams API)."""
        request = urllib.request.Request(f"{self.url}{path}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return parse_json(response.read(), request.full_url)

    def wait_for_runs(self, runs, timeout_s=60):
        """Waits until the server lists every run of `runs`; raises `TimeoutError` else."""
        self._wait(lambda listed: set(runs) <= set(listed), timeout_s,
                   f"did not load the runs {sorted(runs)}")

    def wait_until_loaded(self, timeout_s=60, settle_s=2.0):
        """Waits until some runs are listed and the list has not changed for `settle_s`.

        Returns:
            The run names.
        """
        seen = {"runs": None, "since": None}

        def settled(listed):
            if listed != seen["runs"]:
                seen.update(runs=listed, since=time.monotonic())
            return bool(listed) and time.monotonic() - seen["since"] >= settle_s

        self._wait(settled, timeout_s, "found no runs")
        return seen["runs"]

    def _wait(self, done, timeout_s, failure):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tensorboard exited with status {self.process.returncode}")
            try:
                if done(sorted(self.get("/data/runs"))):
                    return
            except OSError:  # not listening yet
                pass
            time.sleep(0.25)
        raise TimeoutError(f"tensorboard {failure} in {timeout_s} s")

    def stop(self):
        """Ends the program (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
