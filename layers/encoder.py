"""The encoder backbone: a functional model around one `TransformerEncoder`."""

import keras

from nlpzoo.layers.layer_mix import LAYER_MIXES, LayerMix
from nlpzoo.layers.serialization import register
from nlpzoo.layers.transformer_encoder import TransformerEncoder

# The name of the `TransformerEncoder` layer inside every encoder model, this
# class's and the plain functional ones that `.keras` files saved before it hold.
TRANSFORMER_NAME = "transformer"


def transformer_of(encoder):
    """The `TransformerEncoder` layer of any encoder this project has made.

    Works for an `Encoder`, for the plain functional encoders of older
    `.keras` files (a layer named "transformer" inside), and for a
    `TransformerEncoder` itself (returned as is). Use it where the layer's
    settings or weights are needed (`vocabulary_size`, `token_embedding`,
    `pooler`, ...) and the encoder may have been loaded from a file.

    Raises:
        ValueError: `encoder` holds no `TransformerEncoder` named "transformer".

    Examples:
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> transformer_of(encoder) is encoder.transformer, transformer_of(encoder).num_layers
    (True, 1)
    """
    if isinstance(encoder, TransformerEncoder):
        return encoder
    try:
        layer = encoder.get_layer(TRANSFORMER_NAME)
    except (AttributeError, ValueError):
        layer = None
    if not isinstance(layer, TransformerEncoder):
        raise ValueError(
            f"expected an Encoder (or a functional encoder with a TransformerEncoder "
            f"layer named {TRANSFORMER_NAME!r}), got {type(encoder).__name__} "
            f"{getattr(encoder, 'name', '')!r}"
        )
    return layer


