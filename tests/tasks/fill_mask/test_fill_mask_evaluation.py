"""Fill-mask evaluation: the fixed [MASK]-only masking, and scores against brute force."""

import math
import os

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.fill_mask.evaluation import MaskedLMScores
from nlpzoo.zoo import load_pretrained
from tests.helpers.paths import ROOT

CHECKPOINT = os.path.join(ROOT, "tests", "fixtures", "tiny_bert_mlm")
TEXTS = ["The capital of France is Paris .", "The cat sat on the mat .",
         "She was unable to read the book at night .", "he walks to the river and plays",
         "a b c", "It was a big red house in Europe, and my dog sat in it !"]


@pytest.fixture(scope="module")
def model():
    return load_pretrained(CHECKPOINT, "fill_mask")


def _batches(model, texts, batch_size, **options):
    task = model.task.with_options(**options) if options else model.task
    examples = task.raw_examples(texts)
    return examples, task, task.make_dataset(examples, model.preprocessor, [],
                                             batch_size=batch_size)


def _rows(dataset):
    rows = []
    for features, targets in dataset:
        for row in range(len(targets)):
            rows.append(({name: value[row].numpy() for name, value in features.items()},
                         targets[row].numpy()))
    return rows


def test_masking_is_fixed_15_percent_of_word_pieces_and_mask_only(model):
    tokenizer = model.preprocessor.tokenizer()
    specials = {tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
                tokenizer.mask_id}
    plain = model.preprocessor.encode(tf.constant(TEXTS))["token_ids"].to_list()
    _, _, dataset = _batches(model, TEXTS, batch_size=4)
    rows = _rows(dataset)
    assert len(rows) == len(TEXTS)
    for (features, targets), original in zip(rows, plain):
        real = targets >= 0
        positions = features["mask_positions"][real]
        eligible = sum(token not in specials for token in original)
        assert real.sum() == max(1, math.floor(0.15 * eligible + 0.5))
        assert all(features["token_ids"][p] == tokenizer.mask_id for p in positions)
        assert [original[p] for p in positions] == targets[real].tolist()
        assert not specials & set(targets[real].tolist())
        unmasked = np.array(original)
        unmasked[positions] = features["token_ids"][positions]
        np.testing.assert_array_equal(features["token_ids"][:len(original)], unmasked)
    # The same masks whatever the batch size; another seed gives others.
    again = _rows(_batches(model, TEXTS, batch_size=1)[2])
    assert all((a[1] == b[1]).all() and (a[0]["mask_positions"] == b[0]["mask_positions"]).all()
               for a, b in zip(rows, again))
    other = _rows(_batches(model, TEXTS, batch_size=4, mask_seed=1)[2])
    assert any((a[0]["mask_positions"] != b[0]["mask_positions"]).any()
               for a, b in zip(rows, other))


def test_scores_equal_brute_force_from_the_model_logits(model):
    examples, task, dataset = _batches(model, TEXTS, batch_size=4)
    metrics = task.evaluate(model, dataset, examples, [])
    cross_entropies, top1, top5 = [], 0, 0
    for features, targets in _rows(dataset):
        # Every position's logits, one text at a time (no padding), then read at the masks.
        length = int(features["padding_mask"].sum())
        inputs = {name: features[name][None, :length]
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        inputs["mask_positions"] = np.arange(length, dtype=np.int32)[None]
        logits = np.asarray(model.predict_on_batch(inputs), np.float64)[0]
        for position, target in zip(features["mask_positions"], targets):
            if target < 0:
                continue
            row = logits[position]
            log_probabilities = row - np.log(np.sum(np.exp(row - row.max()))) - row.max()
            cross_entropies.append(-log_probabilities[target])
            better = sorted(range(len(row)), key=lambda i: -row[i]).index(target)
            top1 += better < 1
            top5 += better < 5
    count = len(cross_entropies)
    assert metrics["masked_tokens"] == count and metrics["examples"] == len(TEXTS)
    assert metrics["top1_accuracy"] == pytest.approx(top1 / count)
    assert metrics["top5_accuracy"] == pytest.approx(top5 / count)
    assert metrics["cross_entropy"] == pytest.approx(np.mean(cross_entropies), rel=1e-5)
    assert metrics["perplexity"] == pytest.approx(math.exp(np.mean(cross_entropies)), rel=1e-5)


def test_scores_count_ties_for_the_target_and_skip_padding():
    scores = MaskedLMScores()
    logits = np.array([[[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]])
    scores.add(logits, np.array([[1, -1]]))
    result = scores.result()
    assert result["masked_tokens"] == 1 and result["top1_accuracy"] == 1.0
    assert result["perplexity"] == pytest.approx(1 + 1 + math.exp(-1.0))
    with pytest.raises(ValueError, match="no token was masked"):
        MaskedLMScores().result()
