"""The GPU check's encoder part, on the machine's Keras backend (JAX where TensorFlow is absent).

The GPU machines lent here carry JAX with CUDA and no TensorFlow, and reach no package
index, so `benchmarks/gpu_check.sh` cannot install `tensorflow[and-cuda]` there. Our layers
are written in `keras.ops` and run on any Keras backend; this script checks them on that
machine's GPU under Keras 3 with the JAX backend (which always compiles with XLA):

1. numerics: our BERT encoder (random weights, dropout off) on the GPU against the same
   model on the CPU, float32 at full matmul precision; the padded positions of a batch
   change no real token's output; mixed_bfloat16 gives float32 logits within bfloat16's
   error of float32's;
2. speed: our encoder and KerasHub's `BertBackbone` of the identical shape, each with the
   same head (pooled output, dropout, float32 Dense), loss and optimizer, trained with `fit`
   and run forward in alternating timed windows on the same random batches, in
   mixed_bfloat16 and float32: tokens/s, the ratio, and MFU against a measured matmul peak
   (the FLOP counts of `zoo/benchmarking/flops.py`, as `tools/benchmark.py` uses them).

    KERAS_BACKEND=jax python3 benchmarks/gpu_check_keras.py --out=record.json
    KERAS_BACKEND=jax python3 benchmarks/gpu_check_keras.py --dry_run  # bert_tiny, seconds, CPU

It prints one JSON line (the record) and writes it to --out; it exits 1 when a check fails.
The task models (`nlpzoo.tasks`) need TensorFlow and are not run here: the TensorFlow path of
`gpu_check.sh` runs their tests where TensorFlow sees the GPU.
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import keras  # noqa: E402
import numpy as np  # noqa: E402

# `nlpzoo.zoo` registers the task families on import, and they need TensorFlow: the preset
# table and the FLOP counts are plain modules, read from their files.


def _module_from_file(name, relative_path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relative_path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


presets = _module_from_file("_gpu_check_presets", "zoo/presets.py")
flops = _module_from_file("_gpu_check_flops", "zoo/benchmarking/flops.py")
from nlpzoo.layers import Encoder  # noqa: E402

BACKEND = keras.backend.backend()


# === the backend's compiled functions and devices ===

def compiled(function):
    """`function` compiled by the backend (XLA: jax.jit, tf.function(jit_compile=True))."""
    if BACKEND == "jax":
        import jax
        return jax.jit(function)
    if BACKEND == "tensorflow":
        import tensorflow as tf
        return tf.function(function, jit_compile=True)
    return function


def accelerators():
    """The backend's GPU devices, as names."""
    if BACKEND == "jax":
        import jax
        return [str(device) for device in jax.devices() if device.platform == "gpu"]
    if BACKEND == "tensorflow":
        import tensorflow as tf
        return [device.name for device in tf.config.list_physical_devices("GPU")]
    return []


