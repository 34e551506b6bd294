"""Per-row arithmetic on ragged [B, (N), ...] tensors, in flat ops.

The input pipelines trace these once per dataset, and exported models once per
signature. TensorFlow's ragged broadcasting (a ragged tensor compared with a
dense [B, 1] one) adds ~360 graph operations of shape checks per comparison;
the flat forms here add a few dozen, which is most of a word dataset's
construction time.
"""

import tensorflow as tf


def value_rowids(values):
    """The row of every value of a ragged [B, (N), ...] tensor, [values] (as
    `values.value_rowids()`, whose `tf.repeat` adds ~70 graph operations).

    Examples:
    >>> value_rowids(tf.ragged.constant([[5, 6], [], [7]])).numpy().tolist()
    [0, 0, 2]
    """
    splits = values.row_splits
    return tf.searchsorted(splits[1:], tf.range(splits[-1]), side="right",
                           out_type=splits.dtype)


def row_exclusive_cumsum(lengths):
    """Exclusive cumulative sum inside each row of a ragged [b, W] tensor.

    Examples:
    >>> row_exclusive_cumsum(tf.ragged.constant([[2, 1, 3], [4]])).to_list()
    [[0, 2, 3], [0]]
    """
    flat = lengths.flat_values
    global_exclusive = tf.cumsum(flat, exclusive=True)
    row_offsets = tf.gather(
        tf.concat([global_exclusive, [tf.reduce_sum(flat)]], 0), lengths.row_starts()
    )
    return lengths.with_flat_values(
        global_exclusive - tf.gather(row_offsets, value_rowids(lengths)))


def row_sums(values):
    """The sum of every row of a ragged [B, (N)] tensor, [B] (0 for an empty row).

    Examples:
    >>> row_sums(tf.ragged.constant([[2, 1, 3], [], [4]])).numpy().tolist()
    [6, 0, 4]
    """
    return tf.math.unsorted_segment_sum(values.values, value_rowids(values), values.nrows())


def merge_inner_rows(values):
    """[B, (W), (P), ...] → [B, (W·P), ...]: the rows of each row joined (`merge_dims(1, 2)`
    without its validity checks).

    Examples:
    >>> merge_inner_rows(tf.ragged.constant([[[1, 2], [3]], [], [[4]]])).to_list()
    [[1, 2, 3], [], [4]]
    """
    return tf.RaggedTensor.from_row_splits(
        values.values.values, tf.gather(values.values.row_splits, values.row_splits),
        validate=False)


def concat_rows(parts):
    """Row-wise concatenation of ragged [B, (N_k)] tensors with flat values (as
    `tf.concat(parts, axis=1)`, in a few flat ops).

    Examples:
    >>> concat_rows([tf.ragged.constant([[1], [2]]), tf.ragged.constant([[], [3, 4]]),
    ...              ones_per_row(9, 2)]).to_list()
    [[1, 9], [2, 3, 4, 9]]
    """
    lengths = [part.row_lengths() for part in parts]
    total = tf.add_n(lengths)
    splits = tf.concat([tf.zeros([1], total.dtype), tf.cumsum(total)], axis=0)
    before = splits[:-1]  # where each row's part starts in the flat output
    positions = []
    for part, length in zip(parts, lengths):
        rows = value_rowids(part)
        local = tf.range(tf.size(rows, out_type=rows.dtype)) - tf.gather(part.row_starts(), rows)
        positions.append(tf.gather(before, rows) + local)
        before += length
    # Every value has its own position: the inverse permutation puts them in place.
    flat = tf.gather(tf.concat([part.values for part in parts], axis=0),
                     tf.math.invert_permutation(tf.concat(positions, axis=0)))
    return tf.RaggedTensor.from_row_splits(flat, splits, validate=False)


def row_slices(values, begin, end, rows=None):
    """`values[rows[i]][begin[i]:end[i]]` for every i: ragged [B, (N), ...] → [R, (end − begin), ...].

    Args:
        values: a RaggedTensor [B, (N), ...] (its inner dimensions may be ragged too).
        begin, end: integer [R] (or scalars), with 0 <= begin <= end <= the row's length.
        rows: integer [R], the row each slice is cut from; None for every row in
            order (R = B).

    Examples:
    >>> words = tf.ragged.constant([["a", "b", "c"], ["d"]])
    >>> row_slices(words, [1, 0], [3, 0]).to_list()
    [[b'b', b'c'], []]
    >>> row_slices(words, 0, 1, rows=[1, 0, 0]).to_list()
    [[b'd'], [b'a'], [b'a']]
    """
    starts = values.row_starts()
    if rows is not None:
        starts = tf.gather(starts, tf.cast(rows, starts.dtype))
    begin = tf.cast(begin, starts.dtype) + starts
    end = tf.cast(end, starts.dtype) + starts
    shape = tf.shape(starts)
    indices = tf.ragged.range(tf.broadcast_to(begin, shape), tf.broadcast_to(end, shape))
    return tf.RaggedTensor.from_row_splits(tf.gather(values.values, indices.flat_values),
                                           indices.row_splits, validate=False)


def split_rows(values, count):
    """`(values[:count], values[count:])` of a ragged [B, (N)] tensor, without
    `__getitem__`'s checks.

    Examples:
    >>> first, rest = split_rows(tf.ragged.constant([[1, 2], [3], [], [4]]), 1)
    >>> first.to_list(), rest.to_list()
    ([[1, 2]], [[3], [], [4]])
    """
    splits = values.row_splits
    count = tf.cast(count, splits.dtype)
    middle = splits[count]
    first = tf.RaggedTensor.from_row_splits(values.values[:middle], splits[:count + 1],
                                            validate=False)
    rest = tf.RaggedTensor.from_row_splits(values.values[middle:], splits[count:] - middle,
                                           validate=False)
    return first, rest


def row_prefix(values, lengths):
    """The first `lengths[b]` items of every row b (each at most the row's length).

    Examples:
    >>> row_prefix(tf.ragged.constant([[1, 2, 3], [4]]), [2, 0]).to_list()
    [[1, 2], []]
    """
    return row_slices(values, 0, lengths)


def row_suffix(values, lengths):
    """The last `lengths[b]` items of every row b (each at most the row's length).

    Examples:
    >>> row_suffix(tf.ragged.constant([[1, 2, 3], [4]]), [2, 1]).to_list()
    [[2, 3], [4]]
    """
    row_lengths = values.row_lengths()
    return row_slices(values, row_lengths - tf.cast(lengths, row_lengths.dtype), row_lengths)


def ones_per_row(value, rows):
    """[rows, (1)]: `value` once in every row (a [CLS] or [SEP] column to concatenate).

    Examples:
    >>> ones_per_row(7, 2).to_list()
    [[7], [7]]
    """
    return tf.RaggedTensor.from_row_lengths(tf.fill([rows], value),
                                            tf.ones([rows], tf.int64), validate=False)
