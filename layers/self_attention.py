"""Multi-head self-attention with a padding mask and a float32 softmax."""

import math

import keras
from keras import ops

from nlpzoo.layers.lora_dense import LoraDense
from nlpzoo.layers.rotary_embedding import apply_rotary
from nlpzoo.layers.sequence_packing import gather_tokens, tokens_from_rows
from nlpzoo.layers.serialization import register
from nlpzoo.layers.windowed_attention import local_attention_in_blocks, window_mask

# Added to the scores of padded keys. Finite so that a row with no real key
# gives a uniform distribution instead of NaN; large enough that exp() is 0.
_MASKED_SCORE = -1e9


@register
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads.

    Padded keys (where `padding_mask` is 0) get no attention weight; an
    `attention_mask` [batch, query, key] (1: may attend), when given, is used
    instead, e.g. block-diagonal for packed rows. The scores, softmax and
    dropout on the attention probabilities are computed in float32 whatever
    the dtype policy, so the layer is safe under `mixed_float16` and
    `mixed_bfloat16`. Query, key, value and output projections are plain
    `Dense` layers of width `hidden_dim`, the layout of BERT checkpoints.
    With `lora_rank` > 0 the query and value projections carry Keras's LoRA
    (`LoraDense`): a frozen kernel plus a trainable rank-`lora_rank` update,
    as in Hu et al. (2021), who found those two projections the best use of a
    fixed budget.

    Args:
        hidden_dim: width of inputs and outputs; divisible by `num_heads`.
        num_heads: number of attention heads.
        dropout: dropout rate on the attention probabilities.
        initializer_range: stddev of the truncated-normal initialiser.
        lora_rank: rank of the LoRA updates of the query and value
            projections (0: none).
        use_bias: whether the four projections have biases (ModernBERT's
            have none).
        rope_theta: > 0: rotary position embeddings of this base on the
            query and key (`layers.rotary_embedding`), at `position_ids`
            (default 0, 1, 2, ...); 0: none (positions come from the
            embeddings).
        window: > 0: each query sees only keys at most `window` positions
            away (sliding-window attention, `layers.windowed_attention`),
            measured in `position_ids` when given (packed rows: inside each
            example); 0: every key.

    Local attention (`window` > 0) without an `attention_mask` runs block by
    block (`local_attention_in_blocks`, memory linear in the length) when the
    input is longer than two blocks of `window` tokens or its length is not
    known when traced; shorter inputs and packed rows use the dense band.
    `MultiHeadSelfAttention.local_blocks` ("auto", True, False; a class
    attribute read when a call is traced) forces one or the other.

    `MultiHeadSelfAttention.fuse_qkv = True` (a class attribute, read when a
    call is traced) makes every instance without LoRA compute query, key and
    value with one matmul on the three kernels concatenated at call time. It
    is off by default: on a 2-core AMD EPYC the fused forward and backward
    pass cost about 1.1x (float32) to 1.2x (bfloat16) the three separate
    ones, because TensorFlow copies the [B, T, 3H] activations and their
    gradients once more to split and assemble them
    (docs/encoder_step_profile.md).

    Packed rows may also come as their real tokens alone ([M, hidden_dim], no
    padding: what a packing encoder's position-wise layers compute on), with
    `token_rows` [R, L] (each row slot's token number, M at padding) and
    `token_slots` [M] (each token's slot in the flattened rows): the
    projections then run on the M tokens, attention on the R rows (with the
    `attention_mask` of the rows), and the output is [M, hidden_dim] again
    (`layers.sequence_packing.PackedBatch` makes the three).

    Examples:
    >>> import numpy as np
    >>> layer = MultiHeadSelfAttention(hidden_dim=8, num_heads=2)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    >>> tuple(layer(x, padding_mask=mask).shape)
    (2, 5, 8)
    """

    # One [H, 3H] matmul for query, key and value when LoRA is off. Off: on
    # CPU it measured slower (see the class docstring); on for GPUs to try.
    fuse_qkv = False
    # Local attention block by block: "auto" (see the class docstring), True or False.
    local_blocks = "auto"

    def __init__(
        self, hidden_dim, num_heads, dropout=0.1, initializer_range=0.02, lora_rank=0,
        use_bias=True, rope_theta=0.0, window=0, **kwargs
    ):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(
                f"hidden_dim={hidden_dim} is not divisible by num_heads={num_heads}"
            )
        self.hidden_dim = int(hidden_dim)
        self.num_heads = int(num_heads)
        self.head_dim = self.hidden_dim // self.num_heads
        self.dropout = float(dropout)
        self.initializer_range = float(initializer_range)
        self.lora_rank = int(lora_rank or 0)
        if self.lora_rank < 0:
            raise ValueError(f"lora_rank must be >= 0, got {lora_rank}")
        self.use_bias = bool(use_bias)
        self.rope_theta = float(rope_theta or 0.0)
        self.window = int(window or 0)
        if self.rope_theta < 0 or self.window < 0:
            raise ValueError(f"rope_theta and window must be >= 0, got {rope_theta} and {window}")
        if self.rope_theta and self.head_dim % 2:
            raise ValueError(f"rotary positions need an even head size, got "
                             f"{hidden_dim} / {num_heads} = {self.head_dim}")

        # === Layers ===
        def dense(name, lora_rank=0):
            options = dict(
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range
                ),
                dtype=self.dtype_policy,
                name=name,
                use_bias=self.use_bias,
            )
            if lora_rank:
                return LoraDense(self.hidden_dim, lora_rank=lora_rank, **options)
            return keras.layers.Dense(self.hidden_dim, **options)

        self.query_dense = dense("query", self.lora_rank)
        self.key_dense = dense("key")
        self.value_dense = dense("value", self.lora_rank)
        self.output_dense = dense("output")
        # float32 whatever the policy: it drops softmax outputs before their one
        # cast to the compute dtype (TF's bfloat16 elementwise ops are slow on
        # CPU; see docs/encoder_step_profile.md). It has no weights.
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype="float32", name="attention_dropout"
        )

    def build(self, inputs_shape, padding_mask_shape=None, attention_mask_shape=None,
              token_rows_shape=None, token_slots_shape=None, position_ids_shape=None):
        for layer in (self.query_dense, self.key_dense, self.value_dense):
            layer.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (self.hidden_dim,))
        self.built = True

    def _split_heads(self, x):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, length, self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))  # [B, heads, T, head_dim]

    def _project_qkv(self, inputs, to_rows):
        """Query, key and value, each [B, heads, T, head_dim]; `to_rows` maps
        projections of `inputs` to [B, T, ...] (the identity unless `inputs`
        are tokens without their padding).

        With `fuse_qkv` on and no LoRA, the three projections are one
        [B·T, H] × [H, 3H] matmul on the three kernels concatenated at call
        time (a copy of 3·H² numbers, small next to the matmul), so the
        weights keep their names and shapes and each kernel gets its own
        gradient through the concatenation.
        """
        if self.lora_rank or not self.fuse_qkv:
            return tuple(self._split_heads(to_rows(dense(inputs))) for dense in
                         (self.query_dense, self.key_dense, self.value_dense))
        projections = (self.query_dense, self.key_dense, self.value_dense)
        # Under a mixed policy Keras's autocast scope (entered by __call__)
        # reads each float32 variable as the compute dtype, exactly as Dense
        # sees it: each kernel is cast once and concatenated in bfloat16/float16,
        # so the matmul never runs in float32. Keras 3 ignores autocast=False on
        # a top-level layer, so casting after the concatenation instead could
        # not be relied on.
        kernel = ops.concatenate([p.kernel for p in projections], axis=-1)
        qkv = ops.matmul(inputs, kernel)
        if self.use_bias:
            qkv = ops.add(qkv, ops.concatenate([p.bias for p in projections], axis=-1))
        qkv = to_rows(qkv)  # [B, T, 3H]
        batch, length = ops.shape(qkv)[0], ops.shape(qkv)[1]
        qkv = ops.reshape(qkv, (batch, length, 3, self.num_heads, self.head_dim))
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # one transpose for all three
        # unstack (not qkv[i]): its gradient is one stack, not three padded slices.
        return tuple(ops.unstack(qkv, 3, axis=0))

    def _in_blocks(self, length, attention_mask):
        """Whether local attention runs block by block (see the class docstring)."""
        if not self.window or attention_mask is not None:
            return False
        if self.local_blocks != "auto":
            return bool(self.local_blocks)
        return length is None or length > 2 * self.window

    def call(self, inputs, padding_mask=None, attention_mask=None, token_rows=None,
             token_slots=None, training=None, position_ids=None):
        def to_rows(x):  # [M, ...] → [R, L, ...], zeros at padding
            return x if token_rows is None else gather_tokens(x, token_rows)

        query, key, value = self._project_qkv(inputs, to_rows)
        length = query.shape[2]
        if (self.rope_theta or self.window) and position_ids is None:
            position_ids = ops.arange(ops.shape(query)[2], dtype="int32")[None, :]
        if self.rope_theta:
            query = apply_rotary(query, position_ids, self.rope_theta)
            key = apply_rotary(key, position_ids, self.rope_theta)

        if self._in_blocks(length, attention_mask):
            if padding_mask is None:
                padding_mask = ops.ones((ops.shape(query)[0], ops.shape(query)[2]), "int32")
            scale = ops.cast(1.0 / math.sqrt(self.head_dim), query.dtype)
            context = local_attention_in_blocks(
                query * scale, key, value, padding_mask, self.window,
                dropout=lambda p: self.dropout_layer(p, training=training),
                compute_dtype=self.compute_dtype)
            return self._output(context, token_slots)
        scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        scores = ops.cast(scores, "float32") / math.sqrt(self.head_dim)
        return self._attend(scores, value, padding_mask, attention_mask, token_slots, training,
                            position_ids)

    def _attend(self, scores, value, padding_mask, attention_mask, token_slots, training,
                position_ids=None):
        """The output from float32 `scores` [B, heads, T, T]: masking, softmax, dropout,
        the weighted values and the output projection (shared by attention variants that
        compute their scores otherwise, e.g. `DisentangledSelfAttention`). With `window`
        > 0 it also masks keys more than `window` positions (of `position_ids`) away: the
        dense band; `call` takes the block-by-block path before any scores exist."""
        allowed = None
        if attention_mask is not None:
            allowed = ops.cast(attention_mask, "bool")
        elif padding_mask is not None:
            allowed = ops.cast(padding_mask, "bool")[:, None, :]
        if self.window:  # inside each example: position ids restart per example
            if position_ids is None:
                position_ids = ops.arange(ops.shape(scores)[2], dtype="int32")[None, :]
            band = window_mask(position_ids, position_ids, self.window)
            allowed = band if allowed is None else ops.logical_and(allowed, band)
        if allowed is not None:
            scores = ops.where(allowed[:, None, :, :], scores, _MASKED_SCORE)
        probabilities = ops.softmax(scores, axis=-1)
        probabilities = ops.cast(self.dropout_layer(probabilities, training=training),
                                 self.compute_dtype)
        return self._output(ops.matmul(probabilities, value), token_slots)

    def _output(self, context, token_slots):
        """Heads [B, heads, T, head_dim] merged and projected (on the real tokens when packed)."""
        context = ops.transpose(context, (0, 2, 1, 3))
        batch, length = ops.shape(context)[0], ops.shape(context)[1]
        context = ops.reshape(context, (batch, length, self.hidden_dim))
        if token_slots is not None:  # back to the real tokens, before the projection
            context = tokens_from_rows(context, token_slots)
        return self.output_dense(context)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None,
                             attention_mask_shape=None, token_rows_shape=None,
                             token_slots_shape=None, position_ids_shape=None):
        return tuple(inputs_shape[:-1]) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "initializer_range": self.initializer_range,
                "lora_rank": self.lora_rank,
                "use_bias": self.use_bias,
                "rope_theta": self.rope_theta,
                "window": self.window,
            }
        )
        return config
