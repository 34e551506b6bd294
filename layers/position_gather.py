"""Gathers vectors at given positions: first subwords → words, masked tokens, span ends."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


def gather_positions(sequence, positions):
    """`sequence[b, positions[b, p]]` for every batch row b and slot p.

    The one gather that every layer of ours uses: first subwords into word
    vectors (`PositionGather`), masked tokens (`MaskedLMHead`), span
    boundaries (`SpanBoundaryHead`, `SpanRepresentation`). Positions are
    clipped into [0, N - 1], so padded slots may hold anything (0 is usual);
    what they gather is masked later.

    It is a single `take` on the [B · N, ...] flattened table: unlike
    `ops.take_along_axis` it neither broadcasts the indices to the output's
    full shape nor transposes `sequence`, which matters for big tables such
    as the [B, T · L, H] span windows. N may be dynamic.

    Args:
        sequence: [B, N, ...] values.
        positions: [B, P] integer positions into the second axis.

    Returns:
        [B, P, ...] with the dtype of `sequence`.

    Examples:
    >>> import numpy as np
    >>> sequence = np.arange(12, dtype="float32").reshape(2, 3, 2)
    >>> gather_positions(sequence, np.array([[2, 0], [1, 7]])).numpy().tolist()
    [[[4.0, 5.0], [0.0, 1.0]], [[8.0, 9.0], [10.0, 11.0]]]
    """
    sequence = ops.convert_to_tensor(sequence)
    shape = ops.shape(sequence)
    length = shape[1]
    positions = ops.clip(ops.cast(positions, "int32"), 0, length - 1)
    # Row b of the batch starts at b * N in the flattened table.
    rows = ops.arange(shape[0], dtype="int32")[:, None] * length
    flat = ops.reshape(sequence, (-1,) + tuple(shape[2:]))
    return ops.take(flat, positions + rows, axis=0)


@register
class PositionGather(keras.layers.Layer):
    """`gather_positions` as a layer: picks `sequence[b, positions[b, w]]`.

    Used to turn subword vectors into word vectors by taking each word's
    first subword, left-aligned, so a CRF or span layer sees words without
    holes. Positions at padded words may be anything (0 is usual); what they
    gather is masked later.

    Examples:
    >>> import numpy as np
    >>> sequence = np.arange(12, dtype="float32").reshape(1, 4, 3)
    >>> PositionGather()(sequence, np.array([[1, 3]])).numpy().tolist()
    [[[3.0, 4.0, 5.0], [9.0, 10.0, 11.0]]]
    """

    def call(self, sequence, positions):
        return gather_positions(sequence, positions)

    def compute_output_shape(self, sequence_shape, positions_shape):
        return tuple(positions_shape) + tuple(sequence_shape[2:])
