"""`--distribution_strategy`: how the training binaries spread work over devices and hosts.

Every training binary uses this module the same way:

    strategy = make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)   # first thing in main
    output_dir = worker_model_dir(FLAGS.model_dir, strategy)  # chief: --model_dir, else a temp
    with strategy.scope():
        model = ...build and compile...    # variables, optimizer and metrics are mirrored
    build_for_fit(model, strategy, train_dataset)  # multi-worker: Keras 3.15's gaps
    model.fit(shard_by_data(train_dataset), ...)
    print(fingerprint_line(model))  # one process and every worker: compare them

tools/train.py, tools/pretrain.py and tools/distill.py train with `fit`;
tools/multitask.py runs its own loop of `strategy.run` steps.

- `--batch_size` is the global batch: each step splits it over all replicas
  (`strategy.num_replicas_in_sync`); Keras scales each replica's loss by
  1/replicas and the gradients are summed, and each replica's mean (over its
  examples, words or masked tokens) is weighted by its share of the batch's
  (`tasks.modeling.losses.replica_weight`), so one step is the step one device
  takes on the whole batch, however unevenly the batch splits.
- Sharding: the input pipelines are built from in-memory tensors, so every
  worker builds the same batches and `AutoShardPolicy.DATA` gives each worker
  its part of every global batch (`shard_by_data`); FILE sharding would need
  one input file per worker.
- Two workers end with the weights of one process on the same global batch,
  up to float32 rounding, when nothing random differs: dropout masks are drawn
  per replica (docs/distributed.md gives the measured differences). The
  replicas clip their summed gradient (`clip_the_sum`).
- A worker that fails ends in one line naming it (`worker_failure`), as
  `tools/cli/errors.run` prints it; the others then lose their collectives
  and end the same way.
- Only the chief writes `--model_dir`. Other workers run the same program
  (they must: every step is a collective) and write into a temporary
  directory that is removed at the end, as TensorFlow's multi-worker guide
  does. To resume, a non-chief starts from the chief's training state, so
  multi-host runs that resume need `--model_dir` on a shared file system.

Examples:
>>> strategy = make_strategy("one_device")
>>> strategy.num_replicas_in_sync, is_chief(strategy)
(1, True)
"""

import atexit
import hashlib
import json
import os
import re
import shutil
import tempfile

from absl import flags

from nlpzoo.layers.keras_internals import (
    build_from_batch,
    gradient_clipping,
    replace_gradient_clipping,
    skip_build_in_fit,
)
from nlpzoo.tasks.io.ownership import write_marker
from nlpzoo.tasks.io.errors import UserError
from nlpzoo.tasks.io.json_text import InvalidJson, parse_json

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
# What a non-chief copies from the chief's directory to resume the same run.
_RESUME_STATE = ("config.json", "vocab.txt", "labels.json", "checkpoints",
                 "best_model.keras.json")
_WORKER_DIR_PREFIX = "nlpzoo-worker-"
# This process's task in the cluster ("worker 1") and the cluster, once make_strategy has
# read TF_CONFIG: the failure line names this worker and the lost ones (worker_failure).
_this_worker = None
_cluster = {}


def define_distribution_flags(flag_values=flags.FLAGS):
    """`--distribution_strategy` and `--tpu`."""
    flags.DEFINE_enum(
        "distribution_strategy", "auto", STRATEGIES,
        "tf.distribute strategy. auto: mirrored over every GPU when several are visible, "
        "else one device; one_device; mirrored: every local GPU (or CPU device); "
        "multi_worker_mirrored: one process per host, the cluster read from TF_CONFIG "
        "(docs/distributed.md); tpu: the TPU named by --tpu. "
        "--batch_size is the global batch, split over all replicas.",
        flag_values=flag_values)
    flags.DEFINE_string("tpu", None, "--distribution_strategy=tpu: the TPU's name or grpc:// "
                        "address; default: $TPU_NAME, else the TPU attached to this VM.",
                        flag_values=flag_values)


def make_strategy(name="auto", tpu=None):
    """The `tf.distribute.Strategy` for a `--distribution_strategy` value.

    Call it before anything else touches TensorFlow's devices: multi-worker
    collectives must be configured when the runtime starts.

    Raises:
        UserError: an unknown name, a missing or malformed `TF_CONFIG`, or no
            reachable TPU, in one line.

    Examples:
    >>> make_strategy("auto").num_replicas_in_sync  # one CPU, no GPU here
    1
    >>> make_strategy("quantum")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: --distribution_strategy=quantum: expected one of auto, one_device, mirrored, multi_worker_mirrored, tpu
    """
    import tensorflow as tf

    if name not in STRATEGIES:
        raise UserError(f"--distribution_strategy={name}: expected one of "
                        f"{', '.join(STRATEGIES)}")
    # Multi-worker first: its collectives must be configured before the runtime starts,
    # which listing logical devices would do.
    if name == "multi_worker_mirrored":
        config = read_tf_config()  # checked here: TensorFlow would fall back to one worker
        global _this_worker, _cluster
        _this_worker = f"{config['task']['type']} {config['task']['index']}"
        _cluster = config["cluster"]
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        return _tpu_strategy(tpu)
    gpus = tf.config.list_physical_devices("GPU")
    if name == "auto":
        name = "mirrored" if len(gpus) > 1 else "one_device"
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    # Without GPUs: every logical CPU device (tests configure several).
    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    return tf.distribute.MirroredStrategy([device.name for device in devices])


