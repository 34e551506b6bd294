"""Few-shot TREC-6 and MRPC: prompt-based classification vs the classification head (issue 40).

    .venv/bin/python benchmarks/few_shot.py --checkpoint=/work/runs/minilm_mlm \
        --out=runs/few_shot [--configs=trec,mrpc] [--ks=16] [--seeds=5] \
        [--arms=zero_shot,prompt,head]

Each config (benchmarks/few_shot_configs/<name>.json) names a data set of
`../shared/data`, its K values, seeds, pattern(s), verbalizer and training
budget. For every K and seed, K examples per class are sampled from the
training file for training and another K per class for validation (picks the
best epoch), as LM-BFF does (Gao et al. 2021); the sample is written in the
file's own format. Both arms start from the same masked-LM checkpoint
(`--checkpoint`: one with an MLM head, e.g. a tools/pretrain.py run of
continued MLM pretraining from MiniLM) and train with the same epochs, batch
size and learning rate, so the same steps:

- prompt: `tools/train.py --task=prompt_classification` (the pattern and the
  verbalizer; the MLM head's scores of the label words are the class scores);
- head: `tools/train.py --task=classification` (a new head on the [CLS]
  vector, `head_flags`).

Zero-shot is the prompt model of the checkpoint with no training
(`tools/evaluate.py --task=prompt_classification`). Every model is tested once
on the test file. Prints a Markdown table per data set and metric (the config's
`metric`, then its `also_report` list): per K the mean and standard deviation
over seeds of each arm's test figure, the difference, and zero-shot. Runs whose
results exist are not repeated (an interrupted benchmark continues).
"""

import json
import os
import random
import statistics
import subprocess
import sys

from absl import app, flags

from experiment import ENVIRONMENT, ROOT, train_and_test

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "few_shot_configs")

flags.DEFINE_string("checkpoint", "/work/runs/minilm_mlm", "The masked-LM checkpoint both "
                    "arms start from (its MLM head is required).")
flags.DEFINE_string("out", None, "Output directory.")
flags.DEFINE_string("data", os.path.join(ROOT, "..", "shared", "data"),
                    "The shared data folder (trec/, mrpc/).")
flags.DEFINE_list("configs", ["trec", "mrpc"], "Config names (few_shot_configs/<name>.json) "
                  "or paths.")
flags.DEFINE_list("ks", None, "Only these K (examples per class); default: the config's.")
flags.DEFINE_integer("seeds", None, "Only the first this many of the config's seeds.",
                     lower_bound=1)
flags.DEFINE_list("arms", ["zero_shot", "prompt", "head"], "Which of zero_shot, prompt, "
                  "head to run.")
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS


def load_config(name):
    path = name if name.endswith(".json") else os.path.join(CONFIGS, f"{name}.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def label_of(line, data_format):
    """The (coarse) label of one raw line of a TREC or MRPC file (bytes).

    >>> label_of(b"DESC:manner How did serfdom develop ?\\n", "trec")
    b'DESC'
    >>> label_of(b"1\\t702876\\t702977\\tAmrozi accused ...\\tReferring to him ...\\n", "mrpc")
    b'1'
    """
    if data_format == "trec":
        return line.split(b":", 1)[0]
    if data_format == "mrpc":
        return line.split(b"\t", 1)[0]
    raise ValueError(f"no sampler for the data format {data_format!r}")


def sample_few_shot(lines, data_format, k, seed):
    """(train, validation): `k` lines per label each, disjoint, drawn with `seed`, each in
    the file's order.

    >>> lines = [f"{label}:x q{i}\\n".encode() for i in range(6) for label in "AB"]
    >>> train, dev = sample_few_shot(lines, "trec", 2, seed=1)
    >>> len(train), len(dev), sorted(label_of(l, "trec") for l in train), set(train) & set(dev)
    (4, 4, [b'A', b'A', b'B', b'B'], set())
    """
    by_label = {}
    for index, line in enumerate(lines):
        by_label.setdefault(label_of(line, data_format), []).append(index)
    rng = random.Random(seed)
    train, dev = [], []
    for label in sorted(by_label):
        indices = by_label[label]
        if len(indices) < 2 * k:
            raise ValueError(f"label {label!r} has {len(indices)} examples, fewer than 2K = "
                             f"{2 * k}")
        drawn = rng.sample(indices, 2 * k)
        train += drawn[:k]
        dev += drawn[k:]
    return [lines[i] for i in sorted(train)], [lines[i] for i in sorted(dev)]


def write_sample(config, directory, k, seed):
    """The (train, validation) files of one K and seed, in the training file's format."""
    train_path = os.path.join(directory, f"train{os.path.splitext(config['train'])[1]}")
    dev_path = os.path.join(directory, f"dev{os.path.splitext(config['train'])[1]}")
    if os.path.exists(train_path) and os.path.exists(dev_path):
        return train_path, dev_path
    with open(os.path.join(FLAGS.data, config["train"]), "rb") as f:
        lines = f.read().splitlines(keepends=True)
    header = []
    if config["data_format"] == "mrpc":  # a header row (with a byte-order mark)
        header, lines = lines[:1], lines[1:]
    lines = [line if line.endswith(b"\n") else line + b"\n" for line in lines if line.strip()]
    train, dev = sample_few_shot(lines, config["data_format"], k, seed)
    os.makedirs(directory, exist_ok=True)
    for path, part in ((train_path, train), (dev_path, dev)):
        with open(path, "wb") as f:
            f.writelines(header + part)
    return train_path, dev_path


def prompt_flags(config):
    return ([f"--pattern={pattern}" for pattern in config["patterns"]]
            + [f"--verbalizer={config['verbalizer']}"])


def zero_shot(config, directory):
    """The untrained prompt model's test metrics (cached in zero_shot.json)."""
    result_file = os.path.join(directory, "zero_shot.json")
    if os.path.exists(result_file):
        with open(result_file) as f:
            return json.load(f)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "zero_shot.log"), "a") as log:
        output = subprocess.run(
            [sys.executable, os.path.join(ROOT, "tools", "evaluate.py"),
             "--task=prompt_classification", f"--init_checkpoint={FLAGS.checkpoint}",
             f"--data={os.path.join(FLAGS.data, config['test'])}",
             f"--max_seq_length={config['max_seq_length']}", *prompt_flags(config)],
            check=True, stdout=subprocess.PIPE, stderr=log, env=ENVIRONMENT, text=True).stdout
    result = {"test": json.loads(output.strip().splitlines()[-1])}
    with open(result_file, "w") as f:
        json.dump(result, f)
    return result


