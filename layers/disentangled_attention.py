"""DeBERTa-v2/v3 disentangled attention: content and relative-position terms in the scores.

He et al. (2021), "DeBERTa: decoding-enhanced BERT with disentangled attention", as
Hugging Face `transformers`' `DebertaV2Model` computes it (v3 settings: `share_att_key`,
`pos_att_type="p2c|c2p"`, `norm_rel_ebd="layer_norm"`, no convolution). For a query
token i and a key token j with relative index r = δ(i, j) into a table P of 2·span
relative embeddings (layer-normalised, `RelativePositionEmbeddings`):

    score(i, j) = (q_i · k_j  +  q_i · Kp_r  +  k_j · Qp_r) / sqrt(3 · head_dim)
                  content→content  content→position  position→content

where Qp = query_dense(P) and Kp = key_dense(P): the relative embeddings are projected
by the block's own query and key layers (shared attention keys). δ(i, j) is the
bucketed distance i - j (`relative_position_index`): exact up to half the buckets, then
logarithmic up to `max_relative_positions`, clipped to the table. Distances are taken
from each token's position id, so in packed rows (positions restarting per example)
they are measured inside each example; pairs across examples are masked anyway.
"""

import math

import keras
from keras import ops

from nlpzoo.layers.self_attention import MultiHeadSelfAttention
from nlpzoo.layers.sequence_packing import gather_tokens
from nlpzoo.layers.serialization import register


def relative_span(position_buckets, max_relative_positions):
    """Half the number of rows of the relative-embedding table: `position_buckets` when
    bucketing (> 0), else `max_relative_positions`.

    >>> relative_span(256, 512), relative_span(0, 512)
    (256, 512)
    """
    return int(position_buckets) if position_buckets > 0 else int(max_relative_positions)


def log_bucket(distance, position_buckets, max_relative_positions):
    """DeBERTa's log buckets of signed distances (`make_log_bucket_position`).

    Distances within half the buckets (`mid`) stay as they are; longer ones map
    to `mid + ceil(log(|d| / mid) / log((max - 1) / mid) · (mid - 1))`, with the
    distance's sign. Computed in float32, as `transformers` does.

    >>> import numpy as np
    >>> np.asarray(log_bucket(np.array([-511, -3, 0, 4, 5, 100, 511]), 8, 512)).tolist()
    [-7, -3, 0, 4, 5, 6, 7]
    """
    distance = ops.convert_to_tensor(distance, "int32")
    mid = position_buckets // 2
    magnitude = ops.abs(distance)
    inside = magnitude <= mid
    # Where |d| < mid the log is never used: mid - 1 keeps it finite (as transformers).
    magnitude = ops.cast(ops.where(magnitude < mid, mid - 1, magnitude), "float32")
    # The log of the float32 ratio, as transformers takes it: at |d| = max - 1 the
    # quotient is then exactly 1, where a float64 log rounded to float32 can tip ceil().
    scale = ops.log(ops.convert_to_tensor((max_relative_positions - 1) / mid, "float32"))
    log_position = ops.ceil(ops.log(magnitude / mid) / scale * (mid - 1)) + mid
    bucketed = ops.cast(log_position, "int32") * ops.sign(distance)
    return ops.where(inside, distance, bucketed)


def relative_position_index(position_ids, position_buckets, max_relative_positions):
    """Rows of the relative-embedding table each (query, key) pair reads: [B, T, T] int32.

    `position_ids` [B, T] (or [T]) are each token's position in its example;
    the index of (i, j) is `clip(δ(p_i - p_j) + span, 0, 2·span - 1)` with δ
    the log buckets (`log_bucket`) when `position_buckets` > 0 and `span`
    from `relative_span`.

    >>> import numpy as np
    >>> index = relative_position_index(np.arange(4)[None], 0, 2)
    >>> np.asarray(index)[0].tolist()
    [[2, 1, 0, 0], [3, 2, 1, 0], [3, 3, 2, 1], [3, 3, 3, 2]]
    """
    position_ids = ops.convert_to_tensor(position_ids, "int32")
    if len(position_ids.shape) == 1:
        position_ids = position_ids[None]
    distance = position_ids[:, :, None] - position_ids[:, None, :]
    if position_buckets > 0:
        distance = log_bucket(distance, position_buckets, max_relative_positions)
    span = relative_span(position_buckets, max_relative_positions)
    return ops.clip(distance + span, 0, 2 * span - 1)


