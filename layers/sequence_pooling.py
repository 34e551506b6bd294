"""One vector per sequence from token vectors: [CLS], masked mean or masked max."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register

POOLINGS = ("cls", "mean", "max")


@register
class SequencePooling(keras.layers.Layer):
    """Pools [B, T, H] token vectors into [B, H], ignoring padded positions.

    - `mode="cls"`: the first token's vector (BERT's [CLS], without the pooler);
    - `mode="mean"`: the mean over real tokens (`padding_mask` 1), the
      pooling sentence-transformers models such as all-MiniLM-L6-v2 are
      trained with;
    - `mode="max"`: the element-wise maximum over real tokens.

    With `normalize=True` the result is scaled to unit L2 norm. Sums run in
    float32 whatever the dtype policy; the output has the compute dtype.

    Args:
        mode: one of `POOLINGS`.
        normalize: L2-normalise the pooled vector.

    Examples:
    >>> import numpy as np
    >>> x = np.array([[[1., 2.], [3., 4.], [100., 100.]]], "float32")
    >>> mask = np.array([[1, 1, 0]])
    >>> SequencePooling("mean")(x, padding_mask=mask).numpy().tolist()
    [[2.0, 3.0]]
    >>> SequencePooling("max")(x, padding_mask=mask).numpy().tolist()
    [[3.0, 4.0]]
    """

    def __init__(self, mode="mean", normalize=False, **kwargs):
        super().__init__(**kwargs)
        if mode not in POOLINGS:
            raise ValueError(f"mode must be one of {', '.join(POOLINGS)}, got {mode!r}")
        self.mode = mode
        self.normalize = bool(normalize)

    def call(self, inputs, padding_mask=None):
        x = ops.cast(inputs, "float32")
        if self.mode == "cls":
            pooled = x[:, 0, :]
        else:
            if padding_mask is None:
                padding_mask = ops.ones(ops.shape(x)[:2], "int32")
            real = ops.cast(padding_mask, "float32")[:, :, None]
            if self.mode == "mean":
                pooled = ops.sum(x * real, axis=1) / ops.maximum(ops.sum(real, axis=1), 1.0)
            else:
                pooled = ops.max(ops.where(real > 0, x, -3.0e38), axis=1)
        if self.normalize:
            pooled = pooled / ops.maximum(ops.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return ops.cast(pooled, self.compute_dtype)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return (inputs_shape[0], inputs_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode, "normalize": self.normalize})
        return config