def read_tf_config():
    """The parsed `TF_CONFIG` for multi-worker training, checked; UserError when unusable.

    Examples:
    >>> os.environ["TF_CONFIG"] = '{"cluster": {"worker": ["h1:2222"]}, "task": {}}'
    >>> read_tf_config()
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: TF_CONFIG: "task" must be {"type": "worker" or "chief", "index": N}; got {}
    >>> del os.environ["TF_CONFIG"]
    """
    text = os.environ.get("TF_CONFIG")
    if not text:
        raise UserError("--distribution_strategy=multi_worker_mirrored reads the cluster from "
                        "the TF_CONFIG environment variable, which is not set (see "
                        "docs/distributed.md)")
    try:
        config = parse_json(text, "TF_CONFIG")
    except InvalidJson as error:
        raise UserError(f"TF_CONFIG: {error.problem}") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not (cluster.get("worker") or cluster.get("chief")):
        raise UserError('TF_CONFIG: expected {"cluster": {"worker": ["host:port", ...]}, '
                        f'"task": {{"type": "worker", "index": N}}}}; got {text}')
    task = config.get("task")
    if (not isinstance(task, dict) or task.get("type") not in ("worker", "chief")
            or not isinstance(task.get("index"), int)
            or not 0 <= task["index"] < len(cluster.get(task["type"], []))):
        raise UserError('TF_CONFIG: "task" must be {"type": "worker" or "chief", "index": N}; '
                        f"got {json.dumps(task)}")
    return config


