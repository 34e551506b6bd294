"""SpanBERT's span boundary objective head."""

import keras
from keras import ops

from nlpzoo.layers.position_gather import gather_positions
from nlpzoo.layers.serialization import register
from nlpzoo.layers.tied_vocabulary_decoder import TiedHeadMixin, head_activation


@register
class SpanBoundaryHead(TiedHeadMixin, keras.layers.Layer):
    """Predicts each token of a masked span from the span's boundary tokens.

    For every prediction it concatenates the encoder outputs at `span_left`
    (s − 1) and `span_right` (e + 1) with a learned embedding of
    `span_offset` (the token's 0-based position inside the span), then
    applies two dense layers, each followed by the activation and a
    LayerNorm (SpanBERT's 2-layer FFNN), and decodes with the tied token
    embedding table plus the head's own bias. Logits are float32 [B, P, V].

    Offsets at or above `max_span_length` share the last position
    embedding. `max_span_length` counts tokens, and spans are drawn in words
    (10 words at most in SpanBERT), so raise it (e.g. to 30) when words
    often split into several pieces.

    Tying and serialization work as in `MaskedLMHead` (both decode with a
    `TiedVocabularyDecoder`): the embedding layer is referenced, not owned
    or saved; `get_config` stores `tied=True` and the owning model re-ties
    the head (`head.tie(encoder.token_embedding)`) after `from_config`.

    Args:
        vocabulary_size: V.
        embedding_layer: a `keras.layers.Embedding` to tie to.
        tied: whether the decoder uses an embedding table; defaults to
            `embedding_layer is not None`.
        embedding_dim: width of the second layer and of the table; taken
            from `embedding_layer` when given, else the input width.
        max_span_length: number of learned offset embeddings.
        position_embedding_dim: their width; defaults to the input width.
        intermediate_dim: width of the first layer; defaults to the input
            width.
        activation: activation after each dense layer (exact GELU).
        layer_norm_epsilon: epsilon of the LayerNorms.
        initializer_range: stddev of the truncated-normal initialiser.

    Examples:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(50, 8)
    >>> hidden = embedding(np.array([[2, 7, 9, 11, 12, 3]]))
    >>> head = SpanBoundaryHead(vocabulary_size=50, embedding_layer=embedding)
    >>> logits = head(hidden, span_left=np.array([[1, 1]]),
    ...               span_right=np.array([[4, 4]]), span_offset=np.array([[0, 1]]))
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((1, 2, 50), 'float32')
    """

    def __init__(
        self,
        # The decoder's arguments (`TiedVocabularyDecoder`), then the head's own.
        vocabulary_size, embedding_layer=None, tied=None, embedding_dim=None,
        max_span_length=10,
        position_embedding_dim=None,
        intermediate_dim=None,
        # The settings of its dense layers and LayerNorms (`_set_head_settings`).
        activation="gelu", layer_norm_epsilon=1e-12, initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.max_span_length = int(max_span_length)
        self.position_embedding_dim = (
            int(position_embedding_dim) if position_embedding_dim else None
        )
        self.intermediate_dim = int(intermediate_dim) if intermediate_dim else None
        self._set_head_settings(activation, layer_norm_epsilon, initializer_range)

        # === Layers === (widths that default to the input's are made in build)
        self.position_embedding = None
        self.hidden_dense = None
        self.output_dense = None
        self.hidden_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="hidden_norm"
        )
        self.output_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="output_norm"
        )
        self._make_decoder(vocabulary_size, embedding_layer, tied, embedding_dim)

    def build(
        self,
        sequence_output_shape,
        span_left_shape=None,
        span_right_shape=None,
        span_offset_shape=None,
    ):
        hidden = sequence_output_shape[-1]
        position_width = self.position_embedding_dim or hidden
        intermediate = self.intermediate_dim or hidden
        width = self.embedding_dim or hidden
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.position_embedding = keras.layers.Embedding(
            self.max_span_length,
            position_width,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.hidden_dense = keras.layers.Dense(
            intermediate,
            activation=head_activation(self.activation),
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="hidden_dense",
        )
        self.output_dense = keras.layers.Dense(
            width,
            activation=head_activation(self.activation),
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="output_dense",
        )
        batch = sequence_output_shape[0]
        self.position_embedding.build((batch, None))
        self.hidden_dense.build((batch, None, 2 * hidden + position_width))
        self.hidden_norm.build((batch, None, intermediate))
        self.output_dense.build((batch, None, intermediate))
        self.output_norm.build((batch, None, width))
        self.decoder.build((batch, None, width))
        self.built = True

    def call(self, sequence_output, span_left, span_right, span_offset):
        offsets = ops.clip(ops.cast(span_offset, "int32"), 0, self.max_span_length - 1)
        x = ops.concatenate(
            [
                gather_positions(sequence_output, span_left),
                gather_positions(sequence_output, span_right),
                ops.cast(self.position_embedding(offsets), sequence_output.dtype),
            ],
            axis=-1,
        )
        x = self.hidden_norm(self.hidden_dense(x))
        x = self.output_norm(self.output_dense(x))
        return self.decoder(x)

    def compute_output_shape(
        self, sequence_output_shape, span_left_shape, span_right_shape, span_offset_shape
    ):
        return tuple(span_left_shape) + (self.vocabulary_size,)

    def compute_output_spec(self, sequence_output, span_left, span_right, span_offset):
        return keras.KerasTensor(
            tuple(span_left.shape) + (self.vocabulary_size,), dtype="float32"
        )

    def get_config(self):
        return {
            **super().get_config(),
            **self._head_config(),
            "max_span_length": self.max_span_length,
            "position_embedding_dim": self.position_embedding_dim,
            "intermediate_dim": self.intermediate_dim,
        }