def trained(config, arm, train, dev, run, seed):
    """One arm trained on a sample and tested once (`experiment.train_and_test`)."""
    common = [f"--init_checkpoint={FLAGS.checkpoint}", f"--train_data={train}",
              f"--eval_data={dev}", f"--epochs={config['epochs']}",
              f"--batch_size={config['batch_size']}",
              f"--learning_rate={config['learning_rate']}",
              f"--max_seq_length={config['max_seq_length']}", f"--seed={seed}"]
    if arm == "prompt":
        extra = ["--task=prompt_classification", *prompt_flags(config), *config["prompt_flags"]]
    else:
        extra = ["--task=classification", *config["head_flags"]]
    return train_and_test(run, common + extra, os.path.join(FLAGS.data, config["test"]))


def _mean_std(values):
    if not values:
        return "–"
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.mean(values):.1f} ± {100 * spread:.1f}"


def run_config(config):
    directory = os.path.join(FLAGS.out, config["name"].lower().replace("-", ""))
    metric = config["metric"]
    ks = [int(k) for k in FLAGS.ks] if FLAGS.ks else config["ks"]
    seeds = config["seeds"][:FLAGS.seeds] if FLAGS.seeds else config["seeds"]
    zero = zero_shot(config, directory)["test"] if "zero_shot" in FLAGS.arms else None
    tests = {}  # K → arm → the test metrics of each seed
    for k in ks:
        tests[k] = {"prompt": [], "head": []}
        for seed in seeds:
            sample = os.path.join(directory, f"k{k}_seed{seed}")
            train, dev = write_sample(config, sample, k, seed)
            for arm in ("prompt", "head"):
                if arm in FLAGS.arms:
                    result = trained(config, arm, train, dev, os.path.join(sample, arm), seed)
                    tests[k][arm].append(result["test"])
                    print(f"{config['name']} K={k} seed={seed} {arm}: {metric} "
                          f"{result['test'][metric]:.4f} ({result['seconds']} s)", flush=True)
    # The headline metric, then the others the config asks for (MRPC's F1 rewards
    # answering "yes" to every pair; accuracy and MCC show it).
    for name in [metric, *config.get("also_report", [])]:
        print(f"\n{config['name']}: test {name} (%), mean ± standard deviation over seeds; "
              f"{config['epochs']} epochs of batch {config['batch_size']}, learning rate "
              f"{config['learning_rate']}; checkpoint {FLAGS.checkpoint}\n")
        print(metric_table(tests, len(seeds), name, None if zero is None else zero[name]),
              flush=True)


def metric_table(tests, seeds, name, zero):
    """The Markdown table of one metric: per K, each arm's mean ± spread over seeds, their
    difference (when both ran on every seed) and zero-shot.

    >>> print(metric_table({16: {"prompt": [{"f1": 0.8}, {"f1": 0.6}], "head": [{"f1": 0.5},
    ...                                                                 {"f1": 0.5}]}},
    ...                    2, "f1", 0.25))
    | K per class | seeds | prompt-based | [CLS] head | prompt − head | zero-shot |
    |---|---|---|---|---|---|
    | 16 | 2 | 70.0 ± 14.1 | 50.0 ± 0.0 | +20.0 | 25.0 |
    """
    rows = ["| K per class | seeds | prompt-based | [CLS] head | prompt − head | zero-shot |",
            "|---|---|---|---|---|---|"]
    for k, arms in tests.items():
        scores = {arm: [test[name] for test in results] for arm, results in arms.items()}
        both = len(scores["prompt"]) == len(scores["head"]) and scores["prompt"]
        difference = (f"{100 * statistics.mean(p - h for p, h in zip(*scores.values())):+.1f}"
                      if both else "–")
        rows.append(f"| {k} | {seeds} | {_mean_std(scores['prompt'])} | "
                    f"{_mean_std(scores['head'])} | {difference} | "
                    f"{'–' if zero is None else f'{100 * zero:.1f}'} |")
    return "\n".join(rows)


def main(argv):
    for name in FLAGS.configs:
        run_config(load_config(name))


if __name__ == "__main__":
    app.run(main)
