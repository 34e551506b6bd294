"""The encoder backbone: a functional model around one `TransformerEncoder`."""

import keras

from layers.serialization import register
from layers.transformer_encoder import TransformerEncoder

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
    - `pooled_output` [B, hidden_dim]: tanh(dense([CLS])), BERT's pooler;
    - `hidden_states`: num_layers + 1 tensors [B, T, hidden_dim], the
      embeddings output then each block's output.

    Everything is computed by one `TransformerEncoder` layer named
    "transformer" (`encoder.transformer`); the constructor takes its
    arguments. `transformer_of(model)` finds that layer in an `Encoder` and
    in the plain functional encoders that older `.keras` files hold.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
        max_sequence_length, num_segments, embedding_dim, dropout,
        attention_dropout, norm_first, gelu_approximate, share_layers,
        layer_norm_epsilon, initializer_range: see `TransformerEncoder`.
        dtype: the dtype policy (default: the global one).
        **kwargs: `name`, `trainable`.

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
        dtype=None,
        **kwargs,
    ):
        # === Layers ===
        transformer = TransformerEncoder(
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            embedding_dim=embedding_dim,
            dropout=dropout,
            attention_dropout=attention_dropout,
            norm_first=norm_first,
            gelu_approximate=gelu_approximate,
            share_layers=share_layers,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            dtype=dtype,
            name=TRANSFORMER_NAME,
        )

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in self.INPUTS}
        outputs = transformer(**inputs)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

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
            name=self.name,
            trainable=self.trainable,
            dtype=keras.dtype_policies.serialize(self.transformer.dtype_policy),
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
