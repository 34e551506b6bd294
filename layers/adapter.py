"""A Houlsby bottleneck adapter: a small residual MLP inserted into a frozen encoder."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


@register
class Adapter(keras.layers.Layer):
    """`x + up(gelu(down(x)))`, with the up-projection starting at exactly zero.

    Houlsby et al. (2019), "Parameter-Efficient Transfer Learning for NLP":
    a down-projection to `bottleneck_dim`, a GELU and an up-projection back
    to the input width, around a residual connection. The up-projection's
    kernel and bias start at zero, so a new adapter is the identity and an
    encoder with adapters computes exactly what the pretrained one did until
    training moves them (its gradient is not zero: it is the bottleneck
    activations times the incoming gradient).

    Args:
        bottleneck_dim: width of the bottleneck (Houlsby et al. use 8–256).
        gelu_approximate: tanh approximation of GELU if True.
        initializer_range: stddev of the down-projection's truncated-normal
            initialiser.

    Examples:
    >>> import numpy as np
    >>> adapter = Adapter(bottleneck_dim=4)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> bool(np.allclose(adapter(x), x)), adapter.count_params()
    (True, 76)
    """

    def __init__(self, bottleneck_dim, gelu_approximate=False, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        if int(bottleneck_dim) < 1:
            raise ValueError(f"bottleneck_dim must be at least 1, got {bottleneck_dim}")
        self.bottleneck_dim = int(bottleneck_dim)
        self.gelu_approximate = bool(gelu_approximate)
        self.initializer_range = float(initializer_range)
        self.supports_masking = True

        # === Layers ===
        self.down = keras.layers.Dense(
            self.bottleneck_dim,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="down",
        )
        self.up = None  # its width is the input's, known in build

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        self.down.build(inputs_shape)
        self.up = keras.layers.Dense(
            width,
            kernel_initializer="zeros",
            bias_initializer="zeros",
            dtype=self.dtype_policy,
            name="up",
        )
        self.up.build(tuple(inputs_shape[:-1]) + (self.bottleneck_dim,))
        self.built = True

    def call(self, inputs):
        hidden = ops.gelu(self.down(inputs), approximate=self.gelu_approximate)
        return inputs + self.up(hidden)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "bottleneck_dim": self.bottleneck_dim,
                "gelu_approximate": self.gelu_approximate,
                "initializer_range": self.initializer_range,
            }
        )
        return config
