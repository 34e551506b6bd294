"""Datasets know their length: `shuffle_batch_and_count` declares the number of batches.

The claim behind the training count: length grouping (`group_by_length_batches`)
fills each length group's whole batches on its own and pools the groups' remainders
into shared batches, so the number of batches is the sum over groups of
floor(n_group / batch_size) plus ceil(sum of the remainders / batch_size), whatever
order the shuffle gives.
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
    """Groups of GROUPING_STEP tokens (boundaries 9, 17, ...): their whole batches, then the
    batches their remainders fill together."""
    boundaries = list(range(GROUPING_STEP + 1, max_length + 1, GROUPING_STEP))
    groups = {}
    for length in lengths:
        group = sum(1 for boundary in boundaries if boundary <= length)
        groups[group] = groups.get(group, 0) + 1
    whole = sum(size // batch_size for size in groups.values())
    return whole + math.ceil(sum(size % batch_size for size in groups.values()) / batch_size)


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
    # Pooling the groups' remainders leaves no more batches than ungrouped batching.
    assert expected == math.ceil(len(lengths) / batch_size)


def _group(length):
    return (length - 1) // GROUPING_STEP  # boundaries 9, 17, ...: 1-8, 9-16, ...


@pytest.mark.parametrize("seed", [(3, 0), (3, 1), 11])
def test_training_batches_are_full_and_of_one_length_group_but_the_pooled_ones(seed):
    rng = random.Random(str(seed))
    lengths = [rng.randint(1, 64) for _ in range(97)]
    batch_size = 4
    dataset = shuffle_batch_and_count(_examples(lengths), len(lengths), batch_size, 64, {},
                                      training=True, seed=seed)
    batches = [tf.reduce_sum(f["padding_mask"], axis=1).numpy().tolist() for f, _ in dataset]
    groups = {}
    for length in lengths:
        groups[_group(length)] = groups.get(_group(length), 0) + 1
    remainders = sum(size % batch_size for size in groups.values())
    assert sorted(x for batch in batches for x in batch) == sorted(lengths)
    assert sum(len(batch) < batch_size for batch in batches) <= 1
    mixed = [batch for batch in batches if len({_group(x) for x in batch}) > 1]
    # Only the pool mixes groups, and it holds exactly the remainders.
    assert len(mixed) <= math.ceil(remainders / batch_size)
    one_group = [batch for batch in batches if len({_group(x) for x in batch}) == 1]
    for group, size in groups.items():
        in_own = sum(len(batch) for batch in one_group if _group(batch[0]) == group)
        assert in_own >= size - size % batch_size


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
