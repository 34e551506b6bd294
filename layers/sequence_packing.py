"""Packing right-padded examples into shared rows, and unpacking the outputs.

A batch of short examples padded to a common length spends most of its
compute on padding. Packed, several examples share one row of `row_length`
tokens; a block-diagonal attention mask keeps every token inside its own
example and positions restart at 0 for each example, so each example is
encoded exactly as it would be alone (up to float summation order).
"""

from keras import ops


def packing_plan(padding_mask, row_length):
    """Where each example of a right-padded batch goes in packed rows.

    Examples are placed in order, next-fit: an example starts a new row when
    it does not fit in what is left of the current one. Rows are
    `max(row_length, T)` tokens long, so every example fits in one row.

    Args:
        padding_mask: [N, T] int or bool, nonzero at the real tokens, which
            come first in every row (right padding).
        row_length: length of the packed rows (an int).

    Returns:
        (rows [N] int32, offsets [N] int32, lengths [N] int32, num_rows, L):
        example n's tokens go to row `rows[n]` from column `offsets[n]`.

    Examples:
    >>> import numpy as np
    >>> mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    >>> rows, offsets, lengths, num_rows, length = packing_plan(mask, 6)
    >>> ops.convert_to_numpy(rows).tolist(), ops.convert_to_numpy(offsets).tolist()
    ([0, 0, 1, 1], [0, 3, 0, 4])
    >>> int(num_rows), int(length)
    (2, 6)
    """
    real = ops.cast(ops.not_equal(padding_mask, 0), "int32")
    lengths = ops.sum(real, axis=1)
    length = ops.maximum(ops.convert_to_tensor(row_length, "int32"), ops.shape(real)[1])

    def place(state, example_length):
        # state = [row, tokens used in it]; the output is [row, offset] of this example.
        row, used = state[0], state[1]
        starts_row = ops.logical_and(used > 0, used + example_length > length)
        row = ops.where(starts_row, row + 1, row)
        offset = ops.where(starts_row, 0, used)
        new_state = ops.stack([row, offset + example_length])
        return new_state, ops.stack([row, offset])

    _, placed = ops.scan(place, ops.zeros((2,), "int32"), lengths)
    rows, offsets = placed[:, 0], placed[:, 1]
    num_rows = ops.max(rows) + 1
    return rows, offsets, lengths, num_rows, length


class PackedBatch:
    """A right-padded batch packed into rows, and the way back.

    `token_ids`, `segment_ids`, `position_ids` [R, L]: the packed inputs;
    `example_ids` [R, L]: 1 + the example's index in the batch, 0 at padding;
    `attention_mask` [R, L, L]: 1 where query and key are real tokens of the
    same example. `unpack(x)` maps a packed [R, L, ...] output back to the
    batch's [N, T, ...] layout, zeros at padding.

    Examples:
    >>> import numpy as np
    >>> ids = np.array([[2, 7, 3, 0], [2, 3, 0, 0]])
    >>> packed = PackedBatch(ids, np.zeros_like(ids), np.sign(ids), row_length=8)
    >>> ops.convert_to_numpy(packed.token_ids).tolist()
    [[2, 7, 3, 2, 3, 0, 0, 0]]
    >>> ops.convert_to_numpy(packed.position_ids).tolist()
    [[0, 1, 2, 0, 1, 0, 0, 0]]
    >>> ops.convert_to_numpy(packed.unpack(packed.token_ids)).tolist()
    [[2, 7, 3, 0], [2, 3, 0, 0]]
    """

    def __init__(self, token_ids, segment_ids, padding_mask, row_length):
        token_ids = ops.convert_to_tensor(token_ids, "int32")
        if segment_ids is None:
            segment_ids = ops.zeros_like(token_ids)
        segment_ids = ops.convert_to_tensor(segment_ids, "int32")
        rows, offsets, lengths, num_rows, length = packing_plan(padding_mask, row_length)
        batch, time = ops.shape(token_ids)[0], ops.shape(token_ids)[1]
        columns = ops.arange(time, dtype="int32")[None, :]
        self._is_real = columns < lengths[:, None]  # [N, T]
        size = num_rows * length
        # Padding goes to one extra slot past the end, which is cut off.
        destination = ops.where(
            self._is_real, (rows * length + offsets)[:, None] + columns, size
        )
        self._destination = destination

        def scatter(values):
            flat = ops.scatter(
                ops.reshape(destination, (-1, 1)),
                ops.reshape(ops.cast(values, "int32"), (-1,)),
                ops.expand_dims(size + 1, 0),
            )
            return ops.reshape(flat[:size], (num_rows, length))

        example_numbers = ops.arange(batch, dtype="int32")[:, None] + 1
        self.token_ids = scatter(token_ids)
        self.segment_ids = scatter(segment_ids)
        self.position_ids = scatter(ops.broadcast_to(columns, ops.shape(token_ids)))
        self.example_ids = scatter(ops.broadcast_to(example_numbers, ops.shape(token_ids)))
        same_example = ops.equal(self.example_ids[:, :, None], self.example_ids[:, None, :])
        self.attention_mask = ops.logical_and(same_example, self.example_ids[:, None, :] > 0)

    def unpack(self, packed):
        """[R, L, ...] → [N, T, ...] in the batch's layout, zeros at padding."""
        flat = ops.reshape(packed, (-1,) + tuple(packed.shape[2:]))
        index = ops.where(self._is_real, self._destination, 0)
        gathered = ops.take(flat, index, axis=0)
        keep = ops.cast(self._is_real, gathered.dtype)
        for _ in range(len(gathered.shape) - 2):
            keep = ops.expand_dims(keep, -1)
        return gathered * keep
