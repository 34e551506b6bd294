"""Tiny models trained once per test session by tools/train.py, shared read-only."""

import pytest
import json
import os
import shutil
import subprocess
import threading
import time

from tests.helpers.binaries import TOOL_TIMEOUT_S, finish_processes, start_tool
from tests.helpers.paths import CONLL, MRPC, TREC


# --- models trained once per session ------------------------------------------------------

# Tiny trainings on the bundled samples. Every test that needs *a* trained model of
# a task shares one; each set of flags also carries what the tests that read it check
# (3 epochs for the TensorBoard curves, the whole TREC sample for its six labels, ...).
# The classifier leaves --task, --preset and --epochs to their defaults (tests check them).
_COMMON_FLAGS = ("--learning_rate=1e-3", "--max_seq_length=32", "--mixed_precision=float32")
TRAINING_FLAGS = {
    "classification": (
        "--train_data", os.path.join(TREC, "train.label"),
        "--eval_data", os.path.join(TREC, "test.label"),
        "--batch_size=32", "--vocab_size=1000", *_COMMON_FLAGS),
    "tagging": (
        "--task=tagging", "--preset=bert_tiny_crf_tagger",  # a task preset: its head, our labels
        "--train_data", os.path.join(CONLL, "train.txt"),
        "--eval_data", os.path.join(CONLL, "dev.txt"),
        "--epochs=1", "--batch_size=8", "--vocab_size=300", "--log_every_steps=1",
        *_COMMON_FLAGS),
    "span_ner": (  # with casing features: predict, evaluate and export carry them too
        "--task=span_ner", "--max_span_width=3", "--flat_method=exact", "--casing_features",
        "--train_data", os.path.join(CONLL, "train.txt"),
        "--eval_data", os.path.join(CONLL, "dev.txt"),
        "--epochs=1", "--batch_size=8", "--vocab_size=300", *_COMMON_FLAGS),
    "bi_encoder": (
        "--task=bi_encoder", "--objective=softmax",
        "--train_data", os.path.join(MRPC, "train.tsv"),
        "--eval_data", os.path.join(MRPC, "dev.tsv"),
        "--epochs=1", "--batch_size=16", "--vocab_size=300", *_COMMON_FLAGS),
}
TRAINED_MAX_SEQ_LENGTH = 32


def _fingerprint(directory):
    """(path, size, mtime) of every file under `directory`: changes when anything does."""
    found = []
    for parent, _, files in os.walk(directory):
        for name in files:
            stat = os.stat(os.path.join(parent, name))
            found.append((os.path.relpath(os.path.join(parent, name), directory),
                          stat.st_size, stat.st_mtime_ns))
    return sorted(found)


class TrainedModels:
    """tools/train.py runs of `TRAINING_FLAGS`, each once per session, shared read-only.

    `start(*tasks)` starts trainings in the background (several run at once);
    `model_dir(task)` waits for one and returns its model directory. Tests must
    not change a shared directory: one that writes to it works on
    `copy(task, destination)`. A change fails the test that made it (at its
    teardown, see `_shared_model_dirs_stay_unchanged`).

    With pytest-xdist (`shared=True`), every worker gets the same `base`: the
    first worker to start a training claims it (an atomic `mkdir`), runs it and
    publishes its result in `base`; the others wait for that result. So each
    training runs once per test run, not once per worker.
    """

    def __init__(self, base, shared=False):
        self._base = base
        self._shared = shared
        self._running = {}
        self._results = {}
        self._fingerprints = {}
        self._publishers = {}  # shared: task -> the thread that finishes and publishes it

    def start(self, *tasks):
        for task in tasks:
            if task in self._running or task in self._results or not self._claim(task):
                continue
            self._running[task] = start_tool(
                "train.py", *TRAINING_FLAGS[task], "--model_dir", self._directory(task))
            if self._shared:  # published when it ends, whether this worker needs it or not
                self._publishers[task] = threading.Thread(target=self._finish, args=(task,))
                self._publishers[task].start()

    def result(self, task):
        """The finished training's `CompletedProcess`; fails the test if it failed."""
        self.start(task)
        if task in self._publishers:
            self._publishers.pop(task).join()
        if task in self._running:
            self._finish(task)
        elif task not in self._results:  # another worker's training
            self._results[task] = self._published(task)
            if self._results[task].returncode == 0:
                self._fingerprints[task] = _fingerprint(self._directory(task))
        result = self._results[task]
        if result.returncode != 0:
            pytest.fail(f"the shared {task} training failed:\n{result.stderr[-3000:]}")
        self.check_unchanged(task)
        return result

    def model_dir(self, task):
        self.result(task)
        return self._directory(task)

    def copy(self, task, destination):
        """A private copy of the trained model directory, for tests that write to it."""
        shutil.copytree(self.model_dir(task), str(destination))
        return str(destination)

    def check_unchanged(self, task=None):
        """Fails if a test changed a shared model directory (all of them by default)."""
        for task in [task] if task else list(self._fingerprints):
            if task in self._fingerprints:
                assert _fingerprint(self._directory(task)) == self._fingerprints[task], (
                    f"a test changed the shared {task} model directory "
                    f"{self._directory(task)}; use trained_models.copy() to write to one")

    def close(self):
        """Stops trainings left running and removes every file; a worker of a shared
        run finishes its trainings instead (other workers may wait for them) and
        leaves the files to the controller."""
        if self._shared:
            for publisher in self._publishers.values():
                publisher.join()
            return
        for process in self._running.values():
            process.kill()
        finish_processes(self._running)
        self._running.clear()
        shutil.rmtree(self._base, ignore_errors=True)

    def _claim(self, task):
        if not self._shared:
            return True
        try:
            os.mkdir(self._directory(task) + ".claimed")
            return True
        except FileExistsError:
            return False

    def _finish(self, task):
        process = self._running[task]
        try:
            self._results.update(finish_processes({task: process}))
        except subprocess.TimeoutExpired:
            self._results[task] = subprocess.CompletedProcess(
                process.args, -9, "", f"timed out after {TOOL_TIMEOUT_S} s")
        del self._running[task]
        result = self._results[task]
        if result.returncode == 0:
            self._fingerprints[task] = _fingerprint(self._directory(task))
        if self._shared:
            published = self._directory(task) + ".result.json"
            with open(published + ".partial", "w", encoding="utf-8") as f:
                json.dump([result.args, result.returncode, result.stdout, result.stderr], f)
            os.replace(published + ".partial", published)

    def _published(self, task):
        """The result another worker published for `task`, once it is there."""
        published = self._directory(task) + ".result.json"
        deadline = time.monotonic() + TOOL_TIMEOUT_S + 60
        while not os.path.exists(published):
            if time.monotonic() > deadline:
                return subprocess.CompletedProcess(
                    [], -9, "", f"no other worker published the {task} training in time")
            time.sleep(0.2)
        with open(published, encoding="utf-8") as f:
            return subprocess.CompletedProcess(*json.load(f))

    def _directory(self, task):
        return os.path.join(self._base, task)
