"""The masked-LM head: gather, dense + GELU + LayerNorm, tied vocabulary decoder."""

import keras
from keras import ops

from layers.serialization import register


class _LayerReference:
    """Holds a layer without Keras tracking it, saving it or counting its weights."""

    __slots__ = ("layer",)

    def __init__(self, layer):
        self.layer = layer


def _check_embedding_layer(embedding_layer, vocabulary_size, embedding_dim):
    """Validates a layer to tie to; returns its output width."""
    for attribute in ("input_dim", "output_dim"):
        if not hasattr(embedding_layer, attribute):
            raise TypeError(
                f"embedding_layer must be a keras.layers.Embedding-like layer "
                f"with `input_dim`, `output_dim` and `embeddings`; got {embedding_layer!r}"
            )
    if embedding_layer.input_dim != vocabulary_size:
        raise ValueError(
            f"vocabulary_size={vocabulary_size} but the embedding layer has "
            f"input_dim={embedding_layer.input_dim}"
        )
    if embedding_dim is not None and embedding_layer.output_dim != embedding_dim:
        raise ValueError(
            f"embedding_dim={embedding_dim} but the embedding layer has "
            f"output_dim={embedding_layer.output_dim}"
        )
    return int(embedding_layer.output_dim)


class _VocabularyDecoder(keras.layers.Layer):
    """float32 logits over the vocabulary: x · Eᵀ + b (tied) or x · W + b (untied).

    A building block of `MaskedLMHead` and `SpanBoundaryHead`, not saved on
    its own. It always runs in float32 (its own float32 scope, so the tied
    float32 table is read unrounded even inside a bfloat16 model). The tied
    table is referenced, not tracked: it is not among this layer's weights,
    and it is trained and saved by the layer that owns it.
    """

    def __init__(self, vocabulary_size, tied, initializer_range=0.02, **kwargs):
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.tied = bool(tied)
        self.initializer_range = float(initializer_range)
        self._reference = None

    def set_embedding_layer(self, embedding_layer):
        self._reference = _LayerReference(embedding_layer)

    def get_embedding_layer(self):
        return None if self._reference is None else self._reference.layer

    def build(self, inputs_shape):
        if not self.tied:
            self.kernel = self.add_weight(
                name="kernel",
                shape=(inputs_shape[-1], self.vocabulary_size),
                initializer=keras.initializers.TruncatedNormal(
                    stddev=self.initializer_range
                ),
            )
        self.bias = self.add_weight(
            name="bias", shape=(self.vocabulary_size,), initializer="zeros"
        )
        self.built = True

    def call(self, inputs):
        inputs = ops.cast(inputs, "float32")
        if not self.tied:
            return ops.matmul(inputs, self.kernel) + self.bias
        embedding_layer = self.get_embedding_layer()
        if embedding_layer is None:
            raise ValueError(
                "this head is tied to an input embedding that it does not own "
                "(it was probably re-created from its config): pass "
                "`embedding_layer=` or call `tie(embedding_layer)` first"
            )
        if not embedding_layer.built:
            embedding_layer.build()
        table = ops.cast(embedding_layer.embeddings, "float32")
        return ops.matmul(inputs, ops.transpose(table)) + self.bias

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.vocabulary_size,)


class _TiedHeadMixin:
    """`tie`, `is_tied` and `get_embedding_layer` for heads with a `decoder`."""

    def _setup_tying(self, vocabulary_size, embedding_layer, tied, embedding_dim):
        if tied is None:
            tied = embedding_layer is not None
        if embedding_layer is not None and not tied:
            raise ValueError("embedding_layer was given but tied=False")
        self.tied = bool(tied)
        self.embedding_dim = int(embedding_dim) if embedding_dim else None
        if embedding_layer is not None:
            self.embedding_dim = _check_embedding_layer(
                embedding_layer, vocabulary_size, self.embedding_dim
            )

    def tie(self, embedding_layer):
        """Ties the decoder to `embedding_layer` (e.g. `encoder.token_embedding`).

        Needed after `from_config` of a tied head; returns the head.
        """
        if not self.tied:
            raise ValueError("this head was built untied (tied=False)")
        self.embedding_dim = _check_embedding_layer(
            embedding_layer, self.vocabulary_size, self.embedding_dim
        )
        self.decoder.set_embedding_layer(embedding_layer)
        return self

    @property
    def is_tied(self):
        """True once the decoder reads an embedding table."""
        return self.tied and self.decoder.get_embedding_layer() is not None

    def get_embedding_layer(self):
        """The tied embedding layer, or None."""
        return self.decoder.get_embedding_layer()


@register
class MaskedLMHead(_TiedHeadMixin, keras.layers.Layer):
    """BERT's masked-LM head with an output decoder tied to the input embeddings.

    Gathers `sequence_output` [B, T, H] at `mask_positions` [B, P], applies
    dense (to the embedding width) + activation + LayerNorm, then decodes
    `logits = h · Eᵀ + b` with the token embedding table E [V, E] and the
    head's own bias b [V]. Logits are float32 [B, P, V] under every dtype
    policy (the decoder runs in float32).

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
        activation: activation of the dense layer (exact GELU by default).
        layer_norm_epsilon: epsilon of the LayerNorm.
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
        vocabulary_size,
        embedding_layer=None,
        tied=None,
        embedding_dim=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self._setup_tying(self.vocabulary_size, embedding_layer, tied, embedding_dim)
        self.activation = keras.activations.serialize(keras.activations.get(activation))
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.initializer_range = float(initializer_range)

        # === Layers ===
        self.transform = None  # its width may be the input's: made in build
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.decoder = _VocabularyDecoder(
            self.vocabulary_size,
            tied=self.tied,
            initializer_range=self.initializer_range,
            name="decoder",
        )
        if embedding_layer is not None:
            self.decoder.set_embedding_layer(embedding_layer)

    def build(self, sequence_output_shape, mask_positions_shape=None):
        width = self.embedding_dim or sequence_output_shape[-1]
        self.transform = keras.layers.Dense(
            width,
            activation=self.activation,
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
        positions = ops.cast(mask_positions, "int32")
        positions = ops.clip(positions, 0, ops.shape(sequence_output)[1] - 1)
        x = ops.take_along_axis(sequence_output, positions[:, :, None], axis=1)
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
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "tied": self.tied,
                "embedding_dim": self.embedding_dim,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