class on_device:
    """A context that places new arrays and computations on the CPU or the first GPU."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        if BACKEND == "jax":
            import jax
            self._context = jax.default_device(jax.devices(self.kind)[0])
        else:
            import tensorflow as tf
            self._context = tf.device(f"/{self.kind.upper()}:0")
        self._context.__enter__()

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)


class full_matmul_precision:
    """float32 matmuls at full precision (the JAX backend allows TF32 on GPUs otherwise)."""

    def __enter__(self):
        if BACKEND == "jax":
            import jax
            self._context = jax.default_matmul_precision("highest")
            self._context.__enter__()

    def __exit__(self, *exc):
        if BACKEND == "jax":
            return self._context.__exit__(*exc)


def to_numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(value, "float32")))


# === models ===

def encoder_arguments(preset_name, **changes):
    return dict(presets.ENCODER_PRESETS[preset_name].encoder_arguments(), **changes)


def kerashub_shape(arguments):
    return {name: arguments[name] for name in (
        "num_layers", "hidden_dim", "num_heads", "intermediate_dim", "vocabulary_size",
        "max_sequence_length", "num_segments", "dropout")}


def classifier(backbone, dropout, learning_rate):
    """`backbone`'s pooled output → dropout → float32 Dense(2), compiled as for `fit`."""
    pooled = backbone(backbone.input)["pooled_output"]
    dropped = keras.layers.Dropout(dropout)(pooled)
    logits = keras.layers.Dense(2, dtype="float32", name="logits")(dropped)
    model = keras.Model(backbone.input, logits)
    model.compile(optimizer=keras.optimizers.AdamW(learning_rate, global_clipnorm=1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    return model


def random_inputs(count, length, vocabulary_size, seed=0, padded_from=None):
    rng = np.random.default_rng(seed)
    mask = np.ones((count, length), "int32")
    if padded_from is not None:
        mask[:, padded_from:] = 0
    token_ids = rng.integers(5, vocabulary_size, (count, length)).astype("int32") * mask
    return {"token_ids": token_ids, "segment_ids": np.zeros((count, length), "int32"),
            "padding_mask": mask}


# === 1. numerics ===

def numerics(preset_name, batch_size, length):
    """Our encoder on the GPU against the CPU, padding, and mixed_bfloat16's logits."""
    keras.mixed_precision.set_global_policy("float32")
    keras.utils.set_random_seed(0)
    arguments = encoder_arguments(preset_name, dropout=0.0, attention_dropout=0.0)
    encoder = Encoder(**arguments)
    inputs = random_inputs(batch_size, length, arguments["vocabulary_size"],
                           padded_from=length // 2)
    forward = compiled(lambda x: encoder(x, training=False)["sequence_output"])
    result = {}
    with full_matmul_precision():
        outputs = {}
        for kind in ["cpu"] + (["gpu"] if accelerators() else []):
            with on_device(kind):
                outputs[kind] = to_numpy(forward(inputs))
        half = length // 2
        unpadded = {name: value[:, :half] for name, value in inputs.items()}
        with on_device("gpu" if accelerators() else "cpu"):
            short = to_numpy(forward(unpadded))
    reference = outputs["cpu"]
    scale = float(np.abs(reference[:, :half]).max())
    if "gpu" in outputs:
        difference = float(np.abs(outputs["gpu"][:, :half] - reference[:, :half]).max())
        result["gpu_vs_cpu_max_abs"] = difference
        result["gpu_vs_cpu_ok"] = difference <= 1e-4 * max(scale, 1.0)
    else:
        result["gpu_vs_cpu_max_abs"] = None
        result["gpu_vs_cpu_ok"] = None  # no GPU: nothing to compare
    padded_run = outputs.get("gpu", reference)[:, :half]
    result["padding_max_abs"] = float(np.abs(padded_run - short).max())
    result["padding_ok"] = result["padding_max_abs"] <= 1e-4 * max(scale, 1.0)

    # mixed_bfloat16: the same weights, float32 logits, bfloat16-sized differences.
    logits_layer = keras.layers.Dense(2, dtype="float32")
    logits_layer.build((None, arguments["hidden_dim"]))
    float32_logits = to_numpy(logits_layer(encoder(inputs)["pooled_output"]))
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    mixed = Encoder(**arguments)
    mixed.set_weights(encoder.get_weights())
    mixed_logits = logits_layer(mixed(inputs)["pooled_output"])
    keras.mixed_precision.set_global_policy("float32")
    result["mixed_bfloat16_logits_dtype"] = str(keras.backend.standardize_dtype(
        mixed_logits.dtype))
    difference = float(np.abs(to_numpy(mixed_logits) - float32_logits).max())
    result["mixed_bfloat16_vs_float32_logits_max_abs"] = difference
    result["mixed_bfloat16_ok"] = (result["mixed_bfloat16_logits_dtype"] == "float32"
                                   and difference <= 0.1 * max(
                                       float(np.abs(float32_logits).max()), 1.0))
    return result


# === 2. speed ===

def matmul_peak_gflops(size, dtype, repeats=5, per_timing=10):
    """The median GFLOP/s of [size, size] matmuls in `dtype` (the backend's default precision)."""
    a = keras.ops.cast(keras.random.normal((size, size), seed=1), dtype)
    b = keras.ops.cast(keras.random.normal((size, size), seed=2), dtype)
    matmul = compiled(keras.ops.matmul)
    to_numpy(matmul(a, b)[0, 0])
    figures = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_timing):
            product = matmul(a, b)
        to_numpy(product[0, 0])
        figures.append(per_timing * flops.matmul_flops(size) / (time.perf_counter() - start))
    return statistics.median(figures) / 1e9


def _train_window(model, inputs, labels, batch_size):
    start = time.perf_counter()
    model.fit(inputs, labels, batch_size=batch_size, epochs=1, verbose=0, shuffle=False)
    return time.perf_counter() - start


def _predict_window(model, batches):
    start = time.perf_counter()
    for batch in batches:
        logits = model.predict_on_batch(batch)
    to_numpy(logits)  # waits for the device
    return time.perf_counter() - start


def encoder_speed(preset_name, policy, batch_size, length, steps, windows, matmul_size,
                  **encoder_changes):
    import keras_hub
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    arguments = encoder_arguments(preset_name)
    if length > arguments["max_sequence_length"]:
        raise SystemExit(f"error: --sequence_length={length} exceeds the "
                         f"{arguments['max_sequence_length']} positions of {preset_name}")
    learning_rate = presets.ENCODER_PRESETS[preset_name].fine_tuning.learning_rate
    models = {"ours": classifier(Encoder(**dict(arguments, **encoder_changes)),
                                 arguments["dropout"], learning_rate),
              "kerashub": classifier(keras_hub.models.BertBackbone(**kerashub_shape(arguments)),
                                     arguments["dropout"], learning_rate)}
    count = batch_size * steps
    inputs = random_inputs(count, length, arguments["vocabulary_size"])
    labels = np.random.default_rng(1).integers(0, 2, count).astype("int32")
    batches = [{name: value[i:i + batch_size] for name, value in inputs.items()}
               for i in range(0, count, batch_size)]
    for model in models.values():  # compile both steps outside the timing
        _train_window(model, {k: v[:2 * batch_size] for k, v in inputs.items()},
                      labels[:2 * batch_size], batch_size)
        _predict_window(model, batches[:2])
    tokens = count * length
    figures = {mode: {name: [] for name in models} for mode in ("train", "predict")}
    order = list(models)
    for window in range(windows):
        for name in (order if window % 2 == 0 else order[::-1]):  # A-B, then B-A
            figures["train"][name].append(
                tokens / _train_window(models[name], inputs, labels, batch_size))
            figures["predict"][name].append(tokens / _predict_window(models[name], batches))
    compute_dtype = keras.mixed_precision.global_policy().compute_dtype
    peak = matmul_peak_gflops(matmul_size, compute_dtype)
    keras.mixed_precision.set_global_policy("float32")
    parameters = flops.encoder_parameters(
        arguments["num_layers"], arguments["hidden_dim"], arguments["intermediate_dim"],
        arguments["vocabulary_size"], arguments["max_sequence_length"],
        arguments["num_segments"])["non_embedding"]
    per_token = {
        "train": flops.training_flops_per_token(parameters, arguments["num_layers"], length,
                                                arguments["hidden_dim"]),
        "predict": flops.predict_flops_per_token(parameters, arguments["num_layers"], length,
                                                 arguments["hidden_dim"])}
    record = {"policy": policy, "matmul_peak_gflops": round(peak, 1), "tokens_per_second": {},
              "ratio": {}, "mfu": {}, "flops_per_token": per_token}
    for mode, by_model in figures.items():
        summaries = {name: {key: round(value, 1) for key, value in
                            flops.summary(values).items()} for name, values in by_model.items()}
        record["tokens_per_second"][mode] = summaries
        record["ratio"][mode] = round(summaries["ours"]["median"]
                                      / summaries["kerashub"]["median"], 4)
        record["mfu"][mode] = {name: round(flops.model_flops_utilization(
            summary["median"], per_token[mode], peak), 4) for name, summary in summaries.items()}
    return record


# === the record ===

def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def versions():
    found = {"python": platform.python_version(), "keras": keras.__version__,
             "backend": BACKEND, "numpy": np.__version__}
    for name in ("jax", "jaxlib", "tensorflow", "keras_hub"):
        try:
            found[name] = __import__(name).__version__
        except ImportError:
            pass
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="gpu_check_keras.json", help="the JSON record")
    parser.add_argument("--dry_run", action="store_true",
                        help="bert_tiny, one short window, small matmul: checks the script")
    parser.add_argument("--preset", default=None, help="encoder preset (default bert_base)")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=None, help="batches per timed window")
    parser.add_argument("--windows", type=int, default=None, help="timed windows per model")
    parser.add_argument("--policies", default="mixed_bfloat16,float32")
    parser.add_argument("--gelu_approximate", action="store_true",
                        help="our encoder with tanh-approximate GELU, as KerasHub's BERT has")
    parser.add_argument("--skip_numerics", action="store_true",
                        help="time the models only (the numerics take a minute on bert_base)")
    args = parser.parse_args(argv)
    dry = args.dry_run
    preset = args.preset or ("bert_tiny" if dry else "bert_base")
    steps = args.steps or (2 if dry else 20)
    windows = args.windows or (2 if dry else 5)
    batch_size, length = (4, 32) if dry else (args.batch_size, args.sequence_length)
    if preset not in presets.ENCODER_PRESETS:
        raise SystemExit(f"error: --preset={preset} is not an encoder preset; valid: "
                         f"{', '.join(sorted(presets.ENCODER_PRESETS))}")
    started = time.perf_counter()
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "dry_run": dry, "gpu": gpu_name(), "accelerators": accelerators(),
              "versions": versions(), "preset": preset, "batch_size": batch_size,
              "sequence_length": length, "steps": steps, "windows": windows,
              "gelu_approximate": args.gelu_approximate}

    def save():  # after every step: a run stopped at its time limit keeps what it measured
        record["seconds"] = round(time.perf_counter() - started, 1)
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")

    record["numerics"] = ({} if args.skip_numerics else
                          numerics(preset, batch_size=8 if dry else 16, length=length))
    checks = [value for key, value in record["numerics"].items()
              if key.endswith("_ok") and value is not None]
    record["passed"] = all(checks)
    record["speed"] = []
    save()
    for policy in args.policies.split(","):
        record["speed"].append(encoder_speed(preset, policy, batch_size, length, steps,
                                             windows, 256 if dry else 8192,
                                             **({"gelu_approximate": True}
                                                if args.gelu_approximate else {})))
        save()
    print(json.dumps(record))
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
