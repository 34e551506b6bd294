"""Mixing an encoder's layers into one representation: ELMo's scalar mix, or a fixed mean."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register

# What a head can read: the last layer, ELMo's learned scalar mix of every
# layer, or the fixed mean of the last four (Devlin et al. 2019, §5.3).
LAYER_MIXES = ("last", "scalar_mix", "mean_last_4")


@register
class LayerMix(keras.layers.Layer):
    """Combines a list of same-shaped hidden states into one tensor.

    - `mode="scalar_mix"` (Peters et al. 2018, eq. 1): γ · Σ_j softmax(w)_j h_j,
      with one learned logit w_j per input (zeros at the start: the plain
      mean) and a learned scale γ (1 at the start). Given an encoder's
      `hidden_states`, the embeddings output is one of the mixed layers.
    - `mode="mean_last_4"`: the mean of the last four inputs (of all of
      them when there are fewer), with no weights: the feature-based
      recipe of the BERT paper.
    - `mode="last"`: the last input unchanged.

    The mixing weights are computed in float32 and applied in the inputs'
    dtype, so the layer is safe under mixed precision.

    Args:
        mode: one of `LAYER_MIXES`.

    Examples:
    >>> import numpy as np
    >>> states = [np.full((1, 2, 3), float(i), "float32") for i in range(5)]
    >>> float(LayerMix("scalar_mix")(states)[0, 0, 0])  # equal weights: the mean
    2.0
    >>> float(LayerMix("mean_last_4")(states)[0, 0, 0])
    2.5
    """

    def __init__(self, mode="scalar_mix", **kwargs):
        super().__init__(**kwargs)
        if mode not in LAYER_MIXES:
            raise ValueError(f"mode must be one of {', '.join(LAYER_MIXES)}, got {mode!r}")
        self.mode = mode
        self.logits = self.scale = None

    def build(self, inputs_shape):
        if self.mode == "scalar_mix":
            self.logits = self.add_weight(
                shape=(len(inputs_shape),), initializer="zeros", dtype="float32",
                autocast=False, name="logits")
            self.scale = self.add_weight(
                shape=(), initializer="ones", dtype="float32", autocast=False,
                name="scale")
        self.built = True

    def mixing_weights(self):
        """softmax(w): the weight of each input (scalar mix only)."""
        return ops.softmax(ops.convert_to_tensor(self.logits), axis=0)

    def call(self, inputs):
        if self.mode == "last":
            return inputs[-1]
        if self.mode == "mean_last_4":
            last = inputs[-4:]
            return ops.sum(ops.stack(last, axis=0), axis=0) / len(last)
        dtype = inputs[0].dtype
        weights = ops.cast(self.mixing_weights() * ops.convert_to_tensor(self.scale), dtype)
        mixed = weights[0] * inputs[0]
        for index in range(1, len(inputs)):
            mixed = mixed + weights[index] * inputs[index]
        return mixed

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode})
        return config
