"""A short quality guard for speed changes: TREC-6 on three seeds and a CoNLL-2003 slice.

    .venv/bin/python benchmarks/quality_check.py --out=runs/quality
    .venv/bin/python benchmarks/quality_check.py --out=runs/quality_after \
        --compare=runs/quality          # the same checks on changed code, side by side

A change made for speed must not change what the models learn (issue 34: a faster layout of
the packed encoder drew other dropout masks, and TREC-6 moved by 1-2 points). Run this on
the code before the change and after it, each into its own `--out`, and put both tables in
the commit message (docs/performance.md). Two checks, each a few minutes on 2 CPU cores:

- TREC-6: `configs/trec6.flags` (the classifier of docs/results.md's results table) from the
  MiniLM checkpoint, on `--trec_seeds` (three by default), exactly as
  `benchmarks/results.py --rows=trec6` runs it: the last 500 training questions validate,
  `TREC_10.label` is tested once. Test accuracy per seed, their mean and spread.
- CoNLL-2003: `configs/conll03_crf.flags` (the CRF tagger, casing features on) trained on
  the first `--conll_sentences` sentences of `eng.train` for `--conll_epochs` epochs,
  validated on the first `--conll_dev_sentences` of `eng.testa`, tested once on all of
  `eng.testb`: entity F1 (conlleval's).

Every run goes through `benchmarks/experiment.train_and_test` (`tools/train.py`, then
`tools/evaluate.py`), so a check restarted into the same `--out` skips the runs it has. The
code version (commit, and a hash of uncommitted changes) is kept in `--out`; a different
version refuses to reuse it. The table names the processor (`zoo.hardware.cpu_model`) and
the precision the runs resolved; the last line of output is the same figures as one JSON
line, also written to `<out>/quality.json`.
"""

import hashlib
import json
import os
import statistics
import subprocess

from absl import app, flags

from experiment import ROOT, hold_out_last, minilm_checkpoint, train_and_test

flags.DEFINE_string("out", None, "Output directory (one per version of the code).")
flags.DEFINE_string("data", os.path.join(ROOT, "..", "shared", "data"),
                    "The shared data folder (conll2003/, trec/).")
flags.DEFINE_list("trec_seeds", ["42", "43", "44"], "TREC-6 seeds; each is one run.")
flags.DEFINE_list("conll_seeds", ["42"], "CoNLL-2003 seeds; each is one run.")
flags.DEFINE_integer("conll_sentences", 2000, "Train on the first this many sentences of "
                     "eng.train.", lower_bound=1)
flags.DEFINE_integer("conll_dev_sentences", 1000, "Validate on the first this many sentences "
                     "of eng.testa.", lower_bound=1)
flags.DEFINE_integer("conll_epochs", 3, "CoNLL-2003 epochs (overrides the config's).",
                     lower_bound=1)
flags.DEFINE_list("checks", ["trec6", "conll03"], "Only these checks.")
flags.DEFINE_string("compare", None, "A previous --out of this script (the code before the "
                    "change): its figures are printed beside these.")
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS

VERSION_FILE = "code_version.txt"
RESULT_FILE = "quality.json"


