"""A BERT-family encoder: embeddings, a stack of blocks and a first-token pooler.

The family seam. Every member of the BERT family is this one layer with
different option values, so every task, packing and adaptation option works on
all of them unchanged (inputs `token_ids`, `segment_ids`, `padding_mask`;
outputs `sequence_output`, `pooled_output`, `hidden_states`):

    family        embeddings (`TextEmbeddings`)                blocks            pooler
    BERT          positions from 0, 2 segments                 post-LN, gelu     tanh
    RoBERTa/XLM-R position_offset=2, num_segments=1            post-LN, gelu     tanh
    DistilBERT    num_segments=0                               post-LN, gelu     relu*
    ALBERT        embedding_dim < hidden_dim (projection)      shared, gelu_new  tanh
    ELECTRA       embedding_dim < hidden_dim (projection)      post-LN, gelu     gelu*
    DeBERTa-v3    absolute_positions=False, num_segments=0     post-LN, gelu,    gelu*
                                                               relative_attention=
                                                               "disentangled"
    ModernBERT    absolute_positions=False (rotary:            pre-LN, GeGLU,    gelu**
                  global_rope_theta > 0), num_segments=0,      rotary, local/global
                  use_bias=False
    (* the pooler of the family's classification head: DistilBERT's
    `pre_classifier`, ELECTRA's `ElectraClassificationHead.dense`, DeBERTa's
    `ContextPooler`.
    ** ModernBERT's `ModernBertPredictionHead`: the dense + gelu and, with
    `pooler_norm=True`, the LayerNorm that follows it there.)

DeBERTa-v3's positions live in attention (`layers.disentangled_attention`): one
table of relative embeddings (`position_buckets`, `max_relative_positions`) is
layer-normalised once per call and read by every block, at the bucketed distance
of each token pair's position ids (restarting per example when packed).

ModernBERT's blocks are options of the same blocks: `norm_first=True` with
the final norm, `gated_feedforward=True` (GeGLU), `use_bias=False` (no bias
in any dense layer or layer norm), `first_attention_norm=False` (its layer
0 reads the embeddings' norm directly), rotary positions in attention
(`global_rope_theta`, `local_rope_theta`) and every
`global_attn_every_n_layers`-th layer global, the others a sliding window of
`local_attention` tokens (`local_attention // 2` each side, as transformers).
Packed, the rotary angles and the windows are measured inside each example
(per-example position ids), never across.

The layers know options, never family names: what makes a family (its option
values, its checkpoint's tensor names, its config.json) is data in one table,
`zoo.checkpoints.hf_families`, and in the presets (`zoo.presets`). A family
whose positions live in attention (DeBERTa-v3's relative positions, ModernBERT's
rotary ones and local/global windows) adds option values here and in
`TransformerEncoderBlock`/`MultiHeadSelfAttention` (position ids are already
computed per example for packing, and would be passed down to the attention),
plus a row of that table; tasks do not change.
"""

import inspect

import keras
from keras import ops

from nlpzoo.layers.disentangled_attention import (
    RelativePositionEmbeddings,
    relative_position_index,
)
from nlpzoo.layers.embeddings import TextEmbeddings
from nlpzoo.layers.sequence_packing import PackedBatch
from nlpzoo.layers.serialization import register
from nlpzoo.layers.transformer_block import TransformerEncoderBlock


# The pooler's activations (Keras names; "gelu" is Keras's exact erf form).
POOLER_ACTIVATIONS = ("tanh", "relu", "gelu")


