"""Would int8 quantization speed up inference here? One MiniLM-sized matmul in each dtype.

    .venv/bin/python benchmarks/int8_matmul.py [--rows=2048] [--repeats=20]

Times a [rows, 384] × [384, 1536] product (a MiniLM feed-forward projection over
`--rows` tokens) in float32, bfloat16 and int8 × int8 → int32 (the matmul Keras's
`Dense.quantize("int8")` runs on TensorFlow), then a Keras `Dense(1536)` before and after
`quantize("int8")`, each inside `tf.function`. Prints GFLOP/s (GOP/s for int8), the
median of `--repeats` timed calls after one untimed call.
"""

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the checkout this script sits in

HIDDEN, INTERMEDIATE = 384, 1536


def _median_seconds(function, repeats):
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    from nlpzoo.zoo.hardware import cpu_model

    operations = 2 * args.rows * HIDDEN * INTERMEDIATE
    print(f"{cpu_model()}: [{args.rows}, {HIDDEN}] x [{HIDDEN}, {INTERMEDIATE}]")

    def report(name, function):
        rate = operations / _median_seconds(function, args.repeats) / 1e9
        print(f"{name:28s} {rate:7.1f} G(FL)OP/s")

    for dtype in ("float32", "bfloat16"):
        a = tf.random.normal([args.rows, HIDDEN], dtype=dtype)
        b = tf.random.normal([HIDDEN, INTERMEDIATE], dtype=dtype)
        product = tf.function(lambda a=a, b=b: tf.matmul(a, b))
        report(f"matmul {dtype}", lambda product=product: product().numpy())
    a = tf.random.uniform([args.rows, HIDDEN], -100, 100, dtype=tf.int32)
    b = tf.random.uniform([HIDDEN, INTERMEDIATE], -100, 100, dtype=tf.int32)
    a, b = tf.cast(a, tf.int8), tf.cast(b, tf.int8)
    product = tf.function(lambda: tf.linalg.matmul(a, b, output_type=tf.int32))
    report("matmul int8 -> int32", lambda: product().numpy())

    x = np.random.default_rng(0).normal(size=(args.rows, HIDDEN)).astype("float32")
    for mode in (None, "int8"):
        dense = keras.layers.Dense(INTERMEDIATE)
        dense.build((None, HIDDEN))
        if mode:
            dense.quantize(mode)
        call = tf.function(dense.__call__)
        report(f"keras Dense {mode or 'float32'}", lambda call=call: call(x).numpy())


if __name__ == "__main__":
    main()
