"""A two-layer feed-forward network from span vectors to entity-type logits."""

import keras

from layers.serialization import register


@register
class SpanClassifier(keras.layers.Layer):
    """Scores each span as NONE or one of the entity types.

    Two hidden dense layers of width `hidden_dim` with `activation`, each
    followed by dropout, then a dense layer to `num_labels` logits. Label 0
    is NONE (not an entity); labels 1.. are the entity types. The logits are
    float32 under every dtype policy, so the softmax and loss stay accurate
    under mixed precision.

    Args:
        num_labels: number of entity types + 1 (index 0 is NONE).
        hidden_dim: width of the two hidden layers.
        dropout: dropout rate after each hidden layer.
        activation: activation of the hidden layers (`"relu"` or `"gelu"`).
        initializer_range: stddev of the truncated-normal initialiser.

    Call arguments:
        inputs: [..., D] span vectors, e.g. [B, S, D] from
            `SpanRepresentation`.

    Returns:
        [..., num_labels] float32 logits.

    Examples:
    >>> import keras
    >>> import numpy as np
    >>> classifier = SpanClassifier(num_labels=5, hidden_dim=16, dropout=0.1)
    >>> logits = classifier(np.random.rand(2, 9, 24).astype("float32"))
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((2, 9, 5), 'float32')
    """

    def __init__(
        self,
        num_labels,
        hidden_dim,
        dropout=0.1,
        activation="relu",
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if num_labels < 2:
            raise ValueError(
                f"num_labels counts NONE plus at least one type, got {num_labels}"
            )
        self.num_labels = int(num_labels)
        self.hidden_dim = int(hidden_dim)
        self.dropout = float(dropout)
        self.activation = activation
        self.initializer_range = float(initializer_range)

        # === Layers ===
        def dense(units, name, **extra):
            return keras.layers.Dense(
                units,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range
                ),
                name=name,
                **extra,
            )

        self.hidden_layers = [
            dense(self.hidden_dim, f"hidden_{i}", activation=activation,
                  dtype=self.dtype_policy)
            for i in range(2)
        ]
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        # float32 output layer: logits feed the loss and softmax directly.
        self.logits_dense = dense(self.num_labels, "logits", dtype="float32")

    def build(self, inputs_shape):
        shape = tuple(inputs_shape)
        for layer in self.hidden_layers:
            layer.build(shape)
            shape = shape[:-1] + (self.hidden_dim,)
        self.logits_dense.build(shape)
        self.built = True

    def call(self, inputs, training=None):
        x = inputs
        for layer in self.hidden_layers:
            x = self.dropout_layer(layer(x), training=training)
        return self.logits_dense(x)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.num_labels,)

    def compute_output_spec(self, inputs, training=None):
        return keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype="float32"
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_labels": self.num_labels,
                "hidden_dim": self.hidden_dim,
                "dropout": self.dropout,
                "activation": self.activation,
                "initializer_range": self.initializer_range,
            }
        )
        return config
