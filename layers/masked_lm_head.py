"""The masked-LM head: gather, dense + GELU + LayerNorm, tied vocabulary decoder."""

import keras

from nlpzoo.layers.position_gather import gather_positions
from nlpzoo.layers.serialization import register
from nlpzoo.layers.tied_vocabulary_decoder import (
    GELU_APPROXIMATE,
    TiedHeadMixin,
    head_activation,
)

# What a head saved before it followed its encoder was made with (BERT's settings).
LEGACY_HEAD_SETTINGS = {"activation": "gelu", "layer_norm_epsilon": 1e-12}


def encoder_head_settings(transformer):
    """The `activation` and `layer_norm_epsilon` of a masked-LM head on `transformer`: its
    blocks' GELU (exact, or the tanh form with `gelu_approximate`) and LayerNorm epsilon,
    what BERT's, ALBERT's and DistilBERT's heads use (RoBERTa's: exact GELU and its epsilon);
    and `layer_norm_bias=False` on an encoder whose norms have no bias (`use_bias=False`:
    ModernBERT, whose head's norm has none either).

    Examples:
    >>> from nlpzoo.layers.transformer_encoder import TransformerEncoder
    >>> encoder = TransformerEncoder(vocabulary_size=9, num_layers=1, num_heads=1, hidden_dim=4,
    ...                              intermediate_dim=8, gelu_approximate=True,
    ...                              layer_norm_epsilon=1e-5)
    >>> encoder_head_settings(encoder)
    {'activation': 'gelu_approximate', 'layer_norm_epsilon': 1e-05}
    """
    settings = {"activation": GELU_APPROXIMATE if transformer.gelu_approximate else "gelu",
                "layer_norm_epsilon": float(transformer.layer_norm_epsilon)}
    if not getattr(transformer, "use_bias", True):
        settings["layer_norm_bias"] = False
    return settings


@register
class MaskedLMHead(TiedHeadMixin, keras.layers.Layer):
    """BERT's masked-LM head with an output decoder tied to the input embeddings.

    Gathers `sequence_output` [B, T, H] at `mask_positions` [B, P], applies
    dense (to the embedding width) + activation + LayerNorm, then decodes
    `logits = h · Eᵀ + b` with the token embedding table E [V, E] and the
    head's own bias b [V] (a `TiedVocabularyDecoder`). Logits are float32
    [B, P, V] under every dtype policy (the decoder runs in float32).

    Tying and serialization. `embedding_layer` (e.g.
    `encoder.token_embedding`) is referenced, not owned: its table is not
    among this head's weights, is not saved with the head, and is trained
    and saved once by the encoder that owns it. So `get_config` stores only
    `tied=True` and the sizes, and `from_config` returns a head that still
    has to be re-tied: the model owning both the encoder and the head
    re-ties it when it is rebuilt, either by re-creating the head in its
    `__init__` from the encoder it just built, or with
    `MaskedLMHead.from_config(config).tie(encoder.token_embedding)`.
    Calling a head that is tied but has no table raises a clear error; a
    functional model made of the head alone therefore cannot be reloaded in
    tied mode (use `tied=False` there). With `tied=False` (or no
    `embedding_layer`) the head has its own decoder kernel [E, V].

    Args:
        vocabulary_size: V.
        embedding_layer: a `keras.layers.Embedding` to tie to.
        tied: whether the decoder uses an embedding table; defaults to
            `embedding_layer is not None`.
        embedding_dim: width of the dense layer and of the table; taken from
            `embedding_layer` when given, else the input width (untied).
        activation: activation of the dense layer: exact GELU by default,
            "gelu_approximate" for its tanh form (`encoder_head_settings`
            gives an encoder's), or any Keras activation.
        layer_norm_epsilon: epsilon of the LayerNorm.
        layer_norm_bias: whether the LayerNorm has a bias (ModernBERT's has none).
        initializer_range: stddev of the truncated-normal initialiser.

    Examples:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(50, 8)
    >>> hidden = embedding(np.array([[2, 7, 9, 3]]))
    >>> head = MaskedLMHead(vocabulary_size=50, embedding_layer=embedding)
    >>> logits = head(hidden, np.array([[1, 2]]))
    >>> dtype = keras.backend.standardize_dtype(logits.dtype)
    >>> tuple(logits.shape), dtype, len(head.weights)
    ((1, 2, 50), 'float32', 5)
    >>> restored = MaskedLMHead.from_config(head.get_config())
    >>> restored.is_tied, restored.tie(embedding).is_tied
    (False, True)
    """

    def __init__(
        self,
        # The decoder's arguments (`TiedVocabularyDecoder`), then the head's own.
        vocabulary_size, embedding_layer=None, tied=None, embedding_dim=None,
        # The settings of its dense layers and LayerNorms (`_set_head_settings`).
        activation="gelu", layer_norm_epsilon=1e-12, initializer_range=0.02,
        layer_norm_bias=True, **kwargs,
    ):
        super().__init__(**kwargs)
        self._set_head_settings(activation, layer_norm_epsilon, initializer_range)
        self.layer_norm_bias = bool(layer_norm_bias)

        # === Layers ===
        self.transform = None  # its width may be the input's: made in build
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, center=self.layer_norm_bias,
            dtype=self.dtype_policy, name="layer_norm"
        )
        self._make_decoder(vocabulary_size, embedding_layer, tied, embedding_dim)

    def build(self, sequence_output_shape, mask_positions_shape=None):
        width = self.embedding_dim or sequence_output_shape[-1]
        self.transform = keras.layers.Dense(
            width,
            activation=head_activation(self.activation),
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range
            ),
            dtype=self.dtype_policy,
            name="transform",
        )
        gathered_shape = (sequence_output_shape[0], None, sequence_output_shape[-1])
        self.transform.build(gathered_shape)
        self.layer_norm.build(gathered_shape[:-1] + (width,))
        self.decoder.build(gathered_shape[:-1] + (width,))
        self.built = True

    def call(self, sequence_output, mask_positions):
        x = gather_positions(sequence_output, mask_positions)
        x = self.layer_norm(self.transform(x))
        return self.decoder(x)

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape):
        return tuple(mask_positions_shape) + (self.vocabulary_size,)

    def compute_output_spec(self, sequence_output, mask_positions):
        return keras.KerasTensor(
            self.compute_output_shape(sequence_output.shape, mask_positions.shape),
            dtype="float32",
        )

    def get_config(self):
        return {**super().get_config(), **self._head_config(),
                "layer_norm_bias": self.layer_norm_bias}
