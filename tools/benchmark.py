"""Benchmarks that print figures (speed is measured here, never asserted in tests).

    python tools/benchmark.py --what=encoder_speed   # ours vs KerasHub, same run, as a ratio
    python tools/benchmark.py --what=span_memory     # peak memory of one span NER step

encoder_speed trains our `bert_small`-shaped classifier and KerasHub's
`BertBackbone` with the same shape (4 layers, hidden 512, 8 heads) and head
with `fit` on random tokens (batch 32 × 128), alternating runs, and prints
tokens/s for each and their ratio. These machines are noisy: compare the
ratio, not the absolute figures.

span_memory runs one training step of a span NER model (batch 32, 128 words,
spans up to 10 words) in a fresh process and prints its peak resident memory
above the model's own footprint.
"""

import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from tools.errors import run  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_enum("what", "encoder_speed", ("encoder_speed", "span_memory", "_span_step"),
                  "Which benchmark.")
flags.DEFINE_enum("policy", "float32", ("float32", "mixed_bfloat16", "mixed_float16"),
                  "Dtype policy for encoder_speed.")
flags.DEFINE_integer("steps", 20, "Timed training steps per run.", lower_bound=1)
flags.DEFINE_integer("repeats", 3, "Alternating runs of each model.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Batch size.", lower_bound=1)
flags.DEFINE_integer("sequence_length", 128, "Tokens per sequence.", lower_bound=8)
flags.DEFINE_boolean("jit_compile", False, "Compile both models with XLA.")

_SHAPE = dict(num_layers=4, hidden_dim=512, num_heads=8, intermediate_dim=2048)


def _inputs(vocabulary_size):
    import numpy as np
    rng = np.random.default_rng(0)
    batch = FLAGS.batch_size * (FLAGS.steps + 2)
    x = {"token_ids": rng.integers(5, vocabulary_size, (batch, FLAGS.sequence_length)),
         "segment_ids": np.zeros((batch, FLAGS.sequence_length), "int32"),
         "padding_mask": np.ones((batch, FLAGS.sequence_length), "int32")}
    return x, rng.integers(0, 2, batch)


def _ours(vocabulary_size):
    from zoo import build_model
    return build_model("bert_small_classifier", num_classes=2, vocabulary_size=vocabulary_size,
                       learning_rate=1e-4, jit_compile=FLAGS.jit_compile)


def _kerashub(vocabulary_size):
    import keras
    import keras_hub
    backbone = keras_hub.models.BertBackbone(vocabulary_size=vocabulary_size, dropout=0.1,
                                             max_sequence_length=512, **_SHAPE)
    pooled = backbone(backbone.input)["pooled_output"]
    logits = keras.layers.Dense(2, dtype="float32")(keras.layers.Dropout(0.1)(pooled))
    model = keras.Model(backbone.input, logits)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=FLAGS.jit_compile)
    return model


def _tokens_per_second(model, x, y):
    batch = FLAGS.batch_size
    warm = {k: v[: 2 * batch] for k, v in x.items()}
    model.fit(warm, y[: 2 * batch], batch_size=batch, epochs=1, verbose=0)  # trace + compile
    timed = {k: v[2 * batch:] for k, v in x.items()}
    start = time.perf_counter()
    model.fit(timed, y[2 * batch:], batch_size=batch, epochs=1, verbose=0, shuffle=False)
    elapsed = time.perf_counter() - start
    return FLAGS.steps * batch * FLAGS.sequence_length / elapsed


def encoder_speed():
    import keras
    keras.mixed_precision.set_global_policy(FLAGS.policy)
    vocabulary_size = 30522
    x, y = _inputs(vocabulary_size)
    models = {"ours": _ours(vocabulary_size), "kerashub": _kerashub(vocabulary_size)}
    results = {name: [] for name in models}
    for _ in range(FLAGS.repeats):
        for name, model in models.items():
            results[name].append(_tokens_per_second(model, x, y))
    best = {name: max(values) for name, values in results.items()}
    print(json.dumps({
        "benchmark": "encoder_speed", "policy": FLAGS.policy, "jit_compile": FLAGS.jit_compile,
        "shape": _SHAPE, "batch": FLAGS.batch_size, "sequence_length": FLAGS.sequence_length,
        "tokens_per_second": {k: [round(v) for v in vals] for k, vals in results.items()},
        "best_ours_over_kerashub": round(best["ours"] / best["kerashub"], 3)}))


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def span_step():
    """One span NER training step (run in a fresh process by span_memory)."""
    import numpy as np
    from zoo import build_model
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
    print(json.dumps({"benchmark": "span_memory", "batch": batch, "words": words,
                      "max_span_width": width, "spans": words * width,
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
    {"encoder_speed": encoder_speed, "span_memory": span_memory,
     "_span_step": span_step}[FLAGS.what]()


if __name__ == "__main__":
    run(main)