def code_version():
    """The checkout's commit, with `+<hash>` of `git diff HEAD` when it has changes."""
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                              text=True).stdout

    try:
        version = git("rev-parse", "--short=12", "HEAD").strip()
        changes = git("diff", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    if changes:
        version += "+" + hashlib.sha1(changes.encode()).hexdigest()[:8]
    return version


def _claim(out, version):
    """Marks `out` as holding runs of `version`; refuses runs of another version."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, VERSION_FILE)
    if os.path.exists(path):
        with open(path) as f:
            held = f.read().strip()
        if held != version:
            raise app.UsageError(f"{out} holds runs of code version {held}, this is {version}: "
                                 "give each version its own --out")
    with open(path, "w") as f:
        f.write(version + "\n")


def first_sentences(source, target, count):
    """Writes the first `count` blank-line-separated sentences of a CoNLL file to `target`."""
    with open(source, encoding="utf-8") as f:
        blocks = [block for block in f.read().split("\n\n") if block.strip()]
    with open(target, "w", encoding="utf-8") as f:
        f.write("\n\n".join(blocks[:count]) + "\n\n")
    return target


def _run_seeds(name, flag_file, data, seeds, metric, extra_flags=()):
    train, dev, test = data
    checkpoint = minilm_checkpoint()
    runs = {}
    for seed in seeds:
        run = os.path.join(FLAGS.out, f"{name}_seed{seed}")
        result = train_and_test(
            run, [f"--flagfile={os.path.join(ROOT, 'configs', flag_file)}",
                  f"--init_checkpoint={checkpoint}", f"--train_data={train}",
                  f"--eval_data={dev}", f"--seed={seed}", *extra_flags], test)
        with open(os.path.join(run, "config.json")) as f:
            policy = json.load(f).get("mixed_precision")
        runs[seed] = {"score": result["test"][metric], "seconds": result["seconds"],
                      "policy": policy}
        print(f"  {name} seed {seed}: {metric} {runs[seed]['score']:.4f} "
              f"({result['seconds'] / 60:.1f} min)", flush=True)
    scores = [each["score"] for each in runs.values()]
    return {"metric": metric, "runs": runs, "mean": statistics.mean(scores),
            "sd": statistics.stdev(scores) if len(scores) > 1 else None,
            "minutes": statistics.mean(each["seconds"] for each in runs.values()) / 60}


def trec6():
    folder = os.path.join(FLAGS.data, "trec")
    train, dev = hold_out_last(os.path.join(folder, "train_5500.label"), FLAGS.out, "trec",
                               500, "latin-1")
    return _run_seeds("trec6", "trec6.flags", (train, dev, os.path.join(folder, "TREC_10.label")),
                      FLAGS.trec_seeds, "accuracy")


def conll03():
    folder = os.path.join(FLAGS.data, "conll2003")
    train = first_sentences(os.path.join(folder, "eng.train"),
                            os.path.join(FLAGS.out, f"conll_train{FLAGS.conll_sentences}.txt"),
                            FLAGS.conll_sentences)
    dev = first_sentences(os.path.join(folder, "eng.testa"),
                          os.path.join(FLAGS.out, f"conll_dev{FLAGS.conll_dev_sentences}.txt"),
                          FLAGS.conll_dev_sentences)
    name = (f"conll03_crf_{FLAGS.conll_sentences}s_{FLAGS.conll_dev_sentences}d_"
            f"{FLAGS.conll_epochs}e")  # a run of other settings is another run
    return _run_seeds(name, "conll03_crf.flags",
                      (train, dev, os.path.join(folder, "eng.testb")), FLAGS.conll_seeds,
                      "entity_f1", [f"--epochs={FLAGS.conll_epochs}"])


CHECKS = {  # name: (function, what it is, in the table)
    "trec6": (trec6, "TREC-6, configs/trec6.flags: test accuracy"),
    "conll03": (conll03, "CoNLL-2003 slice, CRF tagger: eng.testb entity F1"),
}


def _figure(check):
    if check is None:
        return "—"
    spread = f" ± {check['sd']:.4f}" if check["sd"] is not None else ""
    return f"{check['mean']:.4f}{spread}"


def print_table(record, before=None):
    print(f"\nQuality check: {record['cpu']}, {record['policy']}, code {record['code']}")
    if before:
        print(f"before: {before['cpu']}, {before['policy']}, code {before['code']}")
        print("| check | per seed | before | after | after − before | minutes (after) |")
        print("|---|---|---|---|---|---|")
    else:
        print("| check | per seed | mean ± sd | minutes per run |")
        print("|---|---|---|---|")
    for name, check in record["checks"].items():
        label = CHECKS[name][1]
        if name == "conll03":
            label += (f" ({record['conll']['sentences']} sentences, "
                      f"{record['conll']['epochs']} epochs)")
        seeds = ", ".join(f"{seed}: {run['score']:.4f}" for seed, run in check["runs"].items())
        if before:
            old = before["checks"].get(name)
            delta = f"{check['mean'] - old['mean']:+.4f}" if old else "—"
            print(f"| {label} | {seeds} | {_figure(old)} | {_figure(check)} | {delta} | "
                  f"{check['minutes']:.1f} |")
        else:
            print(f"| {label} | {seeds} | {_figure(check)} | {check['minutes']:.1f} |")


def main(argv):
    del argv
    unknown = set(FLAGS.checks) - set(CHECKS)
    if unknown:
        raise app.UsageError(f"unknown --checks {sorted(unknown)}: choose from {list(CHECKS)}")
    before = None
    if FLAGS.compare:
        with open(os.path.join(FLAGS.compare, RESULT_FILE)) as f:
            before = json.load(f)
    version = code_version()
    _claim(FLAGS.out, version)
    from nlpzoo.zoo.hardware import cpu_model  # TensorFlow comes with zoo: imported late

    checks = {}
    for name in CHECKS:
        if name in FLAGS.checks:
            print(f"{name}:", flush=True)
            checks[name] = CHECKS[name][0]()
    policies = sorted({run["policy"] for check in checks.values()
                       for run in check["runs"].values()} - {None})
    record = {"benchmark": "quality_check", "cpu": cpu_model(), "code": version,
              "policy": ",".join(policies) or "unknown", "checks": checks,
              "conll": {"sentences": FLAGS.conll_sentences,
                        "dev_sentences": FLAGS.conll_dev_sentences,
                        "epochs": FLAGS.conll_epochs}}
    print_table(record, before)
    with open(os.path.join(FLAGS.out, RESULT_FILE), "w") as f:
        json.dump(record, f)
    print(json.dumps(record))


if __name__ == "__main__":
    app.run(main)
