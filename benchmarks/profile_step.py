"""Where one training step's time goes, by op type and by part of the encoder.

Traces a few `train_on_batch` steps of `--preset` with `tf.profiler` and sums
the host op events of the trace (no TensorBoard plugin needed). The times are
summed over TensorFlow's threads, so they add up to more than the wall time;
on a shared machine read only the shares, not the milliseconds.

    python benchmarks/profile_step.py --policy mixed_bfloat16 --steps 3
"""

import argparse
import collections
import glob
import os
import sys
import tempfile

# Profile the layers of the checkout this script sits in, not an installed copy.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from random_batch import random_classification_batch  # noqa: E402 (beside this script)

# Sublayer names (under `attention/`) and what they are; checked in order.
_ATTENTION_PARTS = (("/query", "attention q/k/v projections"),
                    ("/key", "attention q/k/v projections"),
                    ("/value", "attention q/k/v projections"),
                    ("/output", "attention output projection"),
                    ("attention_dropout", "attention dropout (probabilities)"))


def part_of_model(op_name, op_type):
    """A coarse label for one op, from its name scope."""
    if op_name.startswith("adam_w") or op_type.startswith("Assign"):
        return "optimizer"
    if "/attention" in op_name and "attention_norm" not in op_name:
        for key, label in _ATTENTION_PARTS:
            if key in op_name.split("/attention", 1)[1]:
                return label
        return f"attention core: {op_type}"
    if "norm" in op_name:
        return "layer norms"
    if "Gelu" in op_name or "gelu" in op_name:
        return "GELU"
    if "/intermediate" in op_name or "/output" in op_name:
        return "feed-forward projections"
    if "dropout" in op_name:
        return "residual dropout"
    if "embedding" in op_name:
        return "embeddings"
    return f"other: {op_type}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="float32")
    parser.add_argument("--preset", default="bert_small_classifier")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    import keras
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    keras.mixed_precision.set_global_policy(args.policy)
    import nlpzoo.zoo

    model = nlpzoo.zoo.build_model(args.preset, num_classes=2)
    x, y = random_classification_batch(args.batch, args.length)
    for _ in range(3):  # trace and warm up outside the profile
        model.train_on_batch(x, y)

    logdir = tempfile.mkdtemp()
    tf.profiler.experimental.start(logdir)
    for _ in range(args.steps):
        model.train_on_batch(x, y)
    tf.profiler.experimental.stop()

    path = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0]
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    by_type, by_part = collections.Counter(), collections.Counter()
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                # Op events read "scope/op_name:OpType"; skip executor frames.
                if ":" not in name:
                    continue
                op_name, op_type = name.rsplit(":", 1)
                if (not op_type or " " in op_type or op_type in ("Process", "Run")
                        or not (op_type[0].isupper() or op_type[0] == "_")):
                    continue
                ms = event.duration_ps / 1e9 / args.steps
                by_type[op_type] += ms
                by_part[part_of_model(op_name, op_type)] += ms
    total = sum(by_type.values())
    print(f"policy {args.policy}, {args.preset} {args.batch}x{args.length}: "
          f"op time summed over threads, per step; shares of the total")
    for title, counter in (("by op type", by_type), ("by part of the model", by_part)):
        print(f"--- {title}")
        for key, ms in counter.most_common(20):
            print(f"  {key:50s} {100 * ms / total:5.1f}%")


if __name__ == "__main__":
    main()