@register
class TransformerEncoder(keras.layers.Layer):
    """Embeddings followed by `num_layers` transformer blocks and a pooler.

    Called with `token_ids`, `segment_ids` and `padding_mask` (KerasHub's input
    names) it returns a dict:
    - `sequence_output` [B, T, hidden_dim]: the last block's output;
    - `pooled_output` [B, hidden_dim]: activation(dense(first token)), BERT's
      pooler with `pooler_activation` (tanh; relu or gelu for the families
      whose classification head has that activation);
    - `hidden_states`: a list of num_layers + 1 tensors [B, T, hidden_dim], the
      embeddings output then each block's output, for layer mixing.

    `share_layers=True` applies one block `num_layers` times (ALBERT's
    cross-layer parameter sharing). With `norm_first=True` a final layer norm
    follows the stack, as pre-LN transformers need.

    Parameter-efficient fine-tuning: `adapter_size` > 0 puts Houlsby adapters
    in every block, `lora_rank` > 0 LoRA updates on every block's query and
    value projections. Both start as the identity, and with either only what
    the method trains stays trainable (`adaptation_weights`): the adapters
    and every LayerNorm (Houlsby et al. 2019), and the LoRA factors (Hu et
    al. 2021); the rest of the encoder is frozen, the pooler included.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim:
            the shape of the encoder.
        max_sequence_length: number of usable learned positions.
        num_segments: number of segment ids (0: no segment table, as
            DistilBERT; 1: segment ids ignored, as RoBERTa).
        embedding_dim: factorised embedding width (ALBERT); default hidden_dim.
        dropout, attention_dropout: dropout rates.
        norm_first, gelu_approximate: see `TransformerEncoderBlock`.
        share_layers: reuse one block for every layer.
        layer_norm_epsilon, initializer_range: numerics and initialisation.
        adapter_size: bottleneck width of the adapters (0: none).
        lora_rank: rank of the LoRA updates (0: none).
        pack_length: pack short examples into rows of this many tokens
            (0: no packing; see the `pack_length` property).
        position_offset: first position-table row a token reads (RoBERTa's
            padding_idx + 1 = 2; see `TextEmbeddings`).
        pooler_activation: the pooler's activation: "tanh" (BERT, RoBERTa,
            ALBERT), "relu" (DistilBERT), "gelu" (ELECTRA, DeBERTa, ModernBERT;
            exact erf GELU).
        pooler_norm: a LayerNorm (this encoder's epsilon; a bias when
            `use_bias`) after the pooler's activation: ModernBERT's prediction
            head, whose task heads over tokens (tagger, question answering)
            put one like it over every token (`layers.prediction_transform`).
        absolute_positions: False: no learned absolute positions at the input
            (DeBERTa's `position_biased_input=False`; ModernBERT, whose
            positions are rotary).
        relative_attention: None, or "disentangled": DeBERTa-v2/v3's
            disentangled attention with shared keys and layer-normalised
            relative embeddings; the embeddings of padding are zeroed, as
            DeBERTa does.
        position_buckets: log buckets of relative distances (DeBERTa-v3: 256;
            <= 0: exact distances, clipped at `max_relative_positions`).
        max_relative_positions: longest distance told apart (< 1: as
            `max_sequence_length`, as DeBERTa's -1).
        global_rope_theta: > 0: rotary position embeddings of this base in
            every layer (the local layers' base is `local_rope_theta`), usually
            with `absolute_positions=False`; 0: none.
        local_rope_theta: the rotary base of the local layers (0: as
            `global_rope_theta`).
        local_attention: > 0: the layers that are not global attend to a
            window of this many tokens (`local_attention // 2` each side);
            0: every layer is global.
        global_attn_every_n_layers: layer i is global when i is a multiple
            of it (1: every layer).
        gated_feedforward: GeGLU feed-forward layers (`TransformerEncoderBlock`).
        use_bias: whether the blocks' dense layers and every layer norm have
            biases.
        first_attention_norm: False: the first block has no layer norm before
            its attention (pre-LN only).

    Examples:
    >>> import numpy as np
    >>> encoder = TransformerEncoder(vocabulary_size=100, num_layers=2,
    ...     num_heads=2, hidden_dim=8, intermediate_dim=16)
    >>> ids = np.array([[2, 9, 3, 0]])
    >>> out = encoder(ids, np.zeros_like(ids), np.array([[1, 1, 1, 0]]))
    >>> tuple(out["sequence_output"].shape), len(out["hidden_states"])
    ((1, 4, 8), 3)
    """

    # Packed, the blocks' position-wise layers compute on the real tokens alone
    # (see `pack_length`); False keeps them on the padded rows. Read when a call
    # is traced, so an instance may override it (to measure one against the other).
    position_wise_on_tokens = True

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        max_sequence_length=512,
        num_segments=2,
        embedding_dim=None,
        dropout=0.1,
        attention_dropout=None,
        norm_first=False,
        gelu_approximate=False,
        share_layers=False,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        adapter_size=0,
        lora_rank=0,
        pack_length=0,
        position_offset=0,
        pooler_activation="tanh",
        pooler_norm=False,
        absolute_positions=True,
        relative_attention=None,
        position_buckets=0,
        max_relative_positions=-1,
        global_rope_theta=0.0,
        local_rope_theta=0.0,
        local_attention=0,
        global_attn_every_n_layers=1,
        gated_feedforward=False,
        use_bias=True,
        first_attention_norm=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.num_layers = int(num_layers)
        self.num_heads = int(num_heads)
        self.hidden_dim = int(hidden_dim)
        self.intermediate_dim = int(intermediate_dim)
        self.max_sequence_length = int(max_sequence_length)
        self.num_segments = int(num_segments)
        self.embedding_dim = int(embedding_dim or hidden_dim)
        self.dropout = float(dropout)
        self.attention_dropout = float(
            dropout if attention_dropout is None else attention_dropout
        )
        self.norm_first = bool(norm_first)
        self.gelu_approximate = bool(gelu_approximate)
        self.share_layers = bool(share_layers)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.initializer_range = float(initializer_range)
        self.adapter_size = int(adapter_size or 0)
        self.lora_rank = int(lora_rank or 0)
        if self.adapter_size < 0 or self.lora_rank < 0:
            raise ValueError(f"adapter_size and lora_rank must be >= 0, got "
                             f"{adapter_size} and {lora_rank}")
        self.pack_length = pack_length
        self.position_offset = int(position_offset)
        if pooler_activation not in POOLER_ACTIVATIONS:
            raise ValueError(f"pooler_activation must be one of {', '.join(POOLER_ACTIVATIONS)}, "
                             f"got {pooler_activation!r}")
        self.pooler_activation = pooler_activation
        self.pooler_norm = bool(pooler_norm)
        self.absolute_positions = bool(absolute_positions)
        self.relative_attention = relative_attention
        self.position_buckets = int(position_buckets)
        self.max_relative_positions = int(max_relative_positions)
        self.global_rope_theta = float(global_rope_theta or 0.0)
        self.local_rope_theta = float(local_rope_theta or 0.0)
        self.local_attention = int(local_attention or 0)
        self.global_attn_every_n_layers = int(global_attn_every_n_layers)
        self.gated_feedforward = bool(gated_feedforward)
        self.use_bias = bool(use_bias)
        self.first_attention_norm = bool(first_attention_norm)
        if self.global_attn_every_n_layers < 1 or self.local_attention < 0:
            raise ValueError(f"global_attn_every_n_layers must be >= 1 and local_attention "
                             f">= 0, got {global_attn_every_n_layers} and {local_attention}")
        if self.global_rope_theta < 0 or self.local_rope_theta < 0:
            raise ValueError(f"global_rope_theta and local_rope_theta must be >= 0, got "
                             f"{global_rope_theta} and {local_rope_theta}")
        if self.share_layers and self.local_attention and self.global_attn_every_n_layers > 1:
            raise ValueError("share_layers=True applies one block to every layer, so layers "
                             "cannot alternate between local and global attention")

        # === Layers ===
        self.embeddings = TextEmbeddings(
            vocabulary_size=self.vocabulary_size,
            hidden_dim=self.hidden_dim,
            max_sequence_length=self.max_sequence_length,
            num_segments=self.num_segments,
            embedding_dim=self.embedding_dim,
            dropout=self.dropout,
            layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_range=self.initializer_range,
            position_offset=self.position_offset,
            absolute_positions=self.absolute_positions,
            use_bias=self.use_bias,
            dtype=self.dtype_policy,
            name="embeddings",
        )
        self.relative_embeddings = None
        if self.relative_attention is not None:
            self.relative_embeddings = RelativePositionEmbeddings(
                self.hidden_dim,
                self.position_buckets,
                self.relative_distance_limit,
                layer_norm_epsilon=self.layer_norm_epsilon,
                initializer_range=self.initializer_range,
                dtype=self.dtype_policy,
                name="relative_embeddings",
            )
        num_distinct_blocks = distinct_block_count(self.num_layers, self.share_layers)
        self.blocks = [
            TransformerEncoderBlock(
                hidden_dim=self.hidden_dim,
                num_heads=self.num_heads,
                intermediate_dim=self.intermediate_dim,
                dropout=self.dropout,
                attention_dropout=self.attention_dropout,
                norm_first=self.norm_first,
                gelu_approximate=self.gelu_approximate,
                layer_norm_epsilon=self.layer_norm_epsilon,
                initializer_range=self.initializer_range,
                adapter_size=self.adapter_size,
                lora_rank=self.lora_rank,
                relative_attention=self.relative_attention,
                gated_feedforward=self.gated_feedforward,
                use_bias=self.use_bias,
                attention_norm=self.first_attention_norm or index > 0,
                rope_theta=self.rope_theta_of_layer(index),
                attention_window=self.window_of_layer(index),
                dtype=self.dtype_policy,
                name=f"block_{index}",
            )
            for index in range(num_distinct_blocks)
        ]
        self.final_norm = None
        if self.norm_first:
            self.final_norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon,
                center=self.use_bias,
                dtype=self.dtype_policy,
                name="final_norm",
            )
        self.pooler = keras.layers.Dense(
            self.hidden_dim,
            activation=self.pooler_activation,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range
            ),
            dtype=self.dtype_policy,
            name="pooler",
        )
        # Only made with the option, so older encoders keep their weights' layout.
        self.pooler_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, center=self.use_bias, dtype=self.dtype_policy,
            name="pooler_norm") if self.pooler_norm else None

    @property
    def pooler_layers(self):
        """The layers that make `pooled_output` from the first token: the pooler dense and,
        with `pooler_norm` (ModernBERT's head), its LayerNorm. They train, freeze and go
        unused together.

        Examples:
        >>> encoder = TransformerEncoder(vocabulary_size=50, num_layers=1, num_heads=2,
        ...                              hidden_dim=8, intermediate_dim=16, pooler_norm=True)
        >>> [layer.name for layer in encoder.pooler_layers]
        ['pooler', 'pooler_norm']
        """
        return [self.pooler] + ([self.pooler_layer_norm] if self.pooler_layer_norm else [])

    @property
    def pack_length(self):
        """Length of the rows examples are packed into (0: no packing).

        With packing on, each call packs its right-padded examples (first-fit decreasing)
        into rows of `max(pack_length, longest example)` tokens (`layers.sequence_packing`),
        with positions restarting per example and attention kept inside each
        example, and returns outputs in the batch's own [B, T, ...] layout
        (zeros at padding): the same values as without packing, computed with
        far less padding when examples are short. Only the attention scores
        are computed in the rows: the blocks' projections, feed-forward layers
        and layer norms run on the real tokens alone ([M, H], no padding at
        all), gathered into rows for attention and back. `pack_length=1` packs into
        rows as long as each batch's longest example: on batches grouped by
        length (training) that computes the fewest attention scores, as
        each token attends within a row no longer than needed. The number of rows depends
        on the data, so packing needs eager or `tf.function` execution, not
        XLA. Settable on a built encoder; saved in its config.
        """
        return self._pack_length

    @pack_length.setter
    def pack_length(self, value):
        if isinstance(value, bool) or int(value) != value or value < 0:
            raise ValueError(f"pack_length must be an int >= 0 (0: no packing), got {value!r}")
        self._pack_length = int(value)

    def is_global_layer(self, index):
        """Whether layer `index` attends to every token (not a local window)."""
        return not self.local_attention or index % self.global_attn_every_n_layers == 0

    def window_of_layer(self, index):
        """How many tokens each side layer `index` sees (0: all of them)."""
        return 0 if self.is_global_layer(index) else self.local_attention // 2

    def rope_theta_of_layer(self, index):
        """The rotary base of layer `index` (0: no rotary positions)."""
        if self.is_global_layer(index) or not self.local_rope_theta:
            return self.global_rope_theta
        return self.local_rope_theta

    @property
    def relative_distance_limit(self):
        """The `max_relative_positions` in force (`max_sequence_length` when < 1)."""
        if self.max_relative_positions < 1:
            return self.max_sequence_length
        return self.max_relative_positions

    @property
    def token_embedding(self):
        """The token embedding table layer (for tied output decoders)."""
        return self.embeddings.token_embedding

    def build(self, token_ids_shape, segment_ids_shape=None, padding_mask_shape=None):
        hidden_shape = tuple(token_ids_shape) + (self.hidden_dim,)
        self.embeddings.build(token_ids_shape)
        if self.relative_embeddings is not None:
            self.relative_embeddings.build()
        for block in self.blocks:
            block.build(hidden_shape)
        if self.final_norm is not None:
            self.final_norm.build(hidden_shape)
        self.pooler.build((token_ids_shape[0], self.hidden_dim))
        if self.pooler_layer_norm is not None:
            self.pooler_layer_norm.build((token_ids_shape[0], self.hidden_dim))
        self.built = True
        if self.adapter_size or self.lora_rank:
            # Variable by variable, so the layers (and Keras's record of which
            # layers train) are untouched.
            keep = {id(variable) for variable in self.adaptation_weights()}
            for variable in self.weights:
                variable.trainable = id(variable) in keep

    def adaptation_weights(self):
        """The variables that adapters and LoRA train (empty without either).

        Adapters: every adapter's weights and every LayerNorm's. LoRA: the
        A and B factors of the query and value projections.
        """
        weights = []
        if self.adapter_size:
            norms = [self.embeddings.layer_norm]
            if self.relative_embeddings is not None:
                norms.append(self.relative_embeddings.layer_norm)
            if self.final_norm is not None:
                norms.append(self.final_norm)
            for block in self.blocks:
                norms += [norm for norm in (block.attention_norm, block.feedforward_norm)
                          if norm is not None]
                weights += block.attention_adapter.weights + block.feedforward_adapter.weights
            weights += [variable for norm in norms for variable in norm.weights]
        if self.lora_rank:
            for block in self.blocks:
                for dense in (block.attention.query_dense, block.attention.value_dense):
                    weights += [dense.lora_kernel_a, dense.lora_kernel_b]
        return weights

    def call(self, token_ids, segment_ids=None, padding_mask=None, training=None):
        if padding_mask is None:
            padding_mask = ops.ones_like(token_ids)
        packed = None
        position_ids = attention_mask = None
        if self.pack_length:
            packed = PackedBatch(token_ids, segment_ids, padding_mask, self.pack_length)
            token_ids, segment_ids = packed.token_ids, packed.segment_ids
            position_ids, attention_mask = packed.position_ids, packed.attention_mask
            padding_mask = packed.example_ids
        x = self.embeddings(token_ids, segment_ids, position_ids=position_ids,
                            training=training)
        where = dict(padding_mask=padding_mask, attention_mask=attention_mask)
        if position_ids is not None and (self.global_rope_theta or self.local_attention):
            where["position_ids"] = position_ids  # rotary angles and windows per example
        if self.relative_embeddings is not None:
            if packed is None:
                # DeBERTa zeroes the embeddings of padding (packed, padding is dropped).
                x = x * ops.cast(padding_mask, x.dtype)[:, :, None]
                position_ids = ops.arange(ops.shape(token_ids)[1], dtype="int32")
            where.update(relative_embeddings=self.relative_embeddings.normalized(),
                         relative_index=relative_position_index(
                             position_ids, self.position_buckets,
                             self.relative_distance_limit))
        tokens_only = packed is not None and self.position_wise_on_tokens
        if tokens_only:
            # The blocks compute on the real tokens alone, [M, H], and attend in the rows.
            x = packed.to_tokens(x)
            where.update(token_rows=packed.token_rows, token_slots=packed.token_slots)
        hidden_states = [x]
        for index in range(self.num_layers):
            block = self.blocks[0 if self.share_layers else index]
            x = block(x, **where, training=training)
            hidden_states.append(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
            hidden_states[-1] = x
        if packed is not None:
            unpack = packed.unpack_tokens if tokens_only else packed.unpack
            hidden_states = [unpack(state) for state in hidden_states]
            x = hidden_states[-1]
        pooled = self.pooler(x[:, 0, :])
        if self.pooler_layer_norm is not None:
            pooled = self.pooler_layer_norm(pooled)
        return {
            "sequence_output": x,
            "pooled_output": pooled,
            "hidden_states": hidden_states,
        }

    def compute_output_spec(
        self, token_ids, segment_ids=None, padding_mask=None, training=None
    ):
        batch, length = token_ids.shape[0], token_ids.shape[1]
        hidden = keras.KerasTensor(
            (batch, length, self.hidden_dim), dtype=self.compute_dtype
        )
        return {
            "sequence_output": hidden,
            "pooled_output": keras.KerasTensor(
                (batch, self.hidden_dim), dtype=self.compute_dtype
            ),
            "hidden_states": [
                keras.KerasTensor(hidden.shape, dtype=self.compute_dtype)
                for _ in range(self.num_layers + 1)
            ],
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_layers": self.num_layers,
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "embedding_dim": self.embedding_dim,
                "pack_length": self.pack_length,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "norm_first": self.norm_first,
                "gelu_approximate": self.gelu_approximate,
                "share_layers": self.share_layers,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
                "adapter_size": self.adapter_size,
                "lora_rank": self.lora_rank,
                "position_offset": self.position_offset,
                "pooler_activation": self.pooler_activation,
                "pooler_norm": self.pooler_norm,
                "absolute_positions": self.absolute_positions,
                "relative_attention": self.relative_attention,
                "position_buckets": self.position_buckets,
                "max_relative_positions": self.max_relative_positions,
                "global_rope_theta": self.global_rope_theta,
                "local_rope_theta": self.local_rope_theta,
                "local_attention": self.local_attention,
                "global_attn_every_n_layers": self.global_attn_every_n_layers,
                "gated_feedforward": self.gated_feedforward,
                "use_bias": self.use_bias,
                "first_attention_norm": self.first_attention_norm,
            }
        )
        return config


def architecture_defaults():
    """The defaults of `TransformerEncoder`'s arguments, by name.

    `TransformerEncoder`'s signature is the one place where the encoder's
    architecture arguments and their defaults are written: `Encoder` passes
    its arguments through, and the zoo's presets (`zoo.presets`) read their
    defaults here.

    Examples:
    >>> defaults = architecture_defaults()
    >>> defaults["max_sequence_length"], defaults["dropout"], "hidden_dim" in defaults
    (512, 0.1, False)
    """
    parameters = inspect.signature(TransformerEncoder.__init__).parameters.values()
    return {parameter.name: parameter.default for parameter in parameters
            if parameter.default is not inspect.Parameter.empty}


def distinct_block_count(num_layers, share_layers):
    """How many blocks have weights of their own: 1 when every layer applies the same block
    (ALBERT's `share_layers`), else `num_layers`.

    >>> distinct_block_count(12, share_layers=True), distinct_block_count(12, False)
    (1, 12)
    """
    return 1 if share_layers else int(num_layers)