def _tpu_strategy(tpu):
    import tensorflow as tf

    tpu = tpu or os.environ.get("TPU_NAME")
    # No name and no TPU device on this host: fail now rather than ask a cloud
    # metadata server that is not there.
    if not tpu and not any(name.startswith("accel") or name.startswith("vfio")
                           for name in _listdir("/dev")):
        raise UserError("--distribution_strategy=tpu: no TPU reachable (no --tpu, no "
                        "$TPU_NAME, no TPU device on this host)")
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "local")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UserError(f"--distribution_strategy=tpu: no TPU reachable at "
                        f"{tpu or 'this host'}: {first_line}")


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def is_chief(strategy):
    """True on the one process that writes `--model_dir` (always, outside multi-worker).

    The chief is the "chief" task, else worker 0, as in TensorFlow's guide.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not getattr(strategy.extended, "_in_multi_worker_mode",
                                       lambda: False)():
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return (task_type is None or task_type == "chief" or (
        task_type == "worker" and task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()))


def worker_model_dir(model_dir, strategy, subdirectories=()):
    """Where this process writes: `model_dir` on the chief, elsewhere a fresh temporary
    directory, removed when the process exits, holding a copy of the chief's resume state
    when there is one (so that every worker resumes the same run). `subdirectories` of
    `model_dir` are copied whole with it (tools/multitask.py's entries: each has its
    own config, vocabulary and labels).

    Examples:
    >>> worker_model_dir("runs/trec", make_strategy("one_device"))
    'runs/trec'
    """
    if is_chief(strategy):
        return model_dir
    worker_dir = tempfile.mkdtemp(prefix=_WORKER_DIR_PREFIX)
    write_marker(worker_dir, "worker")  # ours, as the chief's --model_dir is
    atexit.register(shutil.rmtree, worker_dir, ignore_errors=True)
    if not os.path.exists(os.path.join(model_dir, "checkpoints")):
        return worker_dir  # a fresh or finished run: nothing to resume
    for name in (*_RESUME_STATE, *subdirectories):
        source = os.path.join(model_dir, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(worker_dir, name))
        elif os.path.exists(source):
            shutil.copy2(source, os.path.join(worker_dir, name))
    return worker_dir


def shard_by_data(dataset):
    """`dataset` with `AutoShardPolicy.DATA`: each worker takes its share of every global
    batch (the pipelines are in-memory tensors, not one file per worker).

    Examples:
    >>> import tensorflow as tf
    >>> dataset = shard_by_data(tf.data.Dataset.range(4).batch(2))
    >>> dataset.options().experimental_distribute.auto_shard_policy.name
    'DATA'
    """
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def describe(strategy):
    """One line for the start-up message: the strategy's public name, the replicas and,
    under multi-worker training, which task this process is.

    Examples:
    >>> describe(make_strategy("one_device"))
    'OneDeviceStrategy, 1 replica'
    """
    import tensorflow as tf

    replicas = strategy.num_replicas_in_sync
    # MultiWorkerMirroredStrategy's class is named CollectiveAllReduceStrategy.
    name = ("MultiWorkerMirroredStrategy"
            if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            else type(strategy).__name__)
    line = f"{name}, {replicas} replica{'s' if replicas > 1 else ''}"
    if in_multi_worker_mode(strategy):
        resolver = strategy.cluster_resolver
        line += (f", task {resolver.task_type} {resolver.task_id}"
                 f"{' (chief)' if is_chief(strategy) else ''}")
    return line


def weights_fingerprint(model):
    """SHA-256 of every weight's bytes, in order: replicas and workers in sync agree
    exactly.

    Examples:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
    >>> weights_fingerprint(model)
    '5f2fa7795ceb5867'
    """
    digest = hashlib.sha256()
    for weight in model.weights:
        digest.update(weight.numpy().tobytes())
    return digest.hexdigest()[:16]


def fingerprint_line(model):
    """The line every training binary prints at the end of training: the weights'
    fingerprint (bit-identical weights: the same), then their sum and sum of squares
    (float64), which agree to about 7 digits between a one-process run and the same run
    on several workers, where float32 rounding keeps the fingerprints apart.

    Examples:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
    >>> fingerprint_line(model)
    'weights fingerprint 5f2fa7795ceb5867 (sum 2, sum of squares 2)'
    """
    import numpy as np

    values = [np.asarray(weight.numpy(), np.float64) for weight in model.weights]
    total = sum(float(value.sum()) for value in values)
    squares = sum(float(np.square(value).sum()) for value in values)
    return (f"weights fingerprint {weights_fingerprint(model)} "
            f"(sum {total:.9g}, sum of squares {squares:.9g})")


def this_worker():
    """This process's task in the cluster, "worker 1" (TF_CONFIG's type and index), once
    `make_strategy("multi_worker_mirrored")` has run; None otherwise.

    Examples:
    >>> this_worker() is None  # no multi-worker strategy made in this process
    True
    """
    return _this_worker


def worker_failure(error):
    """The one line (without "error: ") that a multi-worker process ends with when
    `error` stops it: the worker, then the cause; None outside multi-worker training.

    When a worker stops, the others learn of it only as a failed collective
    (`UnavailableError`, or a cancelled one): say so, rather than call it a bug.

    Examples:
    >>> worker_failure(ValueError("x")) is None  # not a multi-worker process
    True
    """
    if _this_worker is None:
        return None
    import tensorflow as tf

    if not isinstance(error, (tf.errors.UnavailableError, tf.errors.CancelledError,
                              tf.errors.AbortedError, tf.errors.DeadlineExceededError)):
        return None
    lines = str(error).strip().splitlines()
    # TensorFlow's first line starts with the op's name in {{...}}: noise to a user.
    cause = " ".join(re.sub(r"\{\{[^}]*\}\}", "", lines[0] if lines else "").split())
    peers = {f"{kind} {index}" for kind, index in
             re.findall(r"/job:(\w+)/(?:replica:\d+/)?task:(\d+)", str(error))}
    # gRPC's messages name an address instead ("ipv4:127.0.0.1:23457" for localhost:23457).
    for kind, addresses in _cluster.items():
        for index, address in enumerate(addresses if isinstance(addresses, list) else []):
            port = address.rpartition(":")[2]
            if address in str(error) or (port and re.search(rf"[\w.\]]:{port}\b", str(error))):
                peers.add(f"{kind} {index}")
    peers = sorted(peers - {_this_worker})
    return (f"{_this_worker}: lost contact with {' and '.join(peers) or 'another worker'} "
            f"({type(error).__name__}: {cause[:200]}); a worker that stopped says why in its "
            "own output. Start every worker again with the same flags to resume")


def check_jit_compile(strategy, jit_compile):
    """Refuses XLA with replicas on several CPU devices of one process: XLA cannot reach a
    variable on another CPU device (TensorFlow's known XLA issue). GPUs, TPUs and one CPU
    per worker are fine.

    Examples:
    >>> check_jit_compile(make_strategy("one_device"), True)
    """
    devices = getattr(strategy.extended, "worker_devices", ())
    if jit_compile and len(devices) > 1 and all("CPU" in device.upper() for device in devices):
        raise UserError(f"--jit_compile=true cannot run {len(devices)} replicas on the CPU "
                        "devices of one process (XLA reaches only its own device); use "
                        "--jit_compile=false, or one worker per host with "
                        "--distribution_strategy=multi_worker_mirrored")


def build_for_fit(model, strategy, dataset):
    """Prepares `model` for `fit` and `evaluate` under a strategy of several replicas;
    a no-op with one replica (call it after compile, before `fit`).

    It makes the optimizer clip the summed gradient (`clip_the_sum`), and mends two
    gaps of Keras 3.15's TensorFlow trainer:

    - `fit` builds a distributed model from its first batch averaged over the replicas
      with `strategy.reduce`, which fails on a dict of features under multi-worker
      training (and drops that batch), and on a batch whose replicas' shares differ in
      size (a global batch of 7 on 2 replicas: "Inputs to operation AddN … must have
      the same size"). Building here from one undistributed local batch avoids both.
    - Under `MultiWorkerMirroredStrategy`, each step's logs are reduced with `strategy.reduce("MEAN", logs, axis=0)` whatever
      `distribute_reduction_method` says, and a scalar has no axis 0 (TensorFlow:
      "Invalid reduction dimension 0 for input with 0 dimensions", tensorflow#72388).
      `with_replica_axis` gives every logged value a leading axis of one, so that
      reduction becomes the mean over all replicas, as under MirroredStrategy.

    Examples:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> build_for_fit(model, make_strategy("one_device"), None)  # nothing to do
    >>> "train_step" in vars(model)
    False
    """
    clip_the_sum(model.optimizer, strategy)
    if strategy.num_replicas_in_sync == 1:
        return
    batch = next(iter(dataset.take(1)))
    with strategy.scope():
        build_from_batch(model, batch)
    skip_build_in_fit(model)
    if not in_multi_worker_mode(strategy):
        return
    model.train_step = with_replica_axis(model.train_step)
    model.test_step = with_replica_axis(model.test_step)


def clip_the_sum(optimizer, strategy):
    """Makes `optimizer` clip the gradient summed over the replicas, as one device clips
    the whole batch's gradient; nothing to do with one replica or without clipping.

    Keras 3.15 clips each replica's gradient (`global_clipnorm`: our AdamW's 1.0) and
    sums the clipped ones afterwards: with several replicas a step then differs from one
    device's whenever the norm exceeds the bound. Here the replicas sum their gradients
    first and clip the sum; each passes on its 1/replicas share of the clipped sum, which
    the optimizer's own sum turns back into the clipped sum.

    Examples:
    >>> import keras
    >>> optimizer = keras.optimizers.AdamW(global_clipnorm=1.0)
    >>> clip_the_sum(optimizer, make_strategy("one_device"))  # one replica: as Keras does
    >>> "_clip_gradients" in vars(optimizer)
    False
    """
    inner = getattr(optimizer, "inner_optimizer", optimizer)  # under a LossScaleOptimizer
    if strategy.num_replicas_in_sync == 1 or not (
            inner.global_clipnorm or inner.clipnorm or inner.clipvalue):
        return
    import tensorflow as tf

    clip = gradient_clipping(inner)

    def clip_summed(gradients):
        context = tf.distribute.get_replica_context()
        if context is None or tf.distribute.get_strategy().num_replicas_in_sync == 1:
            return clip(gradients)
        present = [gradient for gradient in gradients if gradient is not None]
        summed = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present))
        clipped = clip([None if gradient is None else next(summed) for gradient in gradients])
        return [None if gradient is None else _share(gradient, strategy.num_replicas_in_sync)
                for gradient in clipped]

    replace_gradient_clipping(inner, clip_summed)


def _share(gradient, replicas):
    import tensorflow as tf

    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(gradient.values / replicas, gradient.indices,
                                gradient.dense_shape)
    return gradient / replicas


def in_multi_worker_mode(strategy):
    """True under `MultiWorkerMirroredStrategy` with more than one worker in `TF_CONFIG`
    (the case Keras's trainer reduces with collectives; one worker runs as mirrored).

    Examples:
    >>> in_multi_worker_mode(make_strategy("mirrored"))
    False
    """
    import tensorflow as tf

    return (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and strategy.extended._in_multi_worker_mode())  # noqa: SLF001 (as Keras tests it)


def with_replica_axis(step):
    """`step` (a `train_step` or `test_step`) with a leading axis of one on every value it
    returns: `strategy.reduce("MEAN", value, axis=0)` then averages one value per replica,
    the reduction Keras applies to step logs under multi-worker training.

    Examples:
    >>> import tensorflow as tf
    >>> step = with_replica_axis(lambda data: {"loss": tf.reduce_mean(data)})
    >>> step(tf.constant([1.0, 3.0]))["loss"].numpy()
    array([2.], dtype=float32)
    """
    import tensorflow as tf

    def step_with_replica_axis(data):
        return tf.nest.map_structure(lambda value: tf.expand_dims(value, 0), step(data))

    return step_with_replica_axis
