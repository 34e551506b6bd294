"""Gathers vectors at given positions: first subwords → a compact word sequence."""

import keras
from keras import ops

from layers.serialization import register


@register
class PositionGather(keras.layers.Layer):
    """Picks `sequence[b, positions[b, w]]` for every batch row and position.

    Used to turn subword vectors into word vectors by taking each word's
    first subword, left-aligned, so a CRF or span layer sees words without
    holes. Positions at padded words may be anything in range (0 is usual);
    what they gather is masked later.

    Examples:
    >>> import numpy as np
    >>> sequence = np.arange(12, dtype="float32").reshape(1, 4, 3)
    >>> PositionGather()(sequence, np.array([[1, 3]])).numpy().tolist()
    [[[3.0, 4.0, 5.0], [9.0, 10.0, 11.0]]]
    """

    def call(self, sequence, positions):
        positions = ops.cast(positions, "int32")
        positions = ops.clip(positions, 0, ops.shape(sequence)[1] - 1)
        return ops.take_along_axis(sequence, positions[:, :, None], axis=1)

    def compute_output_shape(self, sequence_shape, positions_shape):
        return tuple(positions_shape) + (sequence_shape[-1],)
