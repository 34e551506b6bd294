"""Same-process, alternating timing of the encoder layers against an older version.

Loads `layers/self_attention.py` and `layers/transformer_block.py` as they were
at `--baseline` (a git revision; default: the commit before the fused
query/key/value projection) next to the current ones, builds the model (or one
attention layer) with each, and times windows of steps, alternating the two.
`--scope step` times `train_on_batch` of `--preset` (identical weights);
`--scope attention` one `MultiHeadSelfAttention` forward and backward pass
([batch, length, 512], 8 heads, dropout on). A third contender,
`current_fused`, is the current code with `MultiHeadSelfAttention.fuse_qkv`
on. It prints the median of the per-window ratios to the baseline. Compare
only ratios from one run: absolute times on a shared machine mean nothing.

    python benchmarks/encoder_step.py --policy mixed_bfloat16 --windows 7
    python benchmarks/encoder_step.py --scope attention --windows 21
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Time the layers of the checkout this script sits in, not an installed copy.
sys.path.insert(0, ROOT)
from random_batch import random_classification_batch  # noqa: E402 (beside this script)


def _module_at(revision, path, name, replacements=()):
    """The module at `path` as it was at git `revision`, loaded as `name`."""
    source = subprocess.run(["git", "-C", ROOT, "show", f"{revision}:{path}"],
                            capture_output=True, text=True, check=True).stdout
    # Unregistered copies: the current classes keep their serialization names.
    source = source.replace("@register\n", "")
    for old, new in replacements:
        source = source.replace(old, new)
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, f"{revision}:{path}", "exec"), module.__dict__)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scope", choices=("step", "attention"), default="step")
    parser.add_argument("--baseline", default="90e83dc")
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
    import nlpzoo.layers.transformer_encoder
    import nlpzoo.zoo
    from nlpzoo.layers.self_attention import MultiHeadSelfAttention

    old_attention = _module_at(args.baseline, "layers/self_attention.py",
                               "_baseline_self_attention")
    old_block = _module_at(
        args.baseline, "layers/transformer_block.py", "_baseline_transformer_block",
        [("from layers.self_attention import", "from _baseline_self_attention import")])
    classes = {
        "baseline": (old_block.TransformerEncoderBlock, old_attention.MultiHeadSelfAttention),
        "current": (nlpzoo.layers.transformer_encoder.TransformerEncoderBlock, MultiHeadSelfAttention),
        "current_fused": (nlpzoo.layers.transformer_encoder.TransformerEncoderBlock,
                          MultiHeadSelfAttention),
    }

    x, y = random_classification_batch(args.batch, args.length)
    rng = np.random.default_rng(1)
    inputs = tf.constant(rng.normal(size=(args.batch, args.length, 512)), tf.float32)

    steps, weights = {}, None
    current_block = nlpzoo.layers.transformer_encoder.TransformerEncoderBlock
    for name, (block_cls, attention_cls) in classes.items():
        keras.utils.set_random_seed(0)
        # Read when the call is traced, i.e. in the first two steps below.
        MultiHeadSelfAttention.fuse_qkv = name == "current_fused"
        if args.scope == "step":
            nlpzoo.layers.transformer_encoder.TransformerEncoderBlock = block_cls
            try:
                model = nlpzoo.zoo.build_model(args.preset, num_classes=2)
            finally:
                nlpzoo.layers.transformer_encoder.TransformerEncoderBlock = current_block
            if weights is None:
                weights = model.get_weights()
            model.set_weights(weights)

            def step(model=model):
                model.train_on_batch(x, y)
        else:
            layer = attention_cls(512, 8)

            @tf.function
            def step(layer=layer):
                with tf.GradientTape() as tape:
                    tape.watch(inputs)
                    out = layer(inputs, padding_mask=x["padding_mask"], training=True)
                    loss = tf.reduce_sum(tf.cast(out, "float32") ** 2)
                return tape.gradient(loss, [inputs] + layer.trainable_weights)
        step()
        step()
        steps[name] = step
    MultiHeadSelfAttention.fuse_qkv = False

    times = {name: [] for name in steps}
    for window in range(args.windows):
        # Alternate which goes first, so neither always follows the other.
        for name in (list(steps) if window % 2 else list(steps)[::-1]):
            start = time.perf_counter()
            for _ in range(args.steps_per_window):
                steps[name]()
            times[name].append((time.perf_counter() - start) / args.steps_per_window)
    cpu = subprocess.run(["bash", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"],
                         capture_output=True, text=True).stdout.strip()
    what = args.preset if args.scope == "step" else "attention layer fwd+bwd"
    print(f"{cpu} | policy {args.policy} | {what} {args.batch}x{args.length} | "
          f"baseline {args.baseline} | {args.windows} windows x {args.steps_per_window}")
    for name, t in times.items():
        print(f"  {name:15s} median {statistics.median(t):.3f} s/step  windows "
              + " ".join(f"{v:.2f}" for v in t))
    for name in ("current", "current_fused"):
        ratios = [c / b for c, b in zip(times[name], times["baseline"])]
        print(f"  {name} / baseline: median of per-window ratios "
              f"{statistics.median(ratios):.3f} (range {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
