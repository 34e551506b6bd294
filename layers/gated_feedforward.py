"""GeGLU, the gated GELU of ModernBERT's feed-forward layers (Shazeer 2020).

The input projection is twice as wide as the feed-forward layer: its first
half goes through GELU and gates (multiplies) the second half, and the output
projection reads the product. In transformers' `ModernBertMLP`:
`input, gate = Wi(x).chunk(2); Wo(act(input) * gate)`.
"""

from keras import ops


def gated_gelu(x, approximate=False):
    """gelu(first half of the last axis) * second half, computed in float32.

    [..., 2 * intermediate] → [..., intermediate], in `x`'s dtype; GELU in
    float32 under mixed precision, as the ungated feed-forward computes it.

    >>> import numpy as np
    >>> x = np.array([[1.0, -1.0, 2.0, 3.0]], "float32")
    >>> [round(float(v), 4) for v in ops.convert_to_numpy(gated_gelu(x))[0]]
    [1.6827, -0.476]
    """
    half = x.shape[-1] // 2
    values = ops.cast(x, "float32")
    gated = ops.gelu(values[..., :half], approximate=approximate) * values[..., half:]
    return ops.cast(gated, x.dtype)
