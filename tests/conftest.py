"""Shared pytest set-up: quiet TensorFlow, fixed seeds, float32 policy per test, and
the binaries: running them, and models they trained once for the whole session."""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import keras  # noqa: E402
import pytest  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SHARED_DATA = os.path.abspath(os.path.join(ROOT, "..", "shared", "data"))
TREC = os.path.join(ROOT, "samples", "trec")
CONLL = os.path.join(ROOT, "samples", "conll2003")
MRPC = os.path.join(ROOT, "samples", "mrpc")
TOOL_TIMEOUT_S = 600


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Every test starts from float32 and a fixed seed, whatever the last one did."""
    keras.mixed_precision.set_global_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.mixed_precision.set_global_policy("float32")


def shared_data_path(*parts):
    """Path under ../shared/data, or skip the test when the folder is absent."""
    path = os.path.join(SHARED_DATA, *parts)
    if not os.path.exists(path):
        pytest.skip(
            f"real data set not found at {path}: it ships with CI machines, "
            "not with a clone of the repository"
        )
    return path


# --- running the binaries -----------------------------------------------------------------


def tool_path(name):
    """tools/<name>, e.g. tool_path("train.py")."""
    return os.path.join(ROOT, "tools", name)


def start_python(*arguments, preexec_fn=None):
    """Starts `python *arguments` in the repository root; see `finish_processes`.

    Output goes to temporary files, not pipes, so that many processes can run
    at once without one blocking on a full pipe. `preexec_fn` runs in the child
    before Python starts (e.g. to set a `resource` limit).
    """
    stdout, stderr = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    process = subprocess.Popen([sys.executable, *arguments], stdout=stdout, stderr=stderr,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), cwd=ROOT,
                               preexec_fn=preexec_fn)
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
        "--task=tagging", "--preset=bert_tiny", "--head=crf",
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


_TRAINED_MODELS = pytest.StashKey()
_SHARED_BASE = pytest.StashKey()

# Fixtures that hand out one shared trained model directory each, by task. Trainings
# start in the background as soon as the collected tests are known to need them, so
# that they run beside the in-process tests that come first (which leave a core idle).
TRAINED_MODEL_DIR_FIXTURES = {
    "trained_classifier_dir": "classification",
    "trained_tagger_dir": "tagging",
    "trained_span_ner_dir": "span_ner",
    "trained_bi_encoder_dir": "bi_encoder",
}


def _trained_models(config):
    if _TRAINED_MODELS not in config.stash:
        worker_input = getattr(config, "workerinput", None)  # set in pytest-xdist workers
        if worker_input and "trained_models_base" in worker_input:
            models = TrainedModels(worker_input["trained_models_base"], shared=True)
        else:
            models = TrainedModels(tempfile.mkdtemp(prefix="trained_models_"))
        config.stash[_TRAINED_MODELS] = models
    return config.stash[_TRAINED_MODELS]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's controller: every worker shares one folder of trained models."""
    config = node.config
    if _SHARED_BASE not in config.stash:
        config.stash[_SHARED_BASE] = tempfile.mkdtemp(prefix="trained_models_")
    node.workerinput["trained_models_base"] = config.stash[_SHARED_BASE]


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    needed = {fixture for item in session.items for fixture in item.fixturenames}
    _trained_models(session.config).start(*(
        task for fixture, task in TRAINED_MODEL_DIR_FIXTURES.items() if fixture in needed))


def pytest_unconfigure(config):
    if _TRAINED_MODELS in config.stash:
        config.stash[_TRAINED_MODELS].close()
    if _SHARED_BASE in config.stash:  # the controller, after every worker has finished
        shutil.rmtree(config.stash[_SHARED_BASE], ignore_errors=True)


@pytest.fixture(scope="session")
def trained_models(request):
    """The session's `TrainedModels` (tiny models trained by tools/train.py)."""
    return _trained_models(request.config)


@pytest.fixture(autouse=True)
def _shared_model_dirs_stay_unchanged(request):
    """After each test: the shared trained model directories are as training left them."""
    yield
    if _TRAINED_MODELS in request.config.stash:
        request.config.stash[_TRAINED_MODELS].check_unchanged()


@pytest.fixture(scope="session")
def trained_classifier_dir(trained_models):
    """A TREC classifier's model directory (read-only: copy it to write to it)."""
    return trained_models.model_dir("classification")


@pytest.fixture(scope="session")
def trained_tagger_dir(trained_models):
    """A CoNLL CRF tagger's model directory (read-only: copy it to write to it)."""
    return trained_models.model_dir("tagging")


@pytest.fixture(scope="session")
def trained_span_ner_dir(trained_models):
    """A CoNLL span NER model directory (read-only: copy it to write to it)."""
    return trained_models.model_dir("span_ner")


@pytest.fixture(scope="session")
def trained_bi_encoder_dir(trained_models):
    """An MRPC-sample softmax bi-encoder's model directory (read-only: copy it to write to it)."""
    return trained_models.model_dir("bi_encoder")
