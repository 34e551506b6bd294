"""Dense + activation + LayerNorm over token vectors: ModernBERT's task-head transform."""

import keras

from nlpzoo.layers.serialization import register


@register
class PredictionTransform(keras.layers.Layer):
    """Vectors [..., D] → `norm(activation(dense(x)))` [..., D].

    transformers' `ModernBertPredictionHead`: every ModernBERT task class
    (sequence and token classification, question answering, masked LM) puts
    it between the encoder and its output layer. An encoder with
    `pooler_norm=True` has it as its pooler (over [CLS]); the task models that
    read token vectors (tagger, question answerer) put one of their own over
    every token (`token_transform`), as those classes do.

    Args:
        activation: the dense layer's activation (a Keras name).
        layer_norm_epsilon: epsilon of the LayerNorm.
        norm_bias: whether the LayerNorm has a bias (ModernBERT's `norm_bias`).
        use_bias: whether the dense layer has one (ModernBERT's
            `classifier_bias`; kept on by default, which its config can say).
        initializer_range: stddev of the truncated-normal initialiser.

    Examples:
    >>> import numpy as np
    >>> layer = PredictionTransform(activation="gelu", norm_bias=False)
    >>> out = keras.ops.convert_to_numpy(layer(np.random.rand(2, 3, 8).astype("float32")))
    >>> out.shape, bool(np.allclose(out.mean(-1), 0, atol=1e-5))
    ((2, 3, 8), True)
    >>> sorted(w.path.split("/", 1)[1] for w in layer.weights)
    ['dense/bias', 'dense/kernel', 'norm/gamma']
    """

    def __init__(self, activation="gelu", layer_norm_epsilon=1e-5, norm_bias=True,
                 use_bias=True, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.activation = activation
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.norm_bias = bool(norm_bias)
        self.use_bias = bool(use_bias)
        self.initializer_range = float(initializer_range)
        self.dense = None  # its width is the input's: made in build
        self.norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, center=self.norm_bias, dtype=self.dtype_policy,
            name="norm")

    def build(self, input_shape):
        self.dense = keras.layers.Dense(
            input_shape[-1], activation=self.activation, use_bias=self.use_bias,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range),
            dtype=self.dtype_policy, name="dense")
        self.dense.build(input_shape)
        self.norm.build(input_shape)
        self.built = True

    def call(self, inputs):
        return self.norm(self.dense(inputs))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"activation": self.activation,
                       "layer_norm_epsilon": self.layer_norm_epsilon,
                       "norm_bias": self.norm_bias, "use_bias": self.use_bias,
                       "initializer_range": self.initializer_range})
        return config


def token_transform(encoder, name="head_transform"):
    """The `PredictionTransform` a task head reading token vectors puts over each token of
    `encoder`: one configured as its pooler when it has `pooler_norm=True` (ModernBERT's
    heads), else None (no transform: the other families' heads read the vectors directly;
    so does an encoder without a `TransformerEncoder`).

    >>> from nlpzoo.layers.encoder import Encoder
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
    ...                   intermediate_dim=16, pooler_activation="gelu", pooler_norm=True,
    ...                   use_bias=False, layer_norm_epsilon=1e-5)
    >>> layer = token_transform(encoder)
    >>> layer.activation, layer.norm_bias, layer.layer_norm_epsilon
    ('gelu', False, 1e-05)
    >>> token_transform(Encoder(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
    ...                         intermediate_dim=16)) is None
    True
    """
    from nlpzoo.layers.encoder import transformer_of

    try:
        transformer = transformer_of(encoder)
    except ValueError:  # a functional encoder of another make: no family settings
        return None
    if not getattr(transformer, "pooler_norm", False):
        return None
    return PredictionTransform(
        activation=transformer.pooler_activation,
        layer_norm_epsilon=transformer.layer_norm_epsilon, norm_bias=transformer.use_bias,
        initializer_range=transformer.initializer_range, name=name)
