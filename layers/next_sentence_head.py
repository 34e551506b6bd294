"""BERT's next-sentence-prediction head."""

import keras

from nlpzoo.layers.serialization import register


@register
class NextSentenceHead(keras.layers.Layer):
    """2-way logits (is-next, is-random) from the pooled [CLS] output.

    The input is the encoder's `pooled_output` (BERT's dense + tanh pooler
    over [CLS]); as in BERT, one dense layer maps it to two logits. Logits
    are float32 under every dtype policy. Label convention: whatever the
    data uses; `tasks.pretraining.make_nsp_pairs` gives 1 for a true next
    segment, 0 for a random one.

    Args:
        initializer_range: stddev of the truncated-normal initialiser.

    Examples:
    >>> import numpy as np
    >>> logits = NextSentenceHead()(np.random.rand(4, 8).astype("float32"))
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((4, 2), 'float32')
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = float(initializer_range)

        # === Layers ===
        self.logits_dense = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range
            ),
            dtype="float32",
            name="logits",
        )

    def build(self, pooled_output_shape):
        self.logits_dense.build(pooled_output_shape)
        self.built = True

    def call(self, pooled_output):
        return self.logits_dense(pooled_output)

    def compute_output_shape(self, pooled_output_shape):
        return tuple(pooled_output_shape[:-1]) + (2,)

    def compute_output_spec(self, pooled_output):
        return keras.KerasTensor(
            self.compute_output_shape(pooled_output.shape), dtype="float32"
        )

    def get_config(self):
        config = super().get_config()
        config.update({"initializer_range": self.initializer_range})
        return config
