"""One transformer encoder block: self-attention and feed-forward sublayers."""

import keras
from keras import ops

from nlpzoo.layers.adapter import Adapter
from nlpzoo.layers.disentangled_attention import DisentangledSelfAttention
from nlpzoo.layers.gated_feedforward import gated_gelu
from nlpzoo.layers.self_attention import MultiHeadSelfAttention
from nlpzoo.layers.sequence_packing import dropout_as_in_rows
from nlpzoo.layers.serialization import register


# Attention with relative positions in its scores (None: plain scaled dot-product).
RELATIVE_ATTENTIONS = (None, "disentangled")


@register
class TransformerEncoderBlock(keras.layers.Layer):
    """Self-attention then a GELU feed-forward network, each with a residual.

    Post-LN (BERT, the default) normalises after each residual sum; pre-LN
    (`norm_first=True`) normalises the input of each sublayer, which trains
    more stably in deep stacks. GELU is the exact erf form by default, as in
    BERT and Hugging Face `transformers`; `gelu_approximate=True` selects the
    tanh approximation used by KerasHub. Under a mixed-precision policy GELU is
    computed in float32 (like the layer norms and the attention softmax).

    With `adapter_size` > 0 a Houlsby `Adapter` follows each sublayer (on its
    output, before the residual sum), and with `lora_rank` > 0 the attention's
    query and value projections carry LoRA updates; both start as the
    identity, so the block computes what it did without them.
    `attention_mask` [batch, query, key], when given, replaces the padding
    mask in attention (see `MultiHeadSelfAttention`). With `token_rows` and
    `token_slots` the input is packed rows' real tokens alone, [M, hidden_dim]:
    everything but the attention scores computes on no padding (see
    `MultiHeadSelfAttention`), and the dropout masks are those the packed rows
    would get (`layers.sequence_packing.dropout_as_in_rows`), so that the same
    seed trains the same weights in either layout.

    Args:
        hidden_dim: width of inputs and outputs.
        num_heads: attention heads.
        intermediate_dim: width of the feed-forward hidden layer.
        dropout: dropout rate after each sublayer.
        attention_dropout: dropout rate on attention probabilities.
        norm_first: pre-LN if True, post-LN if False.
        gelu_approximate: tanh approximation of GELU if True.
        layer_norm_epsilon: epsilon of the layer norms.
        initializer_range: stddev of the truncated-normal initialiser.
        adapter_size: bottleneck width of the adapters (0: none).
        lora_rank: rank of the attention's LoRA updates (0: none).
        relative_attention: None (scaled dot-product attention) or
            "disentangled": DeBERTa-v2/v3's `DisentangledSelfAttention`, called
            with the encoder's `relative_embeddings` and `relative_index`.
        gated_feedforward: GeGLU (ModernBERT): the intermediate projection
            is 2 × intermediate_dim wide and gelu(first half) gates the
            second half (`layers.gated_feedforward`).
        use_bias: whether the dense layers and layer norms have biases
            (ModernBERT's have none).
        attention_norm: False: no layer norm before the attention (pre-LN
            only; ModernBERT's first layer, whose input is the embeddings'
            layer norm already).
        rope_theta, attention_window: the attention's rotary base and window
            (see `MultiHeadSelfAttention`'s `rope_theta` and `window`).

    `position_ids` [B, T] (packed rows: restarting per example) place the
    rotary angles and the window; default 0, 1, 2, ...

    Examples:
    >>> import numpy as np
    >>> block = TransformerEncoderBlock(hidden_dim=8, num_heads=2,
    ...                                 intermediate_dim=16)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(block(x, padding_mask=np.ones((2, 5))).shape)
    (2, 5, 8)
    """

    # On packed rows' real tokens alone, the dropout masks are drawn over the rows' shape and
    # gathered (the same seed, the same model as on the rows); False draws them over the
    # tokens (as 6e66df7 did). Read when a call is traced: an instance may override it, to
    # measure one against the other (benchmarks/token_dropout.py).
    dropout_masks_from_rows = True

    def __init__(
        self,
        hidden_dim,
        num_heads,
        intermediate_dim,
        dropout=0.1,
        attention_dropout=None,
        norm_first=False,
        gelu_approximate=False,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        adapter_size=0,
        lora_rank=0,
        relative_attention=None,
        gated_feedforward=False,
        use_bias=True,
        attention_norm=True,
        rope_theta=0.0,
        attention_window=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_dim = int(hidden_dim)
        self.num_heads = int(num_heads)
        self.intermediate_dim = int(intermediate_dim)
        self.dropout = float(dropout)
        self.attention_dropout = float(
            dropout if attention_dropout is None else attention_dropout
        )
        self.norm_first = bool(norm_first)
        self.gelu_approximate = bool(gelu_approximate)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.initializer_range = float(initializer_range)
        self.adapter_size = int(adapter_size or 0)
        self.lora_rank = int(lora_rank or 0)
        if relative_attention not in RELATIVE_ATTENTIONS:
            raise ValueError(f"relative_attention must be one of {RELATIVE_ATTENTIONS}, got "
                             f"{relative_attention!r}")
        self.relative_attention = relative_attention
        self.gated_feedforward = bool(gated_feedforward)
        self.use_bias = bool(use_bias)
        self.rope_theta = float(rope_theta or 0.0)
        self.attention_window = int(attention_window or 0)
        if not attention_norm and not self.norm_first:
            raise ValueError("attention_norm=False needs norm_first=True (a post-LN block "
                             "normalises the attention's output)")
        if self.relative_attention and (self.rope_theta or self.attention_window):
            raise ValueError("relative_attention takes no rope_theta or attention_window")

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        attention_options = {}
        attention_class = MultiHeadSelfAttention
        if self.relative_attention == "disentangled":
            attention_class = DisentangledSelfAttention
            # DeBERTa drops the relative embeddings at its hidden dropout rate.
            attention_options = dict(position_dropout=self.dropout)
        self.attention = attention_class(
            self.hidden_dim,
            self.num_heads,
            dropout=self.attention_dropout,
            initializer_range=initializer_range,
            lora_rank=self.lora_rank,
            use_bias=self.use_bias,
            rope_theta=self.rope_theta,
            window=self.attention_window,
            dtype=self.dtype_policy,
            name="attention",
            **attention_options,
        )
        self.attention_norm = None
        if attention_norm:
            self.attention_norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon,
                center=self.use_bias,
                dtype=self.dtype_policy,
                name="attention_norm",
            )
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_dim * (2 if self.gated_feedforward else 1),
            kernel_initializer=initializer,
            use_bias=self.use_bias,
            dtype=self.dtype_policy,
            name="intermediate",
        )
        self.output_dense = keras.layers.Dense(
            self.hidden_dim,
            kernel_initializer=initializer,
            use_bias=self.use_bias,
            dtype=self.dtype_policy,
            name="output",
        )
        self.feedforward_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            center=self.use_bias,
            dtype=self.dtype_policy,
            name="feedforward_norm",
        )
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        self.attention_adapter = self.feedforward_adapter = None
        if self.adapter_size:
            def adapter(name):
                return Adapter(self.adapter_size, gelu_approximate=self.gelu_approximate,
                               initializer_range=initializer_range,
                               dtype=self.dtype_policy, name=name)

            self.attention_adapter = adapter("attention_adapter")
            self.feedforward_adapter = adapter("feedforward_adapter")

    def build(self, inputs_shape, padding_mask_shape=None, attention_mask_shape=None,
              token_rows_shape=None, token_slots_shape=None, relative_embeddings_shape=None,
              relative_index_shape=None, position_ids_shape=None):
        self.attention.build(inputs_shape)
        if self.attention_norm is not None:
            self.attention_norm.build(inputs_shape)
        self.feedforward_norm.build(inputs_shape)
        self.intermediate_dense.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (self.intermediate_dim,))
        for adapter in (self.attention_adapter, self.feedforward_adapter):
            if adapter is not None:
                adapter.build(inputs_shape)
        self.built = True

    def _adapted(self, adapter, x):
        return x if adapter is None else adapter(x)

    def _feedforward(self, x):
        x = self.intermediate_dense(x)
        if self.gated_feedforward:
            return self.output_dense(gated_gelu(x, approximate=self.gelu_approximate))
        # GELU in float32 under mixed precision: more accurate, and on CPU about
        # half the cost of TensorFlow's bfloat16 erfc/tanh (emulated
        # elementwise), casts included (docs/encoder_step_profile.md).
        x = ops.cast(ops.gelu(ops.cast(x, "float32"), approximate=self.gelu_approximate),
                     self.compute_dtype)
        return self.output_dense(x)

    def call(self, inputs, padding_mask=None, attention_mask=None, token_rows=None,
             token_slots=None, training=None, relative_embeddings=None, relative_index=None,
             position_ids=None):
        x = inputs
        where = dict(padding_mask=padding_mask, attention_mask=attention_mask,
                     token_rows=token_rows, token_slots=token_slots)
        if self.relative_attention:
            where.update(relative_embeddings=relative_embeddings, relative_index=relative_index)
        if position_ids is not None and not self.relative_attention:
            where["position_ids"] = position_ids

        def dropout(y):
            if token_slots is None or not self.dropout_masks_from_rows:
                return self.dropout_layer(y, training=training)
            # On the real tokens alone: the mask the rows would get (same seed, same model).
            return dropout_as_in_rows(self.dropout_layer, y, token_rows, token_slots,
                                      training=training)

        if self.norm_first:
            normed = x if self.attention_norm is None else self.attention_norm(x)
            attended = self.attention(normed, **where, training=training)
            attended = self._adapted(self.attention_adapter, dropout(attended))
            x = x + attended
            transformed = self._feedforward(self.feedforward_norm(x))
            transformed = self._adapted(self.feedforward_adapter, dropout(transformed))
            return x + transformed
        # Houlsby et al. place each adapter on the sublayer's output, after its
        # dropout and before the residual sum and layer norm.
        attended = self.attention(x, **where, training=training)
        attended = self._adapted(self.attention_adapter, dropout(attended))
        x = self.attention_norm(x + attended)
        transformed = self._feedforward(x)
        transformed = self._adapted(self.feedforward_adapter, dropout(transformed))
        return self.feedforward_norm(x + transformed)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None,
                             attention_mask_shape=None, token_rows_shape=None,
                             token_slots_shape=None, relative_embeddings_shape=None,
                             relative_index_shape=None, position_ids_shape=None):
        return tuple(inputs_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "norm_first": self.norm_first,
                "gelu_approximate": self.gelu_approximate,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
                "adapter_size": self.adapter_size,
                "lora_rank": self.lora_rank,
                "relative_attention": self.relative_attention,
                "gated_feedforward": self.gated_feedforward,
                "use_bias": self.use_bias,
                "attention_norm": self.attention_norm is not None,
                "rope_theta": self.rope_theta,
                "attention_window": self.attention_window,
            }
        )
        return config
