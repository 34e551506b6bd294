"""Datasets know their length: `shuffle_batch_and_count` declares the number of batches.

The claim behind the training count: length grouping (`bucket_by_sequence_length`)
fills each length group's batches on its own and flushes each group's partial
batch at the end, so the number of batches is the sum over groups of
ceil(n_group / batch_size), whatever order the shuffle gives.
"""

import math
import random

import pytest
import tensorflow as tf

from nlpzoo.tasks.text.batching import GROUPING_STEP, shuffle_batch_and_count
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.text.text_pipeline import make_dataset
from nlpzoo.tasks.text.text_readers import ClassificationExample


def _examples(lengths):
    rows = tf.ragged.constant([[1] * n for n in lengths], dtype=tf.int32)
    return tf.data.Dataset.from_tensor_slices(rows).map(
        lambda row: ({"token_ids": row, "padding_mask": tf.ones_like(row)}, tf.constant(0)))


def _by_hand(lengths, batch_size, max_length):
    """Groups as TensorFlow's bucketing forms them: boundaries 9, 17, ... (GROUPING_STEP)."""
    boundaries = list(range(GROUPING_STEP + 1, max_length + 1, GROUPING_STEP))
    groups = {}
    for length in lengths:
        group = sum(1 for boundary in boundaries if boundary <= length)
        groups[group] = groups.get(group, 0) + 1
    return sum(math.ceil(size / batch_size) for size in groups.values())


@pytest.mark.parametrize("batch_size", [1, 3, 8])
@pytest.mark.parametrize("draw", [0, 1])
def test_training_batch_count_is_declared_and_independent_of_order(batch_size, draw):
    rng = random.Random(draw)
    lengths = [rng.randint(1, 64) for _ in range(rng.randint(20, 70))]
    expected = _by_hand(lengths, batch_size, 64)
    counts = set()
    for seed in (None, 5, (7, 0), (7, 1)):
        dataset = shuffle_batch_and_count(_examples(lengths), len(lengths), batch_size, 64,
                                          {}, training=True, seed=seed)
        assert int(dataset.cardinality()) == expected
        # Every pass is a new order (reshuffled, or another pass seed): the same count,
        # and every example is in exactly one batch.
        for _ in range(2):
            batches = list(dataset)
            counts.add(len(batches))
            assert sum(int(f["token_ids"].shape[0]) for f, _ in batches) == len(lengths)
    assert counts == {expected}
    # Not the trivial count: grouping makes more batches than ceil(n / batch) here.
    if batch_size == 8:
        assert expected > math.ceil(len(lengths) / batch_size)


def test_evaluation_count_is_ceil_of_examples_over_batch():
    dataset = shuffle_batch_and_count(_examples([3, 30, 5, 12, 7]), 5, 2, 32, {},
                                      training=False)
    assert int(dataset.cardinality()) == 3 == len(list(dataset))


def test_a_short_pipeline_is_an_error_naming_the_counts():
    with pytest.raises(RuntimeError, match="made 2 examples of 3"):
        shuffle_batch_and_count(_examples([3, 4]), 3, 2, 32, {}, training=True)


def test_text_pipeline_declares_its_training_length():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"]
    preprocessor = TextPreprocessor(vocabulary, max_seq_length=64)
    examples = [ClassificationExample(" ".join(["a"] * n), "x") for n in
                (1, 2, 3, 9, 10, 20, 40, 41, 2, 1, 5)]
    dataset = make_dataset(examples, preprocessor, ["x"], batch_size=2, training=True, seed=1)
    # [CLS] + n + [SEP]: lengths 3 4 5 11 12 22 42 43 4 3 7 → groups {3,4,5,4,3,7}, {11,12},
    # {22}, {42, 43}: 3 + 1 + 1 + 1 batches.
    assert int(dataset.cardinality()) == 6 == len(list(dataset))
