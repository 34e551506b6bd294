"""Shared pytest set-up: quiet TensorFlow, fixed seeds, float32 policy per test, and
the binaries: running them, and models they trained once for the whole session."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import shutil  # noqa: E402
import tempfile  # noqa: E402

import keras  # noqa: E402
import pytest  # noqa: E402

from nlpzoo.tasks import builtin as _builtin_tasks  # noqa: E402,F401  (registers the built-in task families)

from tests.helpers.autotuning import keras_datasets_as_in_tests  # noqa: E402
from tests.helpers.fresh_process import reset_keras_state  # noqa: E402
from tests.helpers.slow_tests import read_slow_list  # noqa: E402
from tests.helpers.trained_models import TrainedModels  # noqa: E402

keras_datasets_as_in_tests()


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Every test starts from float32 and a fixed seed, whatever the last one did."""
    reset_keras_state()
    yield
    keras.mixed_precision.set_global_policy("float32")


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


# Files of few, long tests (a shared uninterrupted training, then kills and resumptions),
# handed to a worker first so that they do not end the run on one worker while the other
# idles. The Makefile's --no-loadscope-reorder keeps the order made here; the other files
# follow as pytest-xdist would order them, those of most tests first.
RUN_FIRST = ("tests/tools/test_resume_after_kill.py", "tests/tools/test_broken_runs.py")


def mark_listed_tests_slow(items):
    """Marks slow the tests that tests/slow_tests.txt lists, one by one or by file
    (measured: tests/helpers/slow_tests.py), so that `make test` keeps to its 12 minutes."""
    slow = read_slow_list()
    for item in items:
        if item.nodeid in slow or item.nodeid.split("::")[0] in slow:
            item.add_marker(pytest.mark.slow)


def order_files_for_workers(items):
    """`items` grouped by file: `RUN_FIRST`'s files in its order, then the files of most
    tests (each file's tests in their own order)."""
    files = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    first = {path: rank for rank, path in enumerate(RUN_FIRST)}
    order = sorted(files, key=lambda path: (first.get(path, len(first)), -len(files[path])))
    items[:] = [item for path in order for item in files[path]]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config, items):
    mark_listed_tests_slow(items)  # before `-m "not slow"` deselects
    yield
    order_files_for_workers(items)  # the tests that are left


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
