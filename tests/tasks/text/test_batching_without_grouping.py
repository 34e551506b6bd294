"""`shuffle_batch_and_count(group_by_length=False)`: training batches in shuffled stream order
(what in-batch negatives need), against the length groups of the default."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.batching import shuffle_batch_and_count


def _order(group_by_length, batch_size):
    lengths = [3, 30, 4, 25, 5, 28, 6, 27, 7, 26, 3, 31, 4, 29, 5, 24]
    rows = tf.ragged.constant([[index + 1] * length for index, length in enumerate(lengths)])
    examples = tf.data.Dataset.from_tensor_slices(rows).map(
        lambda row: ({"token_ids": row}, 0))
    batches = shuffle_batch_and_count(examples, len(lengths), batch_size, 32, {}, training=True,
                                      seed=(5, 0), group_by_length=group_by_length)
    return [int(row[0]) for features, _ in batches for row in features["token_ids"].numpy()]


def test_without_grouping_batches_follow_the_shuffled_stream():
    shuffled = _order(False, batch_size=1)
    assert sorted(shuffled) == list(range(1, 17)) and shuffled != list(range(1, 17))
    assert _order(False, batch_size=4) == shuffled
    # The default groups short and long examples apart: another order.
    grouped = _order(None, batch_size=4)
    assert grouped != shuffled and sorted(grouped) == sorted(shuffled)
    assert np.array_equal(_order(None, batch_size=1), shuffled)