@register
class RelativePositionEmbeddings(keras.layers.Layer):
    """The 2·span relative-position embeddings every block reads, layer-normalised.

    DeBERTa-v2/v3's `encoder.rel_embeddings` with its `encoder.LayerNorm`
    (`norm_rel_ebd="layer_norm"`); `normalized()` returns the normalised
    table [2·span, hidden_dim] (it takes no input, so it is no `call`).

    Args:
        hidden_dim: width of the embeddings.
        position_buckets: log buckets (> 0), or 0 for exact clipped distances.
        max_relative_positions: longest distance told apart.
        layer_norm_epsilon, initializer_range: numerics and initialisation.

    Examples:
    >>> layer = RelativePositionEmbeddings(hidden_dim=8, position_buckets=4,
    ...                                    max_relative_positions=16)
    >>> tuple(layer.normalized().shape)
    (8, 8)
    """

    def __init__(self, hidden_dim, position_buckets, max_relative_positions,
                 layer_norm_epsilon=1e-7, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = int(hidden_dim)
        self.position_buckets = int(position_buckets)
        self.max_relative_positions = int(max_relative_positions)
        self.span = relative_span(self.position_buckets, self.max_relative_positions)
        if self.span < 1 or (self.position_buckets > 0 and self.max_relative_positions < 2):
            raise ValueError(f"position_buckets={position_buckets} and max_relative_positions="
                             f"{max_relative_positions} leave no relative position")
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.initializer_range = float(initializer_range)
        self.table = keras.layers.Embedding(
            2 * self.span, self.hidden_dim,
            embeddings_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy, name="table")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")

    def build(self, input_shape=None):
        self.table.build((2 * self.span,))
        self.layer_norm.build((2 * self.span, self.hidden_dim))
        self.built = True

    def normalized(self):
        """The layer-normalised table [2·span, hidden_dim], in the compute dtype."""
        if not self.built:
            self.build()
        return self.layer_norm(ops.cast(self.table.embeddings, self.compute_dtype))

    def get_config(self):
        config = super().get_config()
        config.update(hidden_dim=self.hidden_dim, position_buckets=self.position_buckets,
                      max_relative_positions=self.max_relative_positions,
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range)
        return config


@register
class DisentangledSelfAttention(MultiHeadSelfAttention):
    """Multi-head self-attention with DeBERTa's content→position and position→content terms.

    The projections, masking, float32 softmax, dropout and packed-token layout
    are `MultiHeadSelfAttention`'s (same weights, same names); the scores add
    the two relative terms of the module docstring, all three divided by
    sqrt(3 · head_dim). Called with `relative_embeddings` [2·span, hidden_dim]
    (`RelativePositionEmbeddings`) and `relative_index` [B or 1, T, T]
    (`relative_position_index`, on the rows' layout when packed).

    Args:
        hidden_dim, num_heads, dropout, initializer_range, lora_rank: as
            `MultiHeadSelfAttention`.
        position_dropout: dropout rate on the relative embeddings
            (DeBERTa's `pos_dropout`, its hidden dropout).

    Examples:
    >>> import numpy as np
    >>> layer = DisentangledSelfAttention(hidden_dim=8, num_heads=2)
    >>> table = RelativePositionEmbeddings(8, position_buckets=4,
    ...                                    max_relative_positions=8).normalized()
    >>> index = relative_position_index(np.arange(5)[None], 4, 8)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> out = layer(x, padding_mask=np.ones((2, 5)), relative_embeddings=table,
    ...             relative_index=index)
    >>> tuple(out.shape)
    (2, 5, 8)
    """

    def __init__(self, hidden_dim, num_heads, dropout=0.1, initializer_range=0.02,
                 lora_rank=0, position_dropout=0.0, **kwargs):
        super().__init__(hidden_dim, num_heads, dropout=dropout,
                         initializer_range=initializer_range, lora_rank=lora_rank, **kwargs)
        self.position_dropout = float(position_dropout)
        self.position_dropout_layer = keras.layers.Dropout(
            self.position_dropout, dtype=self.dtype_policy, name="position_dropout")

    def build(self, inputs_shape, padding_mask_shape=None, attention_mask_shape=None,
              token_rows_shape=None, token_slots_shape=None, relative_embeddings_shape=None,
              relative_index_shape=None):
        super().build(inputs_shape)

    def call(self, inputs, padding_mask=None, attention_mask=None, token_rows=None,
             token_slots=None, relative_embeddings=None, relative_index=None, training=None):
        if relative_embeddings is None or relative_index is None:
            raise ValueError("DisentangledSelfAttention needs relative_embeddings and "
                             "relative_index")

        def to_rows(x):  # [M, ...] → [R, L, ...], zeros at padding
            return x if token_rows is None else gather_tokens(x, token_rows)

        query, key, value = self._project_qkv(inputs, to_rows)  # [B, heads, T, d]
        relative = self.position_dropout_layer(relative_embeddings, training=training)[None]
        position_query = self._split_heads(self.query_dense(relative))  # [1, heads, 2S, d]
        position_key = self._split_heads(self.key_dense(relative))
        batch, length = ops.shape(query)[0], ops.shape(query)[2]
        index = ops.broadcast_to(ops.cast(relative_index, "int32")[:, None],
                                 (batch, self.num_heads, length, length))

        def transposed(x):
            return ops.transpose(x, (0, 1, 3, 2))

        content = ops.matmul(query, transposed(key))
        # content→position: q_i · Kp[δ(i, j)]
        to_position = ops.take_along_axis(
            ops.cast(ops.matmul(query, transposed(position_key)), "float32"), index, axis=-1)
        # position→content: k_j · Qp[δ(i, j)], gathered per key then turned to [query, key]
        from_position = transposed(ops.take_along_axis(
            ops.cast(ops.matmul(key, transposed(position_query)), "float32"),
            transposed(index), axis=-1))
        scores = ((ops.cast(content, "float32") + to_position + from_position)
                  / math.sqrt(3 * self.head_dim))
        return self._attend(scores, value, padding_mask, attention_mask, token_slots, training)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None,
                             attention_mask_shape=None, token_rows_shape=None,
                             token_slots_shape=None, relative_embeddings_shape=None,
                             relative_index_shape=None):
        return tuple(inputs_shape[:-1]) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(position_dropout=self.position_dropout)
        return config
