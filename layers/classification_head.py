"""Dropout, optional hidden dense layers and a float32 dense layer to class logits."""

import keras

from nlpzoo.layers.serialization import register


@register
class ClassificationHead(keras.layers.Layer):
    """Maps vectors [..., D] to `num_classes` float32 logits.

    As a sentence classifier its input is the encoder's `pooled_output`,
    which already went through BERT's dense + tanh pooler; the default head
    adds dropout and the output layer. `hidden_dim` inserts
    `num_hidden_layers` more dense layers with `activation` (one dense + tanh,
    the RoBERTa-style head, by default) for when the pooler is not wanted or
    not pretrained. `SpanClassifier` is this head with two ReLU layers.

    Dropout comes before every dense layer, the input included; with
    `input_dropout=False` the input is left alone, so dropout follows each
    hidden layer instead. Logits are float32 under every dtype policy, so
    losses and softmax stay accurate under mixed precision.

    Args:
        num_classes: number of output classes.
        dropout: dropout rate before each dense layer.
        hidden_dim: width of the optional hidden layers (None: none).
        num_hidden_layers: how many hidden layers `hidden_dim` gives.
        activation: activation of the hidden layers.
        input_dropout: whether dropout also applies to the input.
        initializer_range: stddev of the truncated-normal initialiser.

    Examples:
    >>> import numpy as np
    >>> head = ClassificationHead(num_classes=3)
    >>> tuple(head(np.random.rand(4, 8).astype("float32")).shape)
    (4, 3)
    >>> head = ClassificationHead(num_classes=3, hidden_dim=6, num_hidden_layers=2)
    >>> logits = head(np.random.rand(4, 5, 8).astype("float32"))
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((4, 5, 3), 'float32')
    """

    def __init__(
        self,
        num_classes,
        dropout=0.1,
        hidden_dim=None,
        num_hidden_layers=1,
        activation="tanh",
        input_dropout=True,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.hidden_dim = int(hidden_dim) if hidden_dim else None
        self.num_hidden_layers = int(num_hidden_layers)
        if self.hidden_dim and self.num_hidden_layers < 1:
            raise ValueError(
                f"num_hidden_layers must be >= 1 with hidden_dim, got {num_hidden_layers}"
            )
        self.activation = activation
        self.input_dropout = bool(input_dropout)
        self.initializer_range = float(initializer_range)

        # === Layers ===
        def dense(units, name, **options):
            return keras.layers.Dense(
                units,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range
                ),
                name=name,
                **options,
            )

        depth = self.num_hidden_layers if self.hidden_dim else 0
        self.hidden_layers = [
            dense(self.hidden_dim, "hidden" if depth == 1 else f"hidden_{i}",
                  activation=activation, dtype=self.dtype_policy)
            for i in range(depth)
        ]
        # `.keras` files keep a single hidden layer's weights under this name
        # (Keras saves sublayers by attribute name; it was the only one before).
        self.hidden_dense = self.hidden_layers[0] if depth == 1 else None
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        # float32 output layer: logits feed the loss and softmax directly.
        self.logits_dense = dense(self.num_classes, "logits", dtype="float32")

    def build(self, inputs_shape):
        shape = tuple(inputs_shape)
        for layer in self.hidden_layers:
            layer.build(shape)
            shape = shape[:-1] + (self.hidden_dim,)
        self.logits_dense.build(shape)
        self.built = True

    def call(self, inputs, training=None):
        x = inputs
        if self.input_dropout:
            x = self.dropout_layer(x, training=training)
        for layer in self.hidden_layers:
            x = self.dropout_layer(layer(x), training=training)
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
                "num_hidden_layers": self.num_hidden_layers,
                "activation": self.activation,
                "input_dropout": self.input_dropout,
                "initializer_range": self.initializer_range,
            }
        )
        return config
