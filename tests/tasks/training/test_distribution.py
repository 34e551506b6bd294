"""--distribution_strategy (tasks/training/distribution.py): strategy selection in-process; mirrored
replicas against one device; two multi-worker processes through tools/train.py and
tools/pretrain.py, and their resumption after a worker dies."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from nlpzoo.tasks.io.ownership import LOCK, MARKER
from nlpzoo.tasks.training.training_state import STATE_FILE
from tests.helpers.binaries import TOOL_TIMEOUT_S, finish_processes, start_python, tool_path
from tests.helpers.paths import CONLL, ROOT, TREC
from nlpzoo.tasks.training import distribution
from nlpzoo.tools.cli.errors import UserError


# --- selection logic, in-process ----------------------------------------------------------


def test_auto_and_one_device_pick_the_single_device_without_gpus():
    assert not tf.config.list_physical_devices("GPU")  # this machine
    for name in ("auto", "one_device"):
        strategy = distribution.make_strategy(name)
        assert isinstance(strategy, tf.distribute.OneDeviceStrategy)
        assert strategy.num_replicas_in_sync == 1
        assert distribution.is_chief(strategy)
    assert isinstance(distribution.make_strategy("mirrored"), tf.distribute.MirroredStrategy)


def test_flags_are_defined_once_for_every_training_binary():
    from absl import flags

    values = flags.FlagValues()
    distribution.define_distribution_flags(values)
    values(["train", "--distribution_strategy=multi_worker_mirrored", "--tpu=grpc://h:8470"])
    assert values.distribution_strategy == "multi_worker_mirrored" and values.tpu == "grpc://h:8470"
    with pytest.raises(flags.IllegalFlagValueError):
        values(["train", "--distribution_strategy=parameter_server"])
    for binary in ("train.py", "pretrain.py"):
        source = open(tool_path(binary)).read()
        assert "distribution.define_distribution_flags()" in source
        assert "distribution.make_strategy(FLAGS.distribution_strategy" in source


@pytest.mark.parametrize("tf_config, expected", [
    (None, "TF_CONFIG environment variable, which is not set"),
    ("{not json", "TF_CONFIG is not JSON"),
    ('{"cluster": {}, "task": {"type": "worker", "index": 0}}', 'expected {"cluster"'),
    ('{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 2}}',
     '"task" must be'),
])
def test_multi_worker_refuses_a_missing_or_malformed_tf_config(monkeypatch, tf_config, expected):
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(UserError, match="^[^\n]*$") as error:
        distribution.make_strategy("multi_worker_mirrored")
    assert expected in str(error.value)


def test_tpu_without_a_tpu_fails_in_one_line(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    with pytest.raises(UserError, match="^--distribution_strategy=tpu: no TPU reachable"):
        distribution.make_strategy("tpu")


def test_datasets_are_sharded_by_data():
    dataset = distribution.shard_by_data(tf.data.Dataset.range(10).batch(4))
    assert (dataset.options().experimental_distribute.auto_shard_policy
            == tf.data.experimental.AutoShardPolicy.DATA)
    assert [batch.tolist() for batch in dataset.as_numpy_iterator()][0] == [0, 1, 2, 3]


def test_xla_over_several_cpu_devices_of_one_process_is_refused():
    class TwoCpus:  # what MirroredStrategy.extended reports over two logical CPUs
        worker_devices = ("/job:localhost/replica:0/task:0/device:CPU:0",
                          "/job:localhost/replica:0/task:0/device:CPU:1")

    strategy = type("Strategy", (), {"extended": TwoCpus()})()
    with pytest.raises(UserError, match="--jit_compile=true cannot run 2 replicas"):
        distribution.check_jit_compile(strategy, True)
    distribution.check_jit_compile(strategy, False)


# --- mirrored over two logical CPU devices ------------------------------------------------


def _mirrored_steps(task, train_file):
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tests", "helpers", "mirrored_steps.py"), task, train_file,
         "false"], capture_output=True, text=True, cwd=ROOT, timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_mirrored_steps_equal_one_device_steps_on_the_same_global_batch():
    """Two replicas each take half of every global batch of 8; Keras scales each replica's
    loss by 1/2 and the gradients are summed, so the SGD steps are those of one device on
    the whole batch. Only float32 rounding differs (a sum of two half-batch means instead
    of one mean): a relative 1e-5 on the loss and 1e-6 on weights that move by ~2e-2."""
    result = _mirrored_steps("classification", os.path.join(TREC, "train.label"))
    assert result["replicas"] == 2
    assert len(result["one_device"]) == len(result["mirrored"]) == 4
    assert result["mirrored"] == pytest.approx(result["one_device"], rel=1e-5)
    # tools/train.py's StepLogger reads Keras's loss mean (sync-on-read variables summed
    # over the replicas): each step's example-weighted loss, as on one device.
    assert len(result["mirrored_step_logger"]) == 4
    assert result["mirrored_step_logger"] == pytest.approx(result["one_device_step_logger"],
                                                           rel=1e-5)
    # Keras logs the running mean of the epoch; step k's own loss is k m_k - (k-1) m_(k-1).
    means = [0.0] + result["one_device"]
    own = [k * means[k] - (k - 1) * means[k - 1] for k in range(1, len(means))]
    assert result["one_device_step_logger"] == pytest.approx(own, rel=1e-5)
    assert result["max_weight_change"] > 1e-2
    assert result["max_weight_difference"] < 1e-6


@pytest.mark.slow
def test_mirrored_tagger_loss_is_scaled_per_replica():
    """Token-averaged losses (our own compute_loss) are averaged within each replica, then
    over replicas: the first step's loss equals one device's up to the imbalance of tokens
    between the two halves (about 0.3% here), not twice it, as it was when our models did
    not scale their loss by 1/replicas."""
    result = _mirrored_steps("tagging", os.path.join(CONLL, "train.txt"))
    assert result["replicas"] == 2
    assert result["mirrored"][0] == pytest.approx(result["one_device"][0], rel=0.02)


# --- two workers through tools/train.py and tools/pretrain.py -------------------------------


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _start_workers(tool, flags, temp_dir, count=2):
    """Starts `count` processes of tools/<tool>, the workers of one cluster on localhost
    ports (each its own TF_CONFIG), their temporary files under `temp_dir`; see
    `finish_processes`."""
    workers = [f"localhost:{port}" for port in _free_ports(count)]
    processes = {}
    saved = {name: os.environ.get(name) for name in ("TF_CONFIG", "TMPDIR")}
    os.makedirs(temp_dir, exist_ok=True)
    try:
        os.environ["TMPDIR"] = str(temp_dir)
        for index in range(count):
            os.environ["TF_CONFIG"] = json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
            processes[index] = start_python(tool_path(tool), *flags)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return processes


def _worker_dirs(temp_dir):
    """The non-chief model directories left under `temp_dir`."""
    return {name for name in os.listdir(temp_dir)
            if name.startswith(distribution._WORKER_DIR_PREFIX)}


def _check_workers(results, temp_dir, left_before=frozenset()):
    """Both workers finished, in sync (the same final weights), and the non-chief's
    temporary model directory is gone (`left_before`: those of killed workers)."""
    for index, result in results.items():
        assert result.returncode == 0, f"worker {index}: {result.stderr[-3000:]}"
        assert f"MultiWorkerMirroredStrategy, 2 replicas, task worker {index}" in result.stdout
    assert ", task worker 0 (chief)" in results[0].stdout
    assert "(chief)" not in results[1].stdout
    fingerprints = [[line for line in result.stdout.splitlines()
                     if line.startswith("weights fingerprint ")] for result in results.values()]
    assert len(fingerprints[0]) == 1 and fingerprints[0] == fingerprints[1]
    assert _worker_dirs(temp_dir) == set(left_before)


@pytest.mark.slow
def test_two_workers_train_to_the_end_and_only_the_chief_writes(tmp_path):
    model_dir = str(tmp_path / "run")
    flags = ["--task=classification", "--preset=bert_tiny",
             f"--train_data={os.path.join(TREC, 'train.label')}",
             f"--eval_data={os.path.join(TREC, 'dev.label')}", f"--model_dir={model_dir}",
             "--epochs=1", "--batch_size=16", "--max_seq_length=32", "--vocab_size=400",
             "--mixed_precision=float32", "--distribution_strategy=multi_worker_mirrored"]
    results = finish_processes(_start_workers("train.py", flags, tmp_path / "tmp"))
    _check_workers(results, tmp_path / "tmp")
    for name in ("config.json", "vocab.txt", "labels.json", "best_model.keras",
                 "metrics.json", "README.md"):
        assert os.path.exists(os.path.join(model_dir, name)), name
    assert not os.path.exists(os.path.join(model_dir, "checkpoints"))
    # The worker wrote nothing there: the chief's metrics are in the chief's output.
    metrics = open(os.path.join(model_dir, "metrics.json")).read()
    assert json.dumps(json.loads(metrics), sort_keys=True) in results[0].stdout
    # Each step's logged loss is the mean over both replicas: a finite cross-entropy of
    # six classes, near ln(6) = 1.8 at the start.
    losses = [float(line.split("loss: ")[1].split()[0]) for line in results[0].stdout.splitlines()
              if " - loss: " in line]
    assert losses and all(0.1 < loss < 3.0 for loss in losses), losses


@pytest.mark.slow
def test_two_workers_train_a_packed_tagger_to_the_end(tmp_path):
    # Packing is on by default; batches of 4 over 18 sentences leave small batches whose
    # share on one worker is empty: it packed into -2147483647 rows (ScatterNd failed on
    # one worker, the collective on the other) before packing_plan took an empty max as 0.
    train = tmp_path / "train.txt"
    train.write_text("".join(open(os.path.join(CONLL, name)).read() + "\n"
                             for name in ("train.txt", "dev.txt")))
    flags = ["--task=tagging", "--preset=bert_tiny_tagger", f"--train_data={train}",
             f"--eval_data={os.path.join(CONLL, 'dev.txt')}",
             f"--model_dir={tmp_path / 'run'}", "--epochs=1", "--batch_size=4",
             "--max_seq_length=32", "--vocab_size=300", "--mixed_precision=float32",
             "--distribution_strategy=multi_worker_mirrored"]
    results = finish_processes(_start_workers("train.py", flags, tmp_path / "tmp"))
    _check_workers(results, tmp_path / "tmp")
    assert json.load(open(tmp_path / "run" / "config.json"))["pack_length"] == 1


# What the chief leaves in a finished pretraining run: our ownership marker and run lock
# (tasks.io.ownership) first, and nothing of the other worker's.
PRETRAINING_RUN_FILES = sorted([MARKER, LOCK, "README.md", "config.json", "encoder", "logs",
                                "metrics.json", "vocab.txt"])


def _trec_corpus(path):
    """The bundled TREC questions as a corpus: documents of ten questions."""
    with open(os.path.join(TREC, "train.label"), encoding="latin-1") as f:
        questions = [line.split(" ", 1)[1].strip() for line in f if line.strip()]
    documents = ["\n".join(questions[i:i + 10]) for i in range(0, len(questions), 10)]
    path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return str(path)


def _pretraining_flags(tmp_path, model_dir, max_steps):
    return ["--preset=bert_tiny", "--objective=mlm",
            f"--corpus={_trec_corpus(tmp_path / 'corpus.txt')}", f"--model_dir={model_dir}",
            "--vocab_size=500", f"--max_steps={max_steps}", "--steps_per_checkpoint=2",
            "--batch_size=8", "--max_seq_length=64", "--mixed_precision=float32",
            "--distribution_strategy=multi_worker_mirrored"]


@pytest.mark.slow
def test_two_workers_pretrain_to_the_end_and_only_the_chief_writes(tmp_path):
    model_dir = str(tmp_path / "run")
    flags = _pretraining_flags(tmp_path, model_dir, max_steps=4)
    results = finish_processes(_start_workers("pretrain.py", flags, tmp_path / "tmp"))
    _check_workers(results, tmp_path / "tmp")
    assert sorted(os.listdir(model_dir)) == PRETRAINING_RUN_FILES
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert metrics["steps"] == 4
    # Held-out MLM loss of a barely trained model: about ln(500) = 6.2 nats, reduced over
    # both workers' halves of every batch.
    assert 4.0 < metrics["mlm_loss"] < 8.0, metrics


@pytest.mark.slow
def test_when_a_worker_dies_the_chief_stops_and_both_resume_from_its_checkpoint(tmp_path):
    """A killed worker stops the chief at its next collective (TensorFlow's UnavailableError);
    the chief's last checkpoint stays, and the same command on both workers resumes from
    it: the non-chief starts from a copy of the chief's state, so both run the same
    remaining epochs (else their collectives would not pair up) and end in sync."""
    model_dir = str(tmp_path / "run")
    temp_dir = tmp_path / "tmp"
    flags = _pretraining_flags(tmp_path, model_dir, max_steps=8)  # 4 epochs of 2 steps
    processes = _start_workers("pretrain.py", flags, temp_dir)
    state = os.path.join(model_dir, "checkpoints", STATE_FILE)
    deadline = time.monotonic() + TOOL_TIMEOUT_S
    while (not os.path.exists(state) and processes[0].poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.05)
    processes[1].kill()  # right after the chief's first checkpoint: epochs 2 to 4 are left
    stopped = finish_processes(processes)
    assert stopped[1].returncode == -signal.SIGKILL
    assert stopped[0].returncode == 1 and "UnavailableError" in stopped[0].stderr, (
        stopped[0].stderr[-3000:])
    done = json.load(open(state))["epoch"]
    assert 1 <= done < 4
    assert "encoder" not in os.listdir(model_dir)
    left = _worker_dirs(temp_dir)  # SIGKILL: no exit handler removed the worker's directory
    assert len(left) == 1

    results = finish_processes(_start_workers("pretrain.py", flags, temp_dir))
    _check_workers(results, temp_dir, left_before=left)
    for result in results.values():
        epochs = [line for line in result.stdout.splitlines() if line.startswith("Epoch ")]
        assert epochs == [f"Epoch {epoch}/4" for epoch in range(done + 1, 5)], result.stdout
    assert sorted(os.listdir(model_dir)) == PRETRAINING_RUN_FILES
    assert json.load(open(os.path.join(model_dir, "metrics.json")))["steps"] == 8
