"""Sliding-window (local) attention: each token attends to keys at most `window` positions away.

ModernBERT's local layers attend to `local_attention // 2` tokens on each
side (transformers: `abs(q - k) <= sliding_window`). Two computations of the
same thing:

- `window_mask`: the band as a [B, T, S] mask from position ids, for the
  dense path (any length; packed rows, where position ids restart per
  example, so the window never crosses into a neighbouring example);
- `local_attention_in_blocks`: the sequence cut into blocks of `block_size`
  (>= window) tokens, each query block attending only to its own and its two
  neighbouring key blocks: memory and work O(T · 3 · block_size) instead of
  O(T²), which is what lets 4,096-token inputs run.
"""

from keras import ops

# As `MultiHeadSelfAttention`: finite, so that a row with no real key is uniform, not NaN.
_MASKED_SCORE = -1e9


def window_mask(query_positions, key_positions, window):
    """[B, T, S] bool: |query position - key position| <= window.

    >>> import numpy as np
    >>> mask = window_mask(np.array([[0, 1, 2, 3]]), np.array([[0, 1, 2, 3]]), 1)
    >>> ops.convert_to_numpy(mask)[0].astype(int).tolist()
    [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    """
    query_positions = ops.convert_to_tensor(query_positions, "int32")
    key_positions = ops.convert_to_tensor(key_positions, "int32")
    distance = query_positions[:, :, None] - key_positions[:, None, :]
    return ops.less_equal(ops.abs(distance), window)


def _blocks(x, num_blocks, block_size):
    """[B, heads, num_blocks * block_size, d] → [B, heads, num_blocks, block_size, d]."""
    shape = ops.shape(x)
    return ops.reshape(x, (shape[0], shape[1], num_blocks, block_size, shape[-1]))


def _with_neighbours(x, axis):
    """Blocks [.., n + 2, b, ..] (one padding block each side) → [.., n, 3b, ..]: each block
    with the one before and the one after it."""
    n = ops.shape(x)[axis] - 2

    def part(start):
        return x[(slice(None),) * axis + (slice(start, start + n),)]

    return ops.concatenate([part(0), part(1), part(2)], axis=axis + 1)


def local_attention_in_blocks(query, key, value, key_mask, window, block_size=None,
                              dropout=None, compute_dtype=None):
    """Windowed attention computed block by block; equal to the dense banded computation.

    Args:
        query, key, value: [B, heads, T, head_dim]; the query already scaled
            (the scores are query · key).
        key_mask: [B, T], nonzero at real keys.
        window: how many positions each side a query sees (|q - k| <= window).
        block_size: tokens per block, at least `window` (default: `window`).
        dropout: applied to the float32 attention probabilities (or None).
        compute_dtype: the dtype the probabilities are cast to before they
            weigh the values (default: `value`'s).

    Returns:
        The context [B, heads, T, head_dim].

    Examples:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.normal(size=(1, 2, 7, 4)).astype("float32") for _ in range(3))
    >>> mask = np.array([[1, 1, 1, 1, 1, 1, 0]])
    >>> blocked = local_attention_in_blocks(q, k, v, mask, window=2)
    >>> scores = np.einsum("bhqd,bhkd->bhqk", q, k)
    >>> allowed = (np.abs(np.arange(7)[:, None] - np.arange(7)) <= 2) & (mask[0] > 0)
    >>> weights = np.exp(np.where(allowed, scores, -np.inf))
    >>> dense = (weights / weights.sum(-1, keepdims=True)) @ v
    >>> bool(np.allclose(ops.convert_to_numpy(blocked)[0, :, :6], dense[0, :, :6], atol=1e-5))
    True
    """
    window = int(window)
    block_size = int(block_size or window)
    if window < 1 or block_size < window:
        raise ValueError(f"need 1 <= window <= block_size, got window={window}, "
                         f"block_size={block_size}")
    compute_dtype = compute_dtype or value.dtype
    length = ops.shape(query)[2]
    num_blocks = (length + block_size - 1) // block_size
    padded = num_blocks * block_size

    def pad_time(x, before, after):  # [B, heads, T, d]
        return ops.pad(x, ((0, 0), (0, 0), (before, after), (0, 0)))

    tail = padded - length
    query = _blocks(pad_time(query, 0, tail), num_blocks, block_size)
    # One block of nothing before the first and after the last block.
    key = _with_neighbours(_blocks(pad_time(key, block_size, tail + block_size),
                                   num_blocks + 2, block_size), axis=2)
    value = _with_neighbours(_blocks(pad_time(value, block_size, tail + block_size),
                                     num_blocks + 2, block_size), axis=2)
    real = ops.pad(ops.cast(ops.not_equal(key_mask, 0), "int32"),
                   ((0, 0), (block_size, tail + block_size)))
    real = ops.reshape(real, (ops.shape(real)[0], num_blocks + 2, block_size))
    real = _with_neighbours(real, axis=1)  # [B, n, 3b]
    # Query r of block i sits at i·b + r, key c of its neighbourhood at (i - 1)·b + c:
    # their distance does not depend on i.
    rows = ops.arange(block_size, dtype="int32")[:, None]
    columns = ops.arange(3 * block_size, dtype="int32")[None, :]
    band = ops.less_equal(ops.abs(columns - block_size - rows), window)  # [b, 3b]
    allowed = ops.logical_and(band[None, None, None, :, :],
                              ops.cast(real, "bool")[:, None, :, None, :])

    scores = ops.matmul(query, ops.transpose(key, (0, 1, 2, 4, 3)))  # [B, h, n, b, 3b]
    scores = ops.where(allowed, ops.cast(scores, "float32"), _MASKED_SCORE)
    probabilities = ops.softmax(scores, axis=-1)
    if dropout is not None:
        probabilities = dropout(probabilities)
    context = ops.matmul(ops.cast(probabilities, compute_dtype), value)  # [B, h, n, b, d]
    shape = ops.shape(context)
    context = ops.reshape(context, (shape[0], shape[1], padded, shape[-1]))
    return context[:, :, :length, :]
