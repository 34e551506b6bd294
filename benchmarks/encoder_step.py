"""Same-process, alternating timing: fused vs unfused query/key/value.

`--scope step` builds `bert_small_classifier` twice with identical weights,
once with `MultiHeadSelfAttention` projecting query, key and value with three
Dense calls (the implementation before the fusion, kept here as
`_unfused_qkv`) and once as the layer is now, and times windows of training
steps, alternating the two. `--scope attention` does the same for one attention
layer's forward and backward pass ([batch, length, 512], 8 heads). It prints
the median of the per-window ratios fused / unfused. Compare only ratios from
one run: absolute times on a shared machine mean nothing.

    python benchmarks/encoder_step.py --policy mixed_bfloat16 --windows 7
    python benchmarks/encoder_step.py --scope attention --windows 21
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

# Time the layers of the checkout this script sits in, not an installed copy.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _unfused_qkv(self, inputs):
    """The pre-fusion projection: three Dense calls."""
    return tuple(self._split_heads(dense(inputs)) for dense in
                 (self.query_dense, self.key_dense, self.value_dense))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scope", choices=("step", "attention"), default="step")
    parser.add_argument("--policy", default="float32")
    parser.add_argument("--preset", default="bert_small_classifier")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--windows", type=int, default=7)
    parser.add_argument("--steps_per_window", type=int, default=2)
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    keras.mixed_precision.set_global_policy(args.policy)
    import zoo
    from layers.self_attention import MultiHeadSelfAttention

    rng = np.random.default_rng(0)
    shape = (args.batch, args.length)
    x = {"token_ids": tf.constant(rng.integers(1, 30000, shape), tf.int32),
         "segment_ids": tf.zeros(shape, tf.int32),
         "padding_mask": tf.ones(shape, tf.int32)}
    y = tf.constant(rng.integers(0, 2, args.batch), tf.int32)

    fused_projection = MultiHeadSelfAttention._project_qkv
    steps = {}
    for name, projection in (("unfused", _unfused_qkv), ("fused", fused_projection)):
        # The graph is traced on the first call: patch only while tracing.
        MultiHeadSelfAttention._project_qkv = projection
        keras.utils.set_random_seed(0)
        if args.scope == "step":
            model = zoo.build_model(args.preset, num_classes=2)

            def step(model=model):
                model.train_on_batch(x, y)
        else:
            layer = MultiHeadSelfAttention(512, 8)
            inputs = tf.constant(rng.normal(size=shape + (512,)), tf.float32)

            @tf.function
            def step(layer=layer, inputs=inputs):
                with tf.GradientTape() as tape:
                    tape.watch(inputs)
                    out = layer(inputs, padding_mask=x["padding_mask"], training=True)
                    loss = tf.reduce_sum(tf.cast(out, "float32") ** 2)
                return tape.gradient(loss, [inputs] + layer.trainable_weights)
        step()
        step()
        steps[name] = step
    MultiHeadSelfAttention._project_qkv = fused_projection

    times = {name: [] for name in steps}
    for window in range(args.windows):
        # Alternate which goes first, so neither always follows the other.
        for name in sorted(steps, reverse=bool(window % 2)):
            start = time.perf_counter()
            for _ in range(args.steps_per_window):
                steps[name]()
            times[name].append((time.perf_counter() - start) / args.steps_per_window)
    cpu = subprocess.run(["bash", "-c", "lscpu | grep 'Model name'"],
                         capture_output=True, text=True).stdout.strip()
    medians = {name: statistics.median(t) for name, t in times.items()}
    what = args.preset if args.scope == "step" else "attention layer fwd+bwd"
    print(f"{cpu} | {platform.python_version()} | policy {args.policy} | "
          f"{what} {args.batch}x{args.length}, {args.windows} windows")
    for name, t in times.items():
        print(f"  {name:8s} median {medians[name]:.3f} s/step  windows "
              + " ".join(f"{v:.2f}" for v in t))
    ratios = [f / u for f, u in zip(times["fused"], times["unfused"])]
    print(f"  fused / unfused: ratio of medians {medians['fused'] / medians['unfused']:.3f}, "
          f"median of per-window ratios {statistics.median(ratios):.3f} "
          f"(range {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
