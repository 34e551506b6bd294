"""Dropout and a dense layer from a pooled vector to class logits."""

import keras

from layers.serialization import register


@register
class ClassificationHead(keras.layers.Layer):
    """Maps a pooled encoder output to `num_classes` logits.

    The input is the encoder's `pooled_output`, which already went through
    BERT's dense + tanh pooler; this head adds dropout and the output layer.
    `hidden_dim` inserts one more dense + tanh layer before the logits (the
    RoBERTa-style head) when the pooler is not wanted or not pretrained.
    Logits are float32 under every dtype policy, so losses and softmax stay
    accurate under mixed precision.

    Args:
        num_classes: number of output classes.
        dropout: dropout rate before the output layer.
        hidden_dim: width of an optional extra dense + tanh layer.
        initializer_range: stddev of the truncated-normal initialiser.

    Examples:
    >>> import numpy as np
    >>> head = ClassificationHead(num_classes=3)
    >>> tuple(head(np.random.rand(4, 8).astype("float32")).shape)
    (4, 3)
    """

    def __init__(
        self, num_classes, dropout=0.1, hidden_dim=None, initializer_range=0.02, **kwargs
    ):
        super().__init__(**kwargs)
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.hidden_dim = int(hidden_dim) if hidden_dim else None
        self.initializer_range = float(initializer_range)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.hidden_dense = None
        if self.hidden_dim:
            self.hidden_dense = keras.layers.Dense(
                self.hidden_dim,
                activation="tanh",
                kernel_initializer=initializer,
                dtype=self.dtype_policy,
                name="hidden",
            )
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        # float32 output layer: logits feed the loss and softmax directly.
        self.logits_dense = keras.layers.Dense(
            self.num_classes,
            kernel_initializer=initializer,
            dtype="float32",
            name="logits",
        )

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        if self.hidden_dense is not None:
            self.hidden_dense.build(inputs_shape)
            width = self.hidden_dim
        self.logits_dense.build(tuple(inputs_shape[:-1]) + (width,))
        self.built = True

    def call(self, inputs, training=None):
        x = inputs
        if self.hidden_dense is not None:
            x = self.dropout_layer(x, training=training)
            x = self.hidden_dense(x)
        x = self.dropout_layer(x, training=training)
        return self.logits_dense(x)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.num_classes,)

    def compute_output_spec(self, inputs, training=None):
        return keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype="float32"
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_classes": self.num_classes,
                "dropout": self.dropout,
                "hidden_dim": self.hidden_dim,
                "initializer_range": self.initializer_range,
            }
        )
        return config
