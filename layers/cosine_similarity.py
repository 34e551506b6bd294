"""Cosine similarity of two vectors, in float32."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register

EPSILON = 1e-12


def cosine_similarity(u, v):
    """cos(u, v) = u·v / (‖u‖ ‖v‖) over the last axis, float32 [...].

    Each norm is floored at 1e-12, so a zero vector has cosine 0 with anything.

    Examples:
    >>> import numpy as np
    >>> cosine_similarity(np.array([[1.0, 0.0], [3.0, 4.0]]),
    ...                   np.array([[0.0, 2.0], [6.0, 8.0]])).numpy().round(6).tolist()
    [0.0, 1.0]
    """
    u, v = ops.cast(u, "float32"), ops.cast(v, "float32")
    norms = (ops.maximum(ops.norm(u, axis=-1), EPSILON)
             * ops.maximum(ops.norm(v, axis=-1), EPSILON))
    return ops.sum(u * v, axis=-1) / norms


@register
class CosineSimilarity(keras.layers.Layer):
    """cos(u, v) of vectors [..., H] → [...], float32 under every dtype policy (it feeds a
    loss). No weights.

    Examples:
    >>> import numpy as np
    >>> CosineSimilarity()(np.ones((2, 3)), -np.ones((2, 3))).numpy().tolist()
    [-1.0, -1.0]
    """

    def call(self, u, v):
        return cosine_similarity(u, v)

    def compute_output_shape(self, u_shape, v_shape=None):
        return tuple(u_shape[:-1])

    def compute_output_spec(self, u, v):
        return keras.KerasTensor(self.compute_output_shape(u.shape), dtype="float32")
