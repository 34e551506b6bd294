"""--distribution_strategy (tasks/training/distribution.py): strategy selection in-process; mirrored
replicas against one device; two multi-worker processes through tools/train.py and
tools/pretrain.py, and their resumption after a worker dies; tools/distill.py and
tools/multitask.py on two workers; a failing worker's one line; two workers against one process."""

import json
import os
import re
import shutil
import signal
import socket
import tempfile
import time

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.io.ownership import LOCK, MARKER
from nlpzoo.tasks.training.training_state import STATE_FILE
from tests.helpers.binaries import (
    TOOL_TIMEOUT_S,
    finish_processes,
    run_tool,
    start_python,
    tool_path,
)
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
    for binary in ("train.py", "pretrain.py", "distill.py", "multitask.py"):
        source = open(tool_path(binary)).read()
        assert "distribution.define_distribution_flags()" in source
        assert "distribution.make_strategy(FLAGS.distribution_strategy" in source


@pytest.mark.parametrize("tf_config, expected", [
    (None, "TF_CONFIG environment variable, which is not set"),
    ("{not json", "TF_CONFIG: not valid JSON"),
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


def test_a_lost_peer_is_one_line_naming_this_worker_and_the_lost_one(monkeypatch):
    monkeypatch.setattr(distribution, "_this_worker", "worker 0")
    monkeypatch.setattr(distribution, "_cluster", {"worker": ["localhost:23456",
                                                              "localhost:23457"]})
    by_task = tf.errors.UnavailableError(None, None, (
        "{{function_node __wrapped__CollectiveReduceV2_device_/job:worker/replica:0/task:0/"
        "device:CPU:0}} Collective ops is aborted by: Error reported from /job:worker/task:1: "
        "The following tasks are unhealthy\nAdditional GRPC error information"))
    by_address = tf.errors.UnavailableError(None, None, "Socket closed: ipv4:127.0.0.1:23457")
    for error in (by_task, by_address):
        line = distribution.worker_failure(error)
        assert line.startswith("worker 0: lost contact with worker 1 (UnavailableError: ")
        assert "\n" not in line and "function_node" not in line
    assert distribution.worker_failure(ValueError("a bug")) is None  # reported as a bug
    monkeypatch.setattr(distribution, "_this_worker", None)
    assert distribution.worker_failure(by_task) is None  # not a multi-worker process


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


def test_a_non_chief_resumes_from_a_copy_of_the_chief_s_state_and_entries(tmp_path,
                                                                           monkeypatch):
    """A non-chief worker's directory holds a copy of what resuming reads from the chief's
    --model_dir (and the multi-task entries' directories), not its logs; a fresh or
    finished run (no checkpoints/) gives it nothing but our marker."""
    monkeypatch.setattr(distribution, "is_chief", lambda strategy: False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    os.makedirs(tmp_path / "tmp")
    chief = tmp_path / "run"
    for name in ("checkpoints/training_state.json", "config.json", "vocab.txt",
                 "trec/config.json", "trec/labels.json", "logs/train/events", "metrics.json"):
        os.makedirs((chief / name).parent, exist_ok=True)
        (chief / name).write_text(name)
    copy = distribution.worker_model_dir(str(chief), None, subdirectories=["trec", "conll"])
    assert os.path.dirname(copy) == str(tmp_path / "tmp")
    assert sorted(os.listdir(copy)) == [MARKER, "checkpoints", "config.json", "trec", "vocab.txt"]
    assert sorted(os.listdir(os.path.join(copy, "trec"))) == ["config.json", "labels.json"]
    assert open(os.path.join(copy, "checkpoints", "training_state.json")).read() == (
        "checkpoints/training_state.json")
    shutil.rmtree(chief / "checkpoints")
    fresh = distribution.worker_model_dir(str(chief), None, subdirectories=["trec"])
    assert os.listdir(fresh) == [MARKER]


# --- mirrored over two logical CPU devices ------------------------------------------------


def _mirrored_steps(task, train_file, global_batch=8):
    result = finish_processes({"steps": start_python(
        os.path.join(ROOT, "tests", "helpers", "mirrored_steps.py"), task, train_file, "false",
        str(global_batch))})["steps"]
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
def test_mirrored_steps_on_unevenly_split_batches_equal_one_device_steps():
    """Global batches of 7 split 4 + 3. Each replica's mean over its own examples is
    weighted by its share of the batch (`losses.replica_weight`), so the steps are one
    device's on the whole batch: without that weight (a mean of the two halves' means)
    the weights differed by 2.2e-3 after these 4 SGD steps, 1.1e-8 with it. The losses
    StepLogger writes are one device's too (Keras's loss mean weighs each replica's mean
    by its examples)."""
    result = _mirrored_steps("classification", os.path.join(TREC, "train.label"), 7)
    assert result["replicas"] == 2 and len(result["one_device_step_logger"]) == 4
    assert result["mirrored_step_logger"] == pytest.approx(result["one_device_step_logger"],
                                                           rel=1e-5)
    assert result["max_weight_change"] > 1e-2
    assert result["max_weight_difference"] < 1e-6


@pytest.mark.slow
def test_mirrored_tagger_steps_equal_one_device_steps_over_unequal_words():
    """A token-averaged loss (our own compute_loss): the halves of a batch of 8 sentences
    hold different numbers of words, and each replica's mean over its words is weighted
    by its share of the batch's words, so losses and weights are one device's (before
    that weight: first-step loss 0.3% off, weights 7.5e-3 apart after 2 steps; with it
    6e-8)."""
    result = _mirrored_steps("tagging", os.path.join(CONLL, "train.txt"))
    assert result["replicas"] == 2
    assert result["mirrored"] == pytest.approx(result["one_device"], rel=1e-5)
    assert result["mirrored_step_logger"] == pytest.approx(result["one_device_step_logger"],
                                                           rel=1e-5)
    assert result["max_weight_change"] > 1e-2
    assert result["max_weight_difference"] < 1e-6


_CLIPPED_STEPS = """
import json
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from nlpzoo.tasks.training import distribution

x = np.arange(24, dtype="float32").reshape(8, 3) / 4
y = np.full((8, 1), 100.0, "float32")  # a gradient norm far above the bound of 1


def weights_after_one_step(name, clip_the_sum):
    strategy = distribution.make_strategy(name)
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, kernel_initializer="zeros")])
        model.compile(keras.optimizers.SGD(0.1, global_clipnorm=1.0), "mse")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    if clip_the_sum:
        distribution.build_for_fit(model, strategy, data)
    model.fit(distribution.shard_by_data(data), verbose=0)
    return np.concatenate([weight.ravel() for weight in model.get_weights()]).tolist()


print(json.dumps({"one_device": weights_after_one_step("one_device", True),
                  "mirrored": weights_after_one_step("mirrored", True),
                  "keras_alone": weights_after_one_step("mirrored", False)}))
"""


def test_replicas_clip_the_summed_gradient_as_one_device_clips_the_batch_s():
    """Two replicas (logical CPU devices, a process of their own) take one SGD step with
    `global_clipnorm=1` on a gradient of norm ~1e3: after `build_for_fit` the step is one
    device's (length 0.1 = the rate times the bound); Keras alone clips each replica's half
    and sums them, a step of about twice that length."""
    result = finish_processes({"steps": start_python("-c", _CLIPPED_STEPS)})["steps"]
    assert result.returncode == 0, result.stderr[-3000:]
    steps = {name: np.array(kernel) for name, kernel in
             json.loads(result.stdout.strip().splitlines()[-1]).items()}
    assert np.linalg.norm(steps["one_device"]) == pytest.approx(0.1, rel=1e-5)  # from zeros
    np.testing.assert_allclose(steps["mirrored"], steps["one_device"], rtol=1e-5)
    assert np.linalg.norm(steps["keras_alone"]) > 1.5 * np.linalg.norm(steps["one_device"])


# --- two workers through tools/train.py and tools/pretrain.py -------------------------------


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _start_workers(tool, flags, temp_dir, count=2, per_worker=None):
    """Starts `count` processes of tools/<tool>, the workers of one cluster on localhost
    ports (each its own TF_CONFIG), their temporary files under `temp_dir`; see
    `finish_processes`. `per_worker`: more flags for each worker."""
    workers = [f"localhost:{port}" for port in _free_ports(count)]
    processes = {}
    saved = {name: os.environ.get(name) for name in ("TF_CONFIG", "TMPDIR")}
    os.makedirs(temp_dir, exist_ok=True)
    try:
        os.environ["TMPDIR"] = str(temp_dir)
        for index in range(count):
            os.environ["TF_CONFIG"] = json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
            processes[index] = start_python(tool_path(tool), *flags,
                                            *(per_worker[index] if per_worker else ()))
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


def _kill_worker_1_once_the_chief_saved(tool, flags, model_dir, temp_dir):
    """Starts two workers of tools/<tool> and kills worker 1 (SIGKILL) right after the
    chief's first saved training state. The chief stops at its next collective
    (TensorFlow's UnavailableError) with one line naming itself and the lost worker, exit
    1, no traceback. Returns the saved state (checkpoints/training_state.json) and the
    killed worker's temporary directory (no exit handler removed it)."""
    processes = _start_workers(tool, flags, temp_dir)
    state = os.path.join(model_dir, "checkpoints", STATE_FILE)
    deadline = time.monotonic() + TOOL_TIMEOUT_S
    while (not os.path.exists(state) and processes[0].poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.05)
    processes[1].kill()
    stopped = finish_processes(processes)
    assert stopped[1].returncode == -signal.SIGKILL
    assert stopped[0].returncode == 1 and "UnavailableError" in stopped[0].stderr, (
        stopped[0].stderr[-3000:])
    assert stopped[0].stderr.strip().splitlines()[-1].startswith(
        "error: worker 0: lost contact with worker 1 (UnavailableError: ")
    assert "Traceback" not in stopped[0].stderr
    left = _worker_dirs(temp_dir)
    assert len(left) == 1
    return json.load(open(state)), left


@pytest.mark.slow
def test_when_a_worker_dies_the_chief_stops_and_both_resume_from_its_checkpoint(tmp_path):
    """A killed worker stops the chief at its next collective (TensorFlow's UnavailableError);
    the chief's last checkpoint stays, and the same command on both workers resumes from
    it: the non-chief starts from a copy of the chief's state, so both run the same
    remaining epochs (else their collectives would not pair up) and end in sync."""
    model_dir = str(tmp_path / "run")
    temp_dir = tmp_path / "tmp"
    flags = _pretraining_flags(tmp_path, model_dir, max_steps=8)  # 4 epochs of 2 steps
    # Right after the chief's first checkpoint: epochs 2 to 4 are left.
    state, left = _kill_worker_1_once_the_chief_saved("pretrain.py", flags, model_dir, temp_dir)
    done = state["epoch"]
    assert 1 <= done < 4
    assert "encoder" not in os.listdir(model_dir)

    results = finish_processes(_start_workers("pretrain.py", flags, temp_dir))
    _check_workers(results, temp_dir, left_before=left)
    for result in results.values():
        epochs = [line for line in result.stdout.splitlines() if line.startswith("Epoch ")]
        assert epochs == [f"Epoch {epoch}/4" for epoch in range(done + 1, 5)], result.stdout
    assert sorted(os.listdir(model_dir)) == PRETRAINING_RUN_FILES
    assert json.load(open(os.path.join(model_dir, "metrics.json")))["steps"] == 8


# --- distillation and multi-task training on two workers -----------------------------------


def _check_only_the_chief_wrote(model_dir, temp_dir, results, files):
    """Both workers finished in sync (`_check_workers`) and `model_dir` holds `files`."""
    _check_workers(results, temp_dir)
    present = set(os.listdir(model_dir))
    assert set(files) <= present, sorted(present)


def _distillation_flags(teacher_dir, model_dir, *more):
    return ["--teacher", teacher_dir, "--head=softmax",
            f"--train_data={os.path.join(CONLL, 'train.txt')}",
            f"--eval_data={os.path.join(CONLL, 'dev.txt')}", f"--model_dir={model_dir}",
            "--batch_size=4", "--max_seq_length=32", "--vocab_size=300",
            "--mixed_precision=float32", "--distribution_strategy=multi_worker_mirrored", *more]


def _check_distilled_on_two_workers(model_dir, temp_dir, results, pack_length):
    """Only the chief wrote the student's run, which says what both workers printed, and
    the student was evaluated on all 6 dev sentences (not one worker's share), as the
    teacher was."""
    _check_only_the_chief_wrote(model_dir, temp_dir, results,
                                ["config.json", "best_model.keras", "metrics.json",
                                 "distillation.json", "README.md"])
    config = json.load(open(model_dir / "config.json"))
    assert config["pack_length"] == pack_length and config["batch_size"] == 4
    comparison = json.load(open(model_dir / "distillation.json"))
    assert json.dumps(comparison, sort_keys=True) in results[0].stdout
    student, teacher = comparison["student"]["metrics"], comparison["teacher"]["metrics"]
    assert student["sentences"] == teacher["sentences"] == 6, student
    assert 0.0 < student["token_accuracy"] <= 1.0 and 0.0 <= student["entity_f1"] <= 1.0


@pytest.mark.slow
def test_two_workers_distill_a_tagger_without_packing(tmp_path, trained_tagger_dir):
    # With packing (the default), in the killed-worker test below.
    model_dir = tmp_path / "student"
    flags = _distillation_flags(trained_tagger_dir, model_dir, "--epochs=1", "--pack_length=0")
    results = finish_processes(_start_workers("distill.py", flags, tmp_path / "tmp"))
    _check_distilled_on_two_workers(model_dir, tmp_path / "tmp", results, pack_length=0)


def _multitask_file(path, entries=("trec", "conll")):
    lines = {"trec": f"trec --task=classification --train_data={TREC}/train.label "
                     f"--eval_data={TREC}/dev.label\n",
             "conll": f"conll --task=tagging --head=softmax --train_data={CONLL}/train.txt "
                      f"--eval_data={CONLL}/dev.txt\n"}
    path.write_text("".join(lines[entry] for entry in entries))
    return path


def _multitask_flags(tasks, model_dir, *more):
    return [f"--tasks={tasks}", f"--model_dir={model_dir}", "--batch_size=16",
            "--max_seq_length=32", "--vocab_size=300", "--mixed_precision=float32",
            "--distribution_strategy=multi_worker_mirrored", *more]


def _check_multitask_on_two_workers(model_dir, temp_dir, results, pack_length, epochs):
    _check_only_the_chief_wrote(model_dir, temp_dir, results,
                                ["config.json", "metrics.json", "encoder", "trec", "conll"])
    config = json.load(open(model_dir / "config.json"))
    assert config["pack_length"] == pack_length
    # Both workers drew the same entry for every batch and evaluated the same weights:
    # their epoch lines agree (batches per entry, validation metric), apart from the time.
    epoch_lines = [[line.split("); ", 1)[1] for line in result.stdout.splitlines()
                    if re.match(rf"epoch \d+/{epochs} \(", line)] for result in results.values()]
    assert len(epoch_lines[0]) == epochs and epoch_lines[0] == epoch_lines[1], epoch_lines
    drawn = [int(part) for line in epoch_lines[0] for part in re.findall(r"(\d+) batches", line)]
    assert sum(drawn) == config["total_steps"] == epochs * sum(
        entry["batches_per_pass"] for entry in config["entries"].values())
    metrics = json.load(open(model_dir / "metrics.json"))
    assert 0.0 < metrics["trec"]["accuracy"] <= 1.0 and metrics["trec"]["examples"] == 100
    assert 0.0 < metrics["conll"]["token_accuracy"] <= 1.0 and metrics["conll"]["sentences"] == 6


@pytest.mark.slow
def test_two_workers_train_multitask_without_packing(tmp_path):
    # With packing (the default), in the killed-worker test below.
    model_dir = tmp_path / "run"
    flags = _multitask_flags(_multitask_file(tmp_path / "tasks.txt"), model_dir, "--epochs=1",
                             "--pack_length=0")
    results = finish_processes(_start_workers("multitask.py", flags, tmp_path / "tmp"))
    _check_multitask_on_two_workers(model_dir, tmp_path / "tmp", results, pack_length=0,
                                    epochs=1)


def _flags_with_a_bad_file(tool, tmp_path, request):
    """(flags for both workers, worker 0's data flag, worker 1's: a file that is not
    there) of a short two-worker run of tools/<tool>."""
    missing = str(tmp_path / "nowhere.txt")
    common = ["--max_seq_length=32", "--vocab_size=400", "--mixed_precision=float32",
              f"--model_dir={tmp_path / 'run'}", "--distribution_strategy=multi_worker_mirrored"]
    if tool == "pretrain.py":
        return ([*common, "--preset=bert_tiny", "--objective=mlm", "--max_steps=2",
                 "--batch_size=8"], f"--corpus={_trec_corpus(tmp_path / 'corpus.txt')}",
                f"--corpus={missing}")
    if tool == "multitask.py":
        tasks = _multitask_file(tmp_path / "tasks.txt", entries=("trec",))
        return [*common, "--epochs=1", "--batch_size=16"], f"--tasks={tasks}", f"--tasks={missing}"
    labelled = ([f"--teacher={request.getfixturevalue('trained_tagger_dir')}", "--head=softmax",
                 f"--eval_data={os.path.join(CONLL, 'dev.txt')}"], os.path.join(CONLL, "train.txt"))
    if tool == "train.py":
        labelled = (["--task=classification", "--preset=bert_tiny",
                     f"--eval_data={os.path.join(TREC, 'dev.label')}"],
                    os.path.join(TREC, "train.label"))
    return ([*common, *labelled[0], "--epochs=1", "--batch_size=16"],
            f"--train_data={labelled[1]}", f"--train_data={missing}")


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["train.py", "pretrain.py", "distill.py", "multitask.py"])
def test_a_worker_that_fails_says_so_in_one_line_and_its_peer_names_it(tmp_path, request, tool):
    """Worker 1 is given an input file that is not there: it ends with its own one-line
    error; worker 0 loses its collectives with it and ends with one line naming it. Both
    exit 1, neither prints a traceback, whichever training binary they run."""
    flags, good, bad = _flags_with_a_bad_file(tool, tmp_path, request)
    processes = _start_workers(tool, flags, tmp_path / "tmp", per_worker=[[good], [bad]])
    results = finish_processes(processes)
    for result in results.values():
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    last_lines = [result.stderr.strip().splitlines()[-1] for result in results.values()]
    missing = bad.split("=", 1)[1]
    assert last_lines[1].startswith("error: worker 1: ") and missing in last_lines[1], last_lines
    assert "no such file" in last_lines[1], last_lines
    assert last_lines[0].startswith("error: worker 0: lost contact with worker 1 ("), last_lines


# --- two workers against one process ----------------------------------------------------------

# Two workers against one process, nothing random, batches that split evenly: measured
# 6e-8 (float32 rounding of a sum of two half-batch gradients), docs/distributed.md.
WEIGHT_TOLERANCE = 1e-6


def _evenly_split_sentences(path):
    """A CoNLL file on which a global batch of 4 splits evenly: every bundled sentence of
    at least 8 words, cut to its first 8, four times each (56 sentences). Copies share a
    length bucket, so every batch is full, and each worker's half holds 16 labelled words:
    the mean of the two workers' token means is then the batch's token mean."""
    sentences = []
    for name in ("train.txt", "dev.txt"):
        text = open(os.path.join(CONLL, name)).read()
        for block in text.split("\n\n"):
            lines = [line for line in block.splitlines()
                     if line.strip() and not line.startswith("-DOCSTART-")]
            if len(lines) >= 8:
                sentences.append("\n".join(lines[:8]))
    path.write_text("".join(f"{sentence}\n\n" for sentence in sentences for _ in range(4)))
    return str(path)


def _weights(model_path):
    import keras

    import nlpzoo.zoo  # noqa: F401  (registers the models' classes)

    return [weight.numpy() for weight in keras.saving.load_model(model_path).weights]


@pytest.mark.slow
def test_two_workers_end_with_one_process_s_weights_without_dropout(tmp_path):
    """A packed tagger without dropout, on batches that split evenly: two workers take
    the steps one process takes on the same global batches, up to float32 rounding (a sum
    of two half-batch gradients). The fingerprint lines' sums agree as closely."""
    flags = ["--task=tagging", "--preset=bert_tiny_tagger",
             f"--train_data={_evenly_split_sentences(tmp_path / 'train.txt')}",
             f"--eval_data={os.path.join(CONLL, 'dev.txt')}", "--epochs=1", "--batch_size=4",
             "--max_seq_length=32", "--vocab_size=300", "--mixed_precision=float32",
             "--dropout=0"]
    one = run_tool("train.py", *flags, f"--model_dir={tmp_path / 'one'}")
    assert one.returncode == 0, one.stderr[-3000:]
    two = finish_processes(_start_workers(
        "train.py", [*flags, f"--model_dir={tmp_path / 'two'}",
                     "--distribution_strategy=multi_worker_mirrored"], tmp_path / "tmp"))
    _check_workers(two, tmp_path / "tmp")
    config = json.load(open(tmp_path / "two" / "config.json"))
    assert (config["pack_length"], config["steps_per_epoch"], config["dropout"]) == (1, 14, 0.0)
    differences = [abs(a - b).max() for a, b in zip(_weights(tmp_path / "one" / "best_model.keras"),
                                                     _weights(tmp_path / "two" / "best_model.keras"))]
    assert max(differences) < WEIGHT_TOLERANCE, max(differences)
    sums = [[float(number) for number in re.findall(
        r"\(sum (\S+), sum of squares (\S+)\)",
        next(line for line in result.stdout.splitlines()
             if line.startswith("weights fingerprint ")))[0]] for result in (one, two[0])]
    assert sums[1] == pytest.approx(sums[0], rel=1e-5)


# --- a killed worker of distill.py and multitask.py, resumed --------------------------------

# A resumed two-worker run replays the uninterrupted one's remaining steps on the same
# batches, from the chief's saved weights, optimizer and dropout generator states (mirrored
# variables: the same on every worker): the distilled student's best_model.keras was
# bit-identical on this machine (2026-11-28); the test allows float32 rounding.
RESUMED_WEIGHT_TOLERANCE = 1e-6


def _fingerprint(result):
    """The `weights fingerprint` line's (hash, sum, sum of squares)."""
    line = next(line for line in result.stdout.splitlines()
                if line.startswith("weights fingerprint "))
    digest, total, squares = re.match(
        r"weights fingerprint (\S+) \(sum (\S+), sum of squares (\S+)\)", line).groups()
    return digest, float(total), float(squares)


def _killed_and_resumed_against_uninterrupted(tool, flags_for, tmp_path):
    """Runs tools/<tool> on two workers without interruption, then again with worker 1
    killed after the chief's first save and the same command run again on both. Checks
    that the resumed run starts at the saved step, that only the chief wrote, and that it
    ends with the uninterrupted run's weights; returns both model directories and the
    uninterrupted workers' results."""
    whole_dir, run_dir = tmp_path / "whole", tmp_path / "run"
    whole = finish_processes(_start_workers(tool, flags_for(whole_dir), tmp_path / "tmp_whole"))
    _check_workers(whole, tmp_path / "tmp_whole")
    state, left = _kill_worker_1_once_the_chief_saved(tool, flags_for(run_dir), str(run_dir),
                                                      tmp_path / "tmp")
    total = json.load(open(whole_dir / "config.json"))["total_steps"]
    assert 0 < state["step"] < total, (state, total)
    resumed = finish_processes(_start_workers(tool, flags_for(run_dir), tmp_path / "tmp"))
    _check_workers(resumed, tmp_path / "tmp", left_before=left)
    for result in resumed.values():
        assert f"resuming from step {state['step']} of {total}" in result.stdout, result.stdout
    assert not os.path.exists(run_dir / "checkpoints")
    expected, got = _fingerprint(whole[0]), _fingerprint(resumed[0])
    assert got[1:] == pytest.approx(expected[1:], rel=RESUMED_WEIGHT_TOLERANCE), (got, expected)
    return whole_dir, run_dir, whole


def _max_weight_difference(path_a, path_b):
    return max(float(abs(a - b).max()) for a, b in zip(_weights(path_a), _weights(path_b)))


@pytest.mark.slow
def test_a_distillation_worker_killed_mid_run_resumes_to_the_uninterrupted_weights(
        tmp_path, trained_tagger_dir):
    def flags_for(model_dir):
        return _distillation_flags(trained_tagger_dir, model_dir, "--epochs=2",
                                   "--checkpoint_every_steps=2", "--seed=7")

    whole, run, whole_results = _killed_and_resumed_against_uninterrupted(
        "distill.py", flags_for, tmp_path)
    # The uninterrupted run is also the packed two-worker distillation.
    _check_distilled_on_two_workers(whole, tmp_path / "tmp_whole", whole_results, pack_length=1)
    assert _max_weight_difference(whole / "best_model.keras",
                                  run / "best_model.keras") < RESUMED_WEIGHT_TOLERANCE
    expected = json.load(open(whole / "distillation.json"))["student"]["metrics"]
    metrics = json.load(open(run / "distillation.json"))["student"]["metrics"]
    assert metrics == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
def test_a_multitask_worker_killed_mid_run_resumes_to_the_uninterrupted_weights(tmp_path):
    tasks = _multitask_file(tmp_path / "tasks.txt")

    def flags_for(model_dir):
        return _multitask_flags(tasks, model_dir, "--epochs=2", "--checkpoint_every_steps=4",
                                "--seed=7")

    whole, run, whole_results = _killed_and_resumed_against_uninterrupted(
        "multitask.py", flags_for, tmp_path)
    # The uninterrupted run is also the packed two-worker multi-task training.
    _check_multitask_on_two_workers(whole, tmp_path / "tmp_whole", whole_results,
                                    pack_length=1, epochs=2)
    expected, metrics = (json.load(open(folder / "metrics.json")) for folder in (whole, run))
    assert metrics.keys() == expected.keys()
    for entry, values in expected.items():
        assert metrics[entry] == pytest.approx(values, abs=1e-6), entry
