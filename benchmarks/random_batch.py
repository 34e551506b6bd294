"""One batch of random classification inputs, for the step benchmarks and profiles.

    >>> x, y = random_classification_batch(batch=2, length=4)
    >>> sorted(x), tuple(x["token_ids"].shape), y.dtype.name
    (['padding_mask', 'segment_ids', 'token_ids'], (2, 4), 'int32')
"""

import numpy as np


def random_classification_batch(batch, length, vocabulary_size=30000, seed=0):
    """(features, labels) as `tf.Tensor`s: random token ids in [1, vocabulary_size), no
    padding, one segment, and binary labels; the same for the same arguments."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    shape = (batch, length)
    features = {"token_ids": tf.constant(rng.integers(1, vocabulary_size, shape), tf.int32),
                "segment_ids": tf.zeros(shape, tf.int32),
                "padding_mask": tf.ones(shape, tf.int32)}
    return features, tf.constant(rng.integers(0, 2, batch), tf.int32)
