"""Token + position + segment embeddings: the embedding side of the BERT family.

One layer covers every BERT-family embedding scheme through plain options, not
family names (the families themselves are data: `zoo.presets` and
`zoo.checkpoints.hf_families`):

- BERT, cased/multilingual BERT: learned absolute positions from 0, two segments;
- RoBERTa / XLM-R: positions offset by `padding_idx + 1` (`position_offset=2`),
  one segment type (`num_segments=1`: segment ids are ignored);
- DistilBERT: no segment table at all (`num_segments=0`);
- ALBERT / ELECTRA: tables `embedding_dim` wide, layer-normalised at that width
  and then projected to `hidden_dim`.
- ModernBERT: no position table (`absolute_positions=False`: its rotary
  positions live in attention), no segment table, a layer norm without bias
  (`use_bias=False`).

Position schemes that live in attention (DeBERTa's relative positions,
ModernBERT's rotary ones) plug in as further values of these options (a
position scheme without an absolute table), read here and by the attention;
the tasks only ever see `token_ids`, `segment_ids`, `padding_mask`.
"""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


@register
class TextEmbeddings(keras.layers.Layer):
    """Sums token, learned absolute position and segment embeddings.

    The sum is layer-normalised and passed through dropout. With an
    `embedding_dim` smaller than `hidden_dim` the embeddings are factorised as
    in ALBERT (and ELECTRA): the tables have `embedding_dim` columns and a
    dense projection maps the normalised sum to `hidden_dim`.

    Position `i` of an example reads row `position_offset + i` of a table of
    `max_sequence_length + position_offset` rows (RoBERTa's `padding_idx + 1`
    offset: 2, with 514 rows for 512 usable positions); given `position_ids`
    (packed rows, restarting per example) are offset the same way. With
    `num_segments=0` there is no segment table (DistilBERT); with
    `num_segments=1` the one row is added to every token and the segment ids
    are ignored (RoBERTa, whose pair inputs carry no segment information).

    Args:
        vocabulary_size: number of token ids.
        hidden_dim: width of the output.
        max_sequence_length: number of usable learned positions.
        num_segments: number of segment (token type) ids; 0: no segment
            table, 1: segment ids ignored.
        position_offset: the first row of the position table a token
            reads (0: BERT; 2: RoBERTa); the table has this many more rows.
        embedding_dim: width of the tables; defaults to `hidden_dim`.
        dropout: dropout rate after the layer norm.
        layer_norm_epsilon: epsilon of the layer norm (BERT uses 1e-12).
        initializer_range: stddev of the truncated-normal initialiser.
        absolute_positions: False: no position table (positions live in the
            attention instead: DeBERTa's relative positions, as its
            `position_biased_input=False`, or ModernBERT's rotary ones);
            `position_ids` are then ignored.
        use_bias: whether the layer norm has a bias (ModernBERT's has none).

    Examples:
    >>> import numpy as np
    >>> layer = TextEmbeddings(vocabulary_size=100, hidden_dim=8,
    ...                        max_sequence_length=16)
    >>> token_ids = np.array([[2, 5, 7, 3]])
    >>> segment_ids = np.zeros_like(token_ids)
    >>> tuple(layer(token_ids, segment_ids).shape)
    (1, 4, 8)
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        embedding_dim=None,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        position_offset=0,
        absolute_positions=True,
        use_bias=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.hidden_dim = int(hidden_dim)
        self.max_sequence_length = int(max_sequence_length)
        self.num_segments = int(num_segments)
        self.position_offset = int(position_offset)
        if self.num_segments < 0 or self.position_offset < 0:
            raise ValueError(f"num_segments and position_offset must be >= 0, got "
                             f"{num_segments} and {position_offset}")
        self.embedding_dim = int(embedding_dim or hidden_dim)
        self.dropout = float(dropout)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.initializer_range = float(initializer_range)
        self.absolute_positions = bool(absolute_positions)
        self.use_bias = bool(use_bias)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size,
            self.embedding_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.position_embedding = None
        if self.absolute_positions:
            self.position_embedding = keras.layers.Embedding(
                self.max_sequence_length + self.position_offset,
                self.embedding_dim,
                embeddings_initializer=initializer,
                dtype=self.dtype_policy,
                name="position_embedding",
            )
        self.segment_embedding = None
        if self.num_segments:
            self.segment_embedding = keras.layers.Embedding(
                self.num_segments,
                self.embedding_dim,
                embeddings_initializer=initializer,
                dtype=self.dtype_policy,
                name="segment_embedding",
            )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            center=self.use_bias,
            dtype=self.dtype_policy,
            name="layer_norm",
        )
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        self.projection = None
        if self.embedding_dim != self.hidden_dim:
            self.projection = keras.layers.Dense(
                self.hidden_dim,
                kernel_initializer=initializer,
                dtype=self.dtype_policy,
                name="projection",
            )

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        if self.position_embedding is not None:
            self.position_embedding.build((self.max_sequence_length + self.position_offset,))
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.embedding_dim,))
        if self.projection is not None:
            self.projection.build(tuple(token_ids_shape) + (self.embedding_dim,))
        self.built = True

    def _positions(self, token_ids, position_ids):
        if position_ids is None:
            length = ops.shape(token_ids)[1]
            return ops.expand_dims(self.position_embedding(
                ops.arange(length, dtype="int32") + self.position_offset), 0)
        # [B, T], e.g. restarting at every example of a packed row
        if self.position_offset:
            position_ids = position_ids + self.position_offset
        return self.position_embedding(position_ids)

    def call(self, token_ids, segment_ids=None, position_ids=None, training=None):
        embeddings = self.token_embedding(token_ids)
        if self.position_embedding is not None:
            embeddings = embeddings + self._positions(token_ids, position_ids)
        if self.num_segments == 1:  # one segment type: every token gets its row
            embeddings = embeddings + ops.cast(self.segment_embedding.embeddings[0],
                                               embeddings.dtype)
        elif self.num_segments:
            if segment_ids is None:
                segment_ids = ops.zeros_like(token_ids)
            embeddings = embeddings + self.segment_embedding(segment_ids)
        embeddings = self.layer_norm(embeddings)
        if self.projection is not None:
            embeddings = self.projection(embeddings)
        return self.dropout_layer(embeddings, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "embedding_dim": self.embedding_dim,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
                "position_offset": self.position_offset,
                "absolute_positions": self.absolute_positions,
                "use_bias": self.use_bias,
            }
        )
        return config
