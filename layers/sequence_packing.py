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

    First-fit decreasing: the examples, longest first (ties in batch order),
    each go to the first row with room left for them, so short examples fill
    the gaps that long ones leave. Rows are `max(row_length, longest example)`
    tokens long, so every example fits in one row and the batch's padding past
    its longest example is never computed on; `row_length=1` gives rows as
    long as the longest example (best for batches grouped by length).

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
    ([1, 0, 0, 1], [0, 4, 0, 3])
    >>> int(num_rows), int(length)
    (2, 6)
    """
    real = ops.cast(ops.not_equal(padding_mask, 0), "int32")
    lengths = ops.sum(real, axis=1)
    # `initial`: an empty batch (a worker's share of the last batch, under multi-worker
    # training) has no longest example and no row, not the int32 minimum of an empty max.
    length = ops.maximum(ops.convert_to_tensor(row_length, "int32"),
                         ops.max(lengths, initial=0))
    batch = ops.shape(lengths)[0]
    indices = ops.arange(batch, dtype="int32")
    # Longest first; the index breaks ties, so that the plan does not depend on the sort.
    order = ops.cast(ops.argsort(indices - lengths * batch), "int32")

    sorted_lengths = ops.take(lengths, order)

    def place(i, state):
        # used[r]: tokens already in row r (there are at most N rows). An empty row
        # always has room, so the first row with room exists.
        used, rows, offsets = state
        example, example_length = ops.take(order, i), ops.take(sorted_lengths, i)
        row = ops.cast(ops.argmax(ops.cast(used + example_length <= length, "int32")), "int32")
        is_example = ops.equal(indices, example)
        rows = ops.where(is_example, row, rows)
        offsets = ops.where(is_example, ops.take(used, row), offsets)
        used = used + ops.where(ops.equal(indices, row), example_length, 0)
        return used, rows, offsets

    zeros = ops.zeros_like(lengths)
    _, rows, offsets = ops.fori_loop(0, batch, place, (zeros, zeros, zeros))
    num_rows = ops.max(rows, initial=-1) + 1
    return rows, offsets, lengths, num_rows, length


def tokens_from_rows(rows, token_slots):
    """[R, L, ...] packed rows → [M, ...], the tokens at `token_slots` (indices into the
    flattened rows; `PackedBatch.token_slots`)."""
    flat = ops.reshape(rows, (-1,) + tuple(rows.shape[2:]))
    return ops.take(flat, token_slots, axis=0)


def gather_tokens(tokens, index):
    """[M, ...] tokens laid out by `index` (any shape of token numbers, M meaning padding),
    zeros at padding: `token_rows` gives [R, L, ...] packed rows.

    Examples:
    >>> import numpy as np
    >>> ops.convert_to_numpy(gather_tokens(np.array([5, 6]), np.array([[1, 0, 2]]))).tolist()
    [[6, 5, 0]]
    """
    padded = ops.concatenate([tokens, ops.zeros_like(tokens[:1])], axis=0)
    return ops.take(padded, index, axis=0)


def dropout_as_in_rows(dropout, tokens, token_rows, token_slots, training=None):
    """`dropout` on [M, ...] tokens with the mask it would draw on their packed rows.

    A `keras.layers.Dropout` draws one mask over whatever shape it is given, so on the
    real tokens alone ([M, ...]) it would drop other units than on the packed rows
    [R, L, ...] for the same seed: the same distribution, but not the same model trained.
    Here the mask (already scaled by 1 / (1 - rate)) is drawn over the rows, as the layer
    would on them, and its tokens' slots gathered (`token_slots`), so a packing encoder
    trains the same weights from the same seed whichever layout its position-wise layers
    compute on (`TransformerEncoder.position_wise_on_tokens`). `token_rows` [R, L] gives
    the rows' shape; the layer's seed advances once per call, as it would on the rows.

    Examples:
    >>> import keras, numpy as np
    >>> ids = np.array([[2, 7, 3, 0], [2, 3, 0, 0]])
    >>> packed = PackedBatch(ids, np.zeros_like(ids), np.sign(ids), row_length=8)
    >>> rows = np.random.default_rng(0).normal(size=(1, 8, 4)).astype("float32")
    >>> on_rows, on_tokens = keras.layers.Dropout(0.5, seed=1), keras.layers.Dropout(0.5, seed=1)
    >>> want = packed.to_tokens(on_rows(rows, training=True))
    >>> got = dropout_as_in_rows(on_tokens, packed.to_tokens(rows), packed.token_rows,
    ...                          packed.token_slots, training=True)
    >>> bool(np.all(ops.convert_to_numpy(got) == ops.convert_to_numpy(want)))
    True
    """
    if not training or not dropout.rate:
        return tokens
    rows_shape = tuple(ops.shape(token_rows)) + tuple(ops.shape(tokens)[1:])
    keep = dropout(ops.ones(rows_shape, dtype=tokens.dtype), training=training)
    return tokens * tokens_from_rows(ops.cast(keep, tokens.dtype), token_slots)


class PackedBatch:
    """A right-padded batch packed into rows, and the way back.

    `token_ids`, `segment_ids`, `position_ids` [R, L]: the packed inputs;
    `example_ids` [R, L]: 1 + the example's index in the batch, 0 at padding;
    `attention_mask` [R, L, L]: 1 where query and key are real tokens of the
    same example. `unpack(x)` maps a packed [R, L, ...] output back to the
    batch's [N, T, ...] layout, zeros at padding.

    The real tokens alone, [M, ...] in batch order, are a third layout: the
    one where position-wise work (projections, feed-forward, layer norms)
    computes on no padding at all. `to_tokens(x)` takes packed rows to it,
    `token_rows` [R, L] indexes it from the rows (M at padding, for a zero
    row appended: `rows_from_tokens(x)`), and `unpack_tokens(x)` takes it to
    the batch's layout.

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
    >>> tokens = packed.to_tokens(packed.token_ids)
    >>> ops.convert_to_numpy(tokens).tolist()
    [2, 7, 3, 2, 3]
    >>> ops.convert_to_numpy(packed.rows_from_tokens(tokens)).tolist()
    [[2, 7, 3, 2, 3, 0, 0, 0]]
    >>> ops.convert_to_numpy(packed.unpack_tokens(tokens)).tolist()
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

        # The real tokens in batch order: where each sits in the rows, and back.
        real = ops.reshape(self._is_real, (-1,))
        self.num_tokens = ops.sum(ops.cast(real, "int32"))
        real_positions = ops.cast(ops.nonzero(real)[0], "int32")
        self.token_slots = ops.take(ops.reshape(destination, (-1,)), real_positions)
        token_numbers = ops.arange(self.num_tokens, dtype="int32")
        self.token_rows = ops.reshape(
            ops.scatter(ops.expand_dims(self.token_slots, -1), token_numbers - self.num_tokens,
                        ops.expand_dims(size, 0)) + self.num_tokens,
            (num_rows, length))
        # [N, T]: each batch position's token number, M at padding.
        self._batch_tokens = ops.where(
            self._is_real, ops.reshape(ops.cumsum(ops.cast(real, "int32")) - 1, (batch, time)),
            self.num_tokens)

    def unpack(self, packed):
        """[R, L, ...] → [N, T, ...] in the batch's layout, zeros at padding."""
        flat = ops.reshape(packed, (-1,) + tuple(packed.shape[2:]))
        index = ops.where(self._is_real, self._destination, 0)
        gathered = ops.take(flat, index, axis=0)
        keep = ops.cast(self._is_real, gathered.dtype)
        for _ in range(len(gathered.shape) - 2):
            keep = ops.expand_dims(keep, -1)
        return gathered * keep

    def to_tokens(self, packed):
        """[R, L, ...] → [M, ...]: the real tokens, in batch order."""
        return tokens_from_rows(packed, self.token_slots)

    def rows_from_tokens(self, tokens):
        """[M, ...] → [R, L, ...] in the packed rows, zeros at padding."""
        return gather_tokens(tokens, self.token_rows)

    def unpack_tokens(self, tokens):
        """[M, ...] → [N, T, ...] in the batch's layout, zeros at padding."""
        return gather_tokens(tokens, self._batch_tokens)
