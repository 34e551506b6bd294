"""Continued (domain-adaptive) pretraining against fine-tuning directly, from MiniLM, on TREC-6
or CoNLL-2003 (`--dataset`).

    .venv/bin/python benchmarks/continued_pretraining.py --out=runs/continued \
        [--labelled=500] [--pretrain_text=all] [--pretrain_steps=200] [--seeds=42] \
        [--auxiliary_mlm_weights=0.1,0.5]

Issue 14's measurement. Every row fine-tunes on the same `--labelled`
examples and is tested once. TREC-6: a fixed random sample of the training
file minus its last 500 questions, which are the validation set that picks
the best epoch; test TREC_10 (500 questions); classification. CoNLL-2003
(`--dataset=conll --labelled=1000`): a fixed random sample of eng.train's
sentences; validation eng.testa, test eng.testb; the CRF tagger at the
preset's head learning rate, `--max_seq_length=128`.

- "direct": `tools/train.py --init_checkpoint=<MiniLM>`;
- "continued": first `tools/pretrain.py --init_checkpoint=<MiniLM>
  --objective=mlm` on the raw text (labels dropped) of the training
  questions (`--pretrain_text=all`: every training question but the
  validation ones, or every eng.train sentence; `labelled`: only the
  labelled sample), then the same
  fine-tuning from its encoder (no such row with `--pretrain_steps=0`);
- "auxiliary_mlm_<λ>", one per `--auxiliary_mlm_weights` entry: the direct
  fine-tuning with `--auxiliary_mlm_weight=λ` (a masked-LM loss on the
  labelled questions themselves, added to the task loss at every step; with
  `--auxiliary_mlm_anneal`, λ decays linearly to 0).

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
flags.DEFINE_enum("dataset", "trec", ["trec", "conll"], "TREC-6 questions or CoNLL-2003 "
                  "sentences.")
flags.DEFINE_string("data", None, "The data set's folder: train_5500.label and "
                    "TREC_10.label, or eng.train, eng.testa and eng.testb; by default "
                    "../shared/data/trec or ../shared/data/conll2003.")
flags.DEFINE_integer("labelled", 500, "Labelled training examples (a fixed random sample).")
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
flags.DEFINE_list("auxiliary_mlm_weights", [], "One more row per weight: direct fine-tuning "
                  "with tools/train.py --auxiliary_mlm_weight=<weight>.")
flags.DEFINE_boolean("auxiliary_mlm_anneal", False, "Those rows anneal the weight to 0.")
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS


def _write_corpus(out, documents):
    """The pretraining corpus: one example per line, documents apart by a blank line."""
    path = os.path.join(out, f"corpus_{FLAGS.dataset}_{FLAGS.pretrain_text}.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(document) for document in documents) + "\n")
    return path


def _chunks(lines, size=20):
    return [lines[i:i + size] for i in range(0, len(lines), size)]


def _trec_splits(out, data):
    """(labelled train, dev, test, pretraining corpus) files, TREC-6."""
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
    paths["corpus"] = _write_corpus(out, _chunks(text))  # documents of 20 questions
    paths["test"] = os.path.join(data, "TREC_10.label")
    return paths


def _conll_sentences(path):
    """The sentences of a CoNLL file, each the list of its lines (-DOCSTART- left out)."""
    sentences, current = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("-DOCSTART-"):
                if current:
                    sentences.append(current)
                current = []
            else:
                current.append(line)
    return sentences + ([current] if current else [])


def _conll_splits(out, data):
    """(labelled train, dev, test, pretraining corpus) files, CoNLL-2003."""
    train = _conll_sentences(os.path.join(data, "eng.train"))
    labelled = random.Random(0).sample(train, FLAGS.labelled)
    paths = {"labelled": os.path.join(out, "conll_labelled.txt"),
             "dev": os.path.join(data, "eng.testa"), "test": os.path.join(data, "eng.testb")}
    with open(paths["labelled"], "w", encoding="utf-8") as f:
        f.write("\n".join("".join(sentence) for sentence in labelled))
    text = [" ".join(line.split()[0] for line in sentence) for sentence in
            (train if FLAGS.pretrain_text == "all" else labelled)]
    paths["corpus"] = _write_corpus(out, _chunks(text))
    return paths


def _pretrain(corpus):
    """Runs tools/pretrain.py once; (its model directory, {"seconds", validation metrics})."""
    run = os.path.join(FLAGS.out, f"pretrain_{FLAGS.dataset}_{FLAGS.pretrain_text}_"
                       f"{FLAGS.pretrain_steps}")
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


def _fine_tune(name, checkpoint, paths, seed, extra_flags=()):
    if FLAGS.dataset == "trec":
        task_flags = ["--task=classification", f"--head_learning_rate={FLAGS.learning_rate}",
                      "--max_seq_length=64"]
    else:
        task_flags = ["--task=tagging", "--head=crf", "--max_seq_length=128"]
    return train_and_test(
        os.path.join(FLAGS.out, f"{'conll_' if FLAGS.dataset == 'conll' else ''}{name}"
                                f"_seed{seed}"),
        [*task_flags, f"--init_checkpoint={checkpoint}",
         f"--train_data={paths['labelled']}", f"--eval_data={paths['dev']}",
         f"--epochs={FLAGS.epochs}", f"--batch_size={FLAGS.batch_size}",
         f"--learning_rate={FLAGS.learning_rate}", f"--seed={seed}", *extra_flags],
        paths["test"])


def main(argv):
    os.makedirs(FLAGS.out, exist_ok=True)
    data = FLAGS.data or os.path.join(ROOT, "..", "shared", "data",
                                      {"trec": "trec", "conll": "conll2003"}[FLAGS.dataset])
    splits = _trec_splits if FLAGS.dataset == "trec" else _conll_splits
    paths = splits(FLAGS.out, data)
    metric = "accuracy" if FLAGS.dataset == "trec" else "entity_f1"
    rows = {"direct": (minilm_checkpoint(), [])}
    if FLAGS.pretrain_steps:
        pretrained, pretraining = _pretrain(paths["corpus"])
        print(f"continued pretraining: {FLAGS.pretrain_steps} steps of "
              f"{FLAGS.pretrain_batch_size} x {FLAGS.pretrain_seq_length} in "
              f"{pretraining['seconds']} s; held-out MLM loss {pretraining['mlm_loss']:.3f}, "
              f"accuracy {pretraining['mlm_accuracy']:.3f}", flush=True)
        rows[f"continued_{FLAGS.pretrain_text}"] = (pretrained, [])
    anneal = ["--auxiliary_mlm_anneal"] if FLAGS.auxiliary_mlm_anneal else []
    for weight in FLAGS.auxiliary_mlm_weights:
        rows[f"auxiliary_mlm_{weight}{'_annealed' if anneal else ''}"] = (
            minilm_checkpoint(), [f"--auxiliary_mlm_weight={weight}", *anneal])
    results = {name: [] for name in rows}
    for seed in FLAGS.seeds:
        for name, (checkpoint, extra_flags) in rows.items():
            result = _fine_tune(name, checkpoint, paths, seed, extra_flags)
            results[name].append(result)
            print(f"{name} seed {seed}: test {metric} {result['test'][metric]:.4f} "
                  f"({result['seconds']} s)", flush=True)
    print(f"\n| start of fine-tuning ({FLAGS.labelled} labelled) | test {metric} "
          f"(seeds {', '.join(FLAGS.seeds)}) | mean | fine-tuning time |")
    print("|---|---|---|---|")
    for name, runs in results.items():
        accuracies = [run["test"][metric] for run in runs]
        print(f"| {name} | {', '.join(f'{a:.3f}' for a in accuracies)} | "
              f"{sum(accuracies) / len(accuracies):.3f} | "
              f"{sum(run['seconds'] for run in runs) / len(runs):.0f} s |")


if __name__ == "__main__":
    app.run(main)
