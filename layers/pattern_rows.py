"""One sequence per pattern along the last axis → one batch row per (example, pattern)."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


def pattern_rows(values):
    """[B, T, P] → [B·P, T]: example b's sequence for pattern p becomes row b·P + p.

    >>> import numpy as np
    >>> pattern_rows(np.array([[[1, 5], [2, 6]]])).numpy().tolist()
    [[1, 2], [5, 6]]
    """
    values = ops.convert_to_tensor(values)
    return ops.reshape(ops.transpose(values, (0, 2, 1)), (-1, ops.shape(values)[1]))


@register
class PatternRows(keras.layers.Layer):
    """[B, T, P] → [B·P, T]: example b's sequence for pattern p becomes row b·P + p.

    Prompt-based classification feeds P filled-in patterns of each example
    side by side on the last axis (so that the input pipeline pads and
    buckets them together along T); the encoder reads one sequence per row.

    Examples:
    >>> import numpy as np
    >>> ids = np.array([[[1, 5], [2, 6], [3, 0]]])  # one example, T = 3, P = 2
    >>> PatternRows()(ids).numpy().tolist()
    [[1, 2, 3], [5, 6, 0]]
    """

    def call(self, values):
        return pattern_rows(values)

    def compute_output_shape(self, shape):
        rows = None if shape[0] is None or shape[2] is None else shape[0] * shape[2]
        return (rows, shape[1])