@register
class Encoder(keras.Model):
    """A BERT-family encoder as a functional model: ids in, a dict of vectors out.

    Inputs `Encoder.INPUTS`, int32 [batch, time]: `token_ids`, `segment_ids`
    and `padding_mask` (1 for real tokens), KerasHub's names; task models
    take their encoder inputs from `Encoder.INPUTS` rather than naming them
    again. Outputs a dict:

    - `sequence_output` [B, T, hidden_dim]: the last block's output;
    - `pooled_output` [B, hidden_dim]: tanh(dense([CLS])), BERT's pooler
      (`pooler_activation` relu or gelu for DistilBERT and ELECTRA);
    - `hidden_states`: num_layers + 1 tensors [B, T, hidden_dim], the
      embeddings output then each block's output.

    With `layer_mix="scalar_mix"` or `"mean_last_4"` (`LayerMix`), what a head
    reads is a mix of `hidden_states` instead of the last layer:
    `sequence_output` is the mix, and `pooled_output` the mix's first
    ([CLS]) vector (BERT's pooler was trained on the last layer only). A
    scalar mix's weights live in a "layer_mix" layer beside the transformer,
    and train even when the transformer is frozen.

    Everything is computed by one `TransformerEncoder` layer named
    "transformer" (`encoder.transformer`); the constructor takes its
    arguments. `transformer_of(model)` finds that layer in an `Encoder` and
    in the plain functional encoders that older `.keras` files hold.

    Args:
        *transformer_args, **transformer_kwargs: the `TransformerEncoder`
            arguments, which define the architecture and its defaults in one
            place: vocabulary_size, num_layers, num_heads, hidden_dim,
            intermediate_dim, max_sequence_length, num_segments,
            embedding_dim, dropout, attention_dropout, norm_first,
            gelu_approximate, share_layers, layer_norm_epsilon,
            initializer_range, adapter_size, lora_rank, pack_length,
            position_offset, pooler_activation, pooler_norm, absolute_positions,
            relative_attention, position_buckets, max_relative_positions,
            global_rope_theta, local_rope_theta, local_attention,
            global_attn_every_n_layers, gated_feedforward, use_bias,
            first_attention_norm (the BERT-family members, DeBERTa-v3 and
            ModernBERT are values of these: see `layers.transformer_encoder`).
        layer_mix: what `sequence_output` is: one of `LAYER_MIXES`.
        dtype: the dtype policy (default: the global one).
        name, trainable: the model's, as for any Keras model.

    Examples:
    >>> import numpy as np
    >>> encoder = Encoder(vocabulary_size=50, num_layers=2, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16, max_sequence_length=32)
    >>> Encoder.INPUTS
    ('token_ids', 'segment_ids', 'padding_mask')
    >>> ids = np.array([[2, 9, 3, 0]])
    >>> out = encoder({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                "padding_mask": np.array([[1, 1, 1, 0]])})
    >>> tuple(out["sequence_output"].shape), tuple(out["pooled_output"].shape)
    ((1, 4, 8), (1, 8))
    >>> len(out["hidden_states"]), encoder.vocabulary_size, encoder.max_sequence_length
    (3, 50, 32)
    """

    INPUTS = ("token_ids", "segment_ids", "padding_mask")
    # The `get_config` keys that are Keras's, not the transformer's.
    _MODEL_KEYS = ("name", "trainable", "dtype")

    def __init__(self, *transformer_args, layer_mix="last", dtype=None, **transformer_kwargs):
        if layer_mix not in LAYER_MIXES:
            raise ValueError(f"layer_mix must be one of {', '.join(LAYER_MIXES)}, "
                             f"got {layer_mix!r}")
        # Keras's own arguments are the model's; every other one is the transformer's.
        model_kwargs = {key: transformer_kwargs.pop(key)
                        for key in ("name", "trainable") if key in transformer_kwargs}

        # === Layers ===
        transformer = TransformerEncoder(*transformer_args, **transformer_kwargs, dtype=dtype,
                                         name=TRANSFORMER_NAME)

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in self.INPUTS}
        outputs = transformer(**inputs)
        if layer_mix != "last":
            mixed = LayerMix(layer_mix, dtype=dtype, name="layer_mix")(outputs["hidden_states"])
            outputs = dict(outputs, sequence_output=mixed, pooled_output=mixed[:, 0, :])
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **model_kwargs)
        self.layer_mix = layer_mix

    # The settings live in the transformer layer only; these read them there.
    @property
    def transformer(self):
        """The `TransformerEncoder` layer that computes everything."""
        return self.get_layer(TRANSFORMER_NAME)

    @property
    def token_embedding(self):
        """The token embedding layer (for tied output decoders)."""
        return self.transformer.token_embedding

    @property
    def vocabulary_size(self):
        return self.transformer.vocabulary_size

    @property
    def max_sequence_length(self):
        return self.transformer.max_sequence_length

    @property
    def hidden_dim(self):
        return self.transformer.hidden_dim

    @property
    def num_layers(self):
        return self.transformer.num_layers

    transformer_of = staticmethod(transformer_of)

    def get_config(self):
        config = {
            key: value
            for key, value in self.transformer.get_config().items()
            if key not in self._MODEL_KEYS
        }
        config.update(
            layer_mix=self.layer_mix,
            name=self.name,
            trainable=self.trainable,
            dtype=keras.dtype_policies.serialize(self.transformer.dtype_policy),
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def encoder_config(encoder):
    """The constructor arguments of an `Encoder` equivalent to `encoder`.

    Works for every encoder `transformer_of` knows (older functional ones
    included); `Encoder(**encoder_config(e))` has the same variables as `e`.
    """
    if isinstance(encoder, Encoder):
        return encoder.get_config()
    transformer = transformer_of(encoder)
    config = {key: value for key, value in transformer.get_config().items()
              if key not in Encoder._MODEL_KEYS}
    config.update(name=getattr(encoder, "name", "encoder"),
                  trainable=getattr(encoder, "trainable", True),
                  dtype=keras.dtype_policies.serialize(transformer.dtype_policy))
    return config


def rebuild_encoder(encoder, **changes):
    """A new `Encoder` with some settings changed and `encoder`'s weights carried over.

    Every variable of `encoder` is copied to the variable at the same path
    in the new one; variables that only the new one has (adapters, LoRA
    factors, a scalar mix) keep their initial values, which leave the
    encoder's output unchanged. This is how adapters, LoRA and layer mixing
    are added to a pretrained encoder.

    Args:
        encoder: an `Encoder` (or an older functional encoder).
        **changes: `Encoder` arguments to change: `adapter_size`,
            `lora_rank`, `layer_mix`, `dropout`, ...

    Raises:
        ValueError: a change that alters a weight's shape, or drops a weight.

    Examples:
    >>> import numpy as np
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16, dropout=0.0)
    >>> adapted = rebuild_encoder(encoder, adapter_size=2, lora_rank=1)
    >>> ids = {"token_ids": np.array([[2, 9, 3]]), "segment_ids": np.zeros((1, 3), "int32"),
    ...        "padding_mask": np.ones((1, 3), "int32")}
    >>> bool(np.allclose(adapted(ids)["sequence_output"], encoder(ids)["sequence_output"],
    ...                  atol=1e-6))
    True
    """
    config = {**encoder_config(encoder), **changes}
    rebuilt = Encoder.from_config(config)
    new_by_path = {variable.path: variable for variable in rebuilt.weights}
    for variable in encoder.weights:
        target = new_by_path.get(variable.path)
        if target is None:
            raise ValueError(f"the rebuilt encoder has no weight {variable.path!r} "
                             f"(changes: {changes})")
        if tuple(target.shape) != tuple(variable.shape):
            raise ValueError(f"weight {variable.path!r} changes shape from "
                             f"{tuple(variable.shape)} to {tuple(target.shape)}")
        target.assign(variable)
    return rebuilt
