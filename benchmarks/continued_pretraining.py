"""Continued (domain-adaptive) pretraining against fine-tuning directly, on TREC-6 from MiniLM.

    .venv/bin/python benchmarks/continued_pretraining.py --out=runs/continued \
        [--labelled=500] [--pretrain_text=all] [--pretrain_steps=200] [--seeds=42]

Issue 14's measurement. Both rows fine-tune on the same `--labelled` questions
(a fixed random sample of the TREC-6 training file minus its last 500
questions, which are the validation set that picks the best epoch) and are
tested once on TREC_10 (500 questions):

- "direct": `tools/train.py --init_checkpoint=<MiniLM>`;
- "continued": first `tools/pretrain.py --init_checkpoint=<MiniLM>
  --objective=mlm` on the raw text (labels dropped) of the training
  questions (`--pretrain_text=all`: every training question but the
  validation ones; `labelled`: only the labelled sample), then the same
  fine-tuning from its encoder.

all-MiniLM-L6-v2 is a sentence-transformers checkpoint: it has no MLM head,
so continued pretraining starts that head at random (the log says so).
Prints a Markdown table; results are kept in `--out` (`<run>.json`), so an
interrupted benchmark continues where it stopped.
"""

import json
import os
import random
import subprocess
import sys
import time

from absl import app, flags

from experiment import ENVIRONMENT, ROOT, minilm_checkpoint, train_and_test

flags.DEFINE_string("out", None, "Output directory.")
flags.DEFINE_string("data", os.path.join(ROOT, "..", "shared", "data", "trec"),
                    "Folder with train_5500.label and TREC_10.label.")
flags.DEFINE_integer("labelled", 500, "Labelled training questions (a fixed random sample).")
flags.DEFINE_enum("pretrain_text", "all", ["all", "labelled"], "Text continued pretraining "
                  "reads: every training question (labels dropped) or the labelled ones.")
flags.DEFINE_integer("pretrain_steps", 200, "Continued pretraining steps.")
flags.DEFINE_integer("pretrain_batch_size", 16, "Continued pretraining batch size.")
flags.DEFINE_integer("pretrain_seq_length", 64, "Packed sequence length of pretraining.")
flags.DEFINE_float("pretrain_learning_rate", 1e-4, "Peak learning rate of pretraining.")
flags.DEFINE_integer("epochs", 10, "Fine-tuning epochs (the best on validation is kept).")
flags.DEFINE_integer("batch_size", 32, "Fine-tuning batch size.")
flags.DEFINE_float("learning_rate", 1e-4, "Fine-tuning learning rate (encoder and head).")
flags.DEFINE_list("seeds", ["42"], "Fine-tuning seeds; each row is run once per seed.")
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS


def _splits(out, data):
    """(labelled train, dev, pretraining corpus) files in `out`."""
    with open(os.path.join(data, "train_5500.label"), encoding="latin-1") as f:
        lines = f.readlines()
    train, dev = lines[:-500], lines[-500:]
    labelled = random.Random(0).sample(train, FLAGS.labelled)
    paths = {name: os.path.join(out, f"trec_{name}.label") for name in ("labelled", "dev")}
    for name, content in (("labelled", labelled), ("dev", dev)):
        with open(paths[name], "w", encoding="latin-1") as f:
            f.writelines(content)
    text = [line.split(" ", 1)[1].strip() for line in
            (train if FLAGS.pretrain_text == "all" else labelled)]
    paths["corpus"] = os.path.join(out, f"corpus_{FLAGS.pretrain_text}.txt")
    with open(paths["corpus"], "w", encoding="utf-8") as f:  # documents of 20 questions
        f.write("\n\n".join("\n".join(text[i:i + 20]) for i in range(0, len(text), 20)) + "\n")
    return paths


def _pretrain(corpus):
    """Runs tools/pretrain.py once; (its model directory, {"seconds", validation metrics})."""
    run = os.path.join(FLAGS.out, f"pretrain_{FLAGS.pretrain_text}_{FLAGS.pretrain_steps}")
    result_file = run + ".json"
    if os.path.exists(result_file):
        with open(result_file) as f:
            return run, json.load(f)
    start = time.monotonic()
    with open(run + ".log", "a") as log:
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "pretrain.py"),
                        f"--init_checkpoint={minilm_checkpoint()}", "--objective=mlm",
                        f"--corpus={corpus}", f"--model_dir={run}", "--overwrite",
                        f"--max_steps={FLAGS.pretrain_steps}",
                        f"--steps_per_checkpoint={max(1, FLAGS.pretrain_steps // 4)}",
                        f"--batch_size={FLAGS.pretrain_batch_size}",
                        f"--max_seq_length={FLAGS.pretrain_seq_length}",
                        f"--learning_rate={FLAGS.pretrain_learning_rate}",
                        "--eval_fraction=0.05", "--log_every_steps=10"],
                       check=True, stdout=log, stderr=log, env=ENVIRONMENT)
    with open(os.path.join(run, "metrics.json")) as f:
        result = {"seconds": round(time.monotonic() - start), **json.load(f)}
    with open(result_file, "w") as f:
        json.dump(result, f)
    return run, result


def _fine_tune(name, checkpoint, paths, seed):
    return train_and_test(
        os.path.join(FLAGS.out, f"{name}_seed{seed}"),
        ["--task=classification", f"--init_checkpoint={checkpoint}",
         f"--train_data={paths['labelled']}", f"--eval_data={paths['dev']}",
         f"--epochs={FLAGS.epochs}", f"--batch_size={FLAGS.batch_size}",
         f"--learning_rate={FLAGS.learning_rate}",
         f"--head_learning_rate={FLAGS.learning_rate}", "--max_seq_length=64",
         f"--seed={seed}"],
        os.path.join(FLAGS.data, "TREC_10.label"))


def main(argv):
    os.makedirs(FLAGS.out, exist_ok=True)
    paths = _splits(FLAGS.out, FLAGS.data)
    pretrained, pretraining = _pretrain(paths["corpus"])
    print(f"continued pretraining: {FLAGS.pretrain_steps} steps of "
          f"{FLAGS.pretrain_batch_size} x {FLAGS.pretrain_seq_length} in "
          f"{pretraining['seconds']} s; held-out MLM loss {pretraining['mlm_loss']:.3f}, "
          f"accuracy {pretraining['mlm_accuracy']:.3f}", flush=True)
    rows = {"direct": minilm_checkpoint(), f"continued_{FLAGS.pretrain_text}": pretrained}
    results = {name: [] for name in rows}
    for seed in FLAGS.seeds:
        for name, checkpoint in rows.items():
            result = _fine_tune(name, checkpoint, paths, seed)
            results[name].append(result)
            print(f"{name} seed {seed}: test accuracy {result['test']['accuracy']:.4f} "
                  f"({result['seconds']} s)", flush=True)
    print(f"\n| start of fine-tuning ({FLAGS.labelled} labelled q.) | test accuracy "
          f"(seeds {', '.join(FLAGS.seeds)}) | mean | fine-tuning time |")
    print("|---|---|---|---|")
    for name, runs in results.items():
        accuracies = [run["test"]["accuracy"] for run in runs]
        print(f"| {name} | {', '.join(f'{a:.3f}' for a in accuracies)} | "
              f"{sum(accuracies) / len(accuracies):.3f} | "
              f"{sum(run['seconds'] for run in runs) / len(runs):.0f} s |")


if __name__ == "__main__":
    app.run(main)
