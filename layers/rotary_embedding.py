"""Rotary position embeddings (RoPE, Su et al. 2021), as ModernBERT and transformers apply them.

A position scheme that lives in attention: no position table; each query and
key is rotated by angles proportional to its position, so that their dot
product depends on the distance between them. Pairs are (i, i + head_dim/2)
("rotate half", transformers' layout), not adjacent dimensions.
"""

from keras import ops


def rotary_frequencies(head_dim, theta):
    """The inverse frequencies, theta ** (-2i / head_dim) for i < head_dim / 2 (float32).

    >>> [round(float(f), 4) for f in ops.convert_to_numpy(rotary_frequencies(4, 100.0))]
    [1.0, 0.1]
    """
    if head_dim % 2:
        raise ValueError(f"rotary position embeddings need an even head_dim, got {head_dim}")
    exponents = ops.arange(0, head_dim, 2, dtype="float32") / float(head_dim)
    return 1.0 / ops.power(ops.convert_to_tensor(float(theta), "float32"), exponents)


def apply_rotary(x, position_ids, theta):
    """`x` [B, heads, T, head_dim] rotated by the angles of `position_ids` [B, T] (or [T]).

    Computed in float32 (angles of positions in the thousands need it) and cast
    back to `x`'s dtype.

    Examples:
    >>> import numpy as np
    >>> x = np.ones((1, 1, 2, 4), "float32")  # position 0 unchanged; 1 turned by 1 and 0.1
    >>> rotated = apply_rotary(x, np.array([[0, 1]]), theta=100.0)
    >>> [[round(float(v), 4) for v in row] for row in ops.convert_to_numpy(rotated)[0, 0]]
    [[1.0, 1.0, 1.0, 1.0], [-0.3012, 0.8952, 1.3818, 1.0948]]
    """
    dtype = x.dtype
    head_dim = x.shape[-1]
    positions = ops.cast(position_ids, "float32")
    if len(positions.shape) == 1:
        positions = positions[None, :]
    angles = positions[:, :, None] * rotary_frequencies(head_dim, theta)  # [B, T, head_dim/2]
    angles = ops.concatenate([angles, angles], axis=-1)[:, None, :, :]  # [B, 1, T, head_dim]
    cos, sin = ops.cos(angles), ops.sin(angles)
    x = ops.cast(x, "float32")
    half = head_dim // 2
    rotated_half = ops.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return ops.cast(x * cos + rotated_half * sin, dtype)
