"""Start and end logits of a span over a sequence (extractive question answering)."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register

# The logit of a position that may not be chosen: far below any real logit, and finite, so
# that a softmax over a row of them only (which masking never makes) would still be a number.
MASKED_LOGIT = -1e9


@register
class SpanEndpointHead(keras.layers.Layer):
    """Token vectors [B, L, D] → float32 logits [B, 2, L]: where a span starts, where it ends.

    One dense layer scores every token twice (BERT's SQuAD head: the start
    and the end score are two columns of one `D x 2` matrix). With `allowed`
    [B, L], positions where it is 0 get `MASKED_LOGIT`: a softmax over a row
    gives them no probability, so the loss and the decoding see only the
    positions a span may take (in question answering: the context, and the
    [CLS] that stands for "no answer"). Logits are float32 under every dtype
    policy.

    Args:
        dropout: dropout on the token vectors before the dense layer.
        initializer_range: stddev of the truncated-normal initialiser.

    Examples:
    >>> import numpy as np
    >>> head = SpanEndpointHead()
    >>> vectors = np.random.rand(2, 5, 8).astype("float32")
    >>> logits = head(vectors, allowed=np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]))
    >>> tuple(logits.shape), float(logits[0, 0, 3]), float(logits[0, 1, 4])
    ((2, 2, 5), -1000000000.0, -1000000000.0)
    """

    def __init__(self, dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.dropout = float(dropout)
        self.initializer_range = float(initializer_range)
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy,
                                                  name="dropout")
        self.dense = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype="float32", name="logits")

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, vectors, allowed=None, training=False):
        vectors = self.dropout_layer(vectors, training=training)
        logits = self.dense(ops.cast(vectors, "float32"))  # [B, L, 2]
        logits = ops.transpose(logits, (0, 2, 1))  # [B, 2, L]
        if allowed is not None:
            allowed = ops.expand_dims(ops.cast(allowed, "bool"), 1)
            logits = ops.where(allowed, logits, ops.full_like(logits, MASKED_LOGIT))
        return logits

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 2, input_shape[1])

    def compute_output_spec(self, vectors, allowed=None, training=False):
        # float32 whatever the layer's compute dtype (the dense layer is float32).
        return keras.KerasTensor(self.compute_output_shape(vectors.shape), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout, "initializer_range": self.initializer_range})
        return config
