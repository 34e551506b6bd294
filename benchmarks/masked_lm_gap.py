"""Pretraining's held-out MLM accuracy against the fill-mask evaluation, step by step.

    .venv/bin/python benchmarks/masked_lm_gap.py --model_dir=/work/runs/minilm_mlm \
        --corpus=../shared/data/wikitext2/valid.txt

For a `tools/pretrain.py --objective=mlm --corpus_format=wikitext` run (its packing
seed and length are read from its config.json), prints the top-1 accuracy of
its fill-mask model (`zoo.load_pretrained(<model_dir>/encoder, "fill_mask")`):

1. on pretraining's own held-out batches, whole-word and piece by piece: all
   targets (as `mlm_accuracy` counts them: 80% [MASK], 10% random, 10% kept),
   the [MASK] targets only, and the kept ones;
2. on the corpus file's first --lines lines, masked as `tools/evaluate.py
   --task=fill_mask` masks them, read raw (`--data_format=text`) and cleaned
   (`--data_format=wikitext`).

Row 1's "all" equals pretraining's validation figure when the two models are the
same; the rest shows what each difference between the two measurements costs
(docs/results.md, "Prompts and fill-mask").
"""

import json
import os
import sys

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import numpy as np  # noqa: E402

from nlpzoo.tasks.fill_mask.evaluation import (  # noqa: E402
    MaskedLMScores, masked_evaluation_dataset, masked_lm_scores)
from nlpzoo.tasks.pretraining.corpus_datasets import masked_datasets, pack_corpus  # noqa: E402
from nlpzoo.tasks.text.corpus import read_corpus  # noqa: E402
from nlpzoo.tasks.text.masking import default_max_predictions  # noqa: E402
from nlpzoo.tasks.text.sentences import read_sentences  # noqa: E402
from nlpzoo.zoo import load_pretrained, load_tokenizer  # noqa: E402

flags.DEFINE_string("model_dir", None, "A tools/pretrain.py --objective=mlm model directory.")
flags.DEFINE_string("corpus", None, "The corpus it was pretrained on (WikiText).")
flags.DEFINE_integer("lines", 600, "Lines of the corpus for the fill-mask rows.", lower_bound=1)
flags.mark_flags_as_required(["model_dir", "corpus"])
FLAGS = flags.FLAGS


def held_out_rows(model, tokenizer, config):
    """Row 1: {(whole_word, which targets): scores} on pretraining's held-out batches."""
    train, held_out = pack_corpus(
        read_corpus(FLAGS.corpus, "wikitext"), tokenizer, "mlm", config["max_seq_length"],
        seed=config["seed"], eval_fraction=config.get("eval_fraction", 0.02),
        short_sequence_probability=config.get("short_sequence_probability", 0.1))
    rows = {}
    for whole_word in (True, False):
        _, dataset = masked_datasets(
            train, held_out, tokenizer, objective="mlm", batch_size=32,
            max_predictions=default_max_predictions(config["max_seq_length"]),
            seed=config["seed"], whole_word=whole_word)
        scores = {which: MaskedLMScores() for which in ("all", "[MASK] only", "kept")}
        for features, labels in dataset:
            logits = model.predict_on_batch(features)
            targets = np.asarray(labels["mlm_labels"])
            inputs = np.take_along_axis(np.asarray(features["token_ids"]),
                                        np.asarray(features["mask_positions"]), axis=1)
            scores["all"].add(logits, targets)
            scores["[MASK] only"].add(logits, np.where(inputs == tokenizer.mask_id, targets, -1))
            scores["kept"].add(logits, np.where(inputs == targets, targets, -1))
        for which, score in scores.items():
            rows[(whole_word, which)] = score.result()
    return rows


def main(argv):
    with open(os.path.join(FLAGS.model_dir, "config.json")) as f:
        config = json.load(f)
    encoder = os.path.join(FLAGS.model_dir, "encoder")
    model = load_pretrained(encoder, "fill_mask")
    tokenizer = load_tokenizer(encoder)
    for (whole_word, which), result in held_out_rows(model, tokenizer, config).items():
        print(f"held-out batches, {'whole words' if whole_word else 'pieces'}, {which}: "
              f"top-1 {result['top1_accuracy']:.4f} over {result['masked_tokens']} targets")
    for data_format in ("text", "wikitext"):
        texts = [s.text for s in read_sentences(FLAGS.corpus, data_format)][:FLAGS.lines]
        result = masked_lm_scores(model, masked_evaluation_dataset(texts, model.preprocessor))
        print(f"fill-mask evaluation, first {len(texts)} lines, --data_format={data_format}: "
              f"top-1 {result['top1_accuracy']:.4f} over {result['masked_tokens']} targets")


if __name__ == "__main__":
    app.run(main)
