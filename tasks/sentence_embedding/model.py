"""The sentence embedding model: encoder inputs → one float32 vector per text."""

import keras

from nlpzoo.layers import LAYER_MIXES, POOLINGS, Encoder, LayerMix, SequencePooling, transformer_of
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel

# The mixes an embedding can read without training (a scalar mix is learned).
EXTRACTION_MIXES = tuple(mix for mix in LAYER_MIXES if mix != "scalar_mix")


def parse_layer(layer, num_layers):
    """The hidden layer an embedding reads, checked: None, an index, or a mix name.

    Args:
        layer: None (the encoder's `sequence_output`: its last layer, or the
            layer mix it was built with); an index into its `hidden_states`
            (0 the embeddings output, `num_layers` the last block, negative
            counting from the end), as an int or a string of one ("-2");
            or a mix of `layers.LAYER_MIXES` that needs no training
            ("last", "mean_last_4").
        num_layers: the encoder's number of blocks.

    Returns:
        None, an int in [-(num_layers + 1), num_layers], or a mix name.

    Raises:
        ValueError: anything else; the message lists what is valid.

    Examples:
    >>> parse_layer("-2", num_layers=6), parse_layer(0, 6), parse_layer("mean_last_4", 6)
    (-2, 0, 'mean_last_4')
    >>> parse_layer(7, num_layers=6)
    Traceback (most recent call last):
    ...
    ValueError: layer 7 is out of range: the encoder has hidden states 0 (embeddings) to 6 \
(last block); negative indices count from the end (-1 is the last, -7 the embeddings)
    """
    valid = (f"an index into the encoder's hidden states (0 embeddings, {num_layers} last "
             f"block, negative from the end) or one of {', '.join(EXTRACTION_MIXES)}")
    if layer is None:
        return None
    if isinstance(layer, str):
        text = layer.strip()
        if text in EXTRACTION_MIXES:
            return text
        if text == "scalar_mix":
            raise ValueError("layer 'scalar_mix' is a learned mix (ELMo's): untrained, it is "
                             "the plain mean of every layer. For embeddings without training "
                             "use 'mean_last_4' or a layer index; a model trained with "
                             "--layer_mix=scalar_mix keeps its learned mix (leave layer unset)")
        try:
            layer = int(text)
        except ValueError:
            raise ValueError(f"layer must be {valid}; got {layer!r}") from None
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise ValueError(f"layer must be {valid}; got {layer!r}")
    if not -(num_layers + 1) <= layer <= num_layers:
        raise ValueError(f"layer {layer} is out of range: the encoder has hidden states 0 "
                         f"(embeddings) to {num_layers} (last block); negative indices count "
                         f"from the end (-1 is the last, -{num_layers + 1} the embeddings)")
    return layer


def token_vectors(encoder_outputs, layer):
    """The [B, T, H] token vectors an embedding reads from an encoder's outputs.

    Args:
        encoder_outputs: what an `Encoder` returns (`sequence_output`, `hidden_states`).
        layer: a value `parse_layer` returned: None (`sequence_output`), a
            hidden-state index, "last" or "mean_last_4".

    Examples:
    >>> import numpy as np
    >>> states = [np.full((1, 2, 3), float(i), "float32") for i in range(5)]
    >>> outputs = {"sequence_output": states[-1], "hidden_states": states}
    >>> float(token_vectors(outputs, "mean_last_4")[0, 0, 0]), float(token_vectors(outputs, 0)[0, 0, 0])
    (2.5, 0.0)
    """
    if layer is None:
        return encoder_outputs["sequence_output"]
    if layer == "mean_last_4":
        return LayerMix("mean_last_4", name="layer_mix")(encoder_outputs["hidden_states"])
    if layer == "last":
        return encoder_outputs["hidden_states"][-1]
    return encoder_outputs["hidden_states"][layer]


@keras.saving.register_keras_serializable(package="nlpzoo")
class SentenceEmbedder(EncoderTaskModel):
    """Encoder inputs → one float32 vector per text ([batch, hidden_dim]).

    The token vectors of one hidden layer (`layer`, see `parse_layer`) are
    pooled by `layers.SequencePooling`: the mean over real tokens (`"mean"`,
    what sentence-transformers models such as all-MiniLM-L6-v2 are trained
    with), their element-wise maximum (`"max"`) or the [CLS] vector (`"cls"`),
    then scaled to unit L2 norm with `normalize=True`, so that a dot product is
    a cosine similarity. Padded positions never count: the same text gives
    the same vector whatever the padding of its batch. Pooling runs in
    float32 and the output is float32 under any dtype policy.

    The model has no weights of its own (the encoder's only) and needs no
    training; it saves and loads as a `.keras` file like every task model,
    and can carry its preprocessor (`attach_metadata`).

    Args:
        encoder: an `Encoder` (or an older functional encoder with inputs
            `Encoder.INPUTS`).
        pooling: one of `layers.POOLINGS`: "mean" (default), "max" or "cls".
        normalize: scale each vector to unit L2 norm (default True).
        layer: which hidden layer is pooled (`parse_layer`); None: the
            encoder's `sequence_output`.

    Examples:
    >>> import numpy as np
    >>> encoder = Encoder(vocabulary_size=50, num_layers=2, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> model = SentenceEmbedder(encoder, pooling="mean", normalize=True, layer=-2)
    >>> ids = np.array([[2, 9, 7, 3, 0, 0]])
    >>> vectors = model.predict_on_batch({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                                   "padding_mask": (ids > 0).astype("int32")})
    >>> vectors.shape, vectors.dtype, round(float(np.linalg.norm(vectors)), 5)
    ((1, 8), dtype('float32'), 1.0)
    """

    def __init__(self, encoder, pooling="mean", normalize=True, layer=None, **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        layer = parse_layer(layer, transformer_of(encoder).num_layers)
        kwargs.setdefault("name", "sentence_embedder")

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in Encoder.INPUTS}
        tokens = token_vectors(encoder(inputs), layer)
        embedding = SequencePooling(pooling, normalize=normalize, dtype="float32",
                                    name="pooling")(tokens, padding_mask=inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=embedding, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.layer = layer

    def _task_config(self):
        return {"pooling": self.pooling, "normalize": self.normalize, "layer": self.layer}


def build_embedding_model(encoder, pooling="mean", normalize=True, layer=None):
    """A `SentenceEmbedder` on `encoder`: its inputs → [batch, hidden_dim] float32 vectors.

    Args:
        encoder: an encoder (`zoo.build_encoder`, `zoo.load_encoder`, or the
            encoder of a trained task model).
        pooling: "mean" (default; sentence-transformers), "max" or "cls".
        normalize: unit L2 norm (default True; sentence-transformers'
            `Normalize`, so dot products are cosines).
        layer: None (the encoder's `sequence_output`), a hidden layer index
            (0 embeddings … num_layers, negative from the end) or
            "mean_last_4"; see `parse_layer`.

    Examples:
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> build_embedding_model(encoder, layer="mean_last_4").output_shape
    (None, 8)
    """
    return SentenceEmbedder(encoder, pooling=pooling, normalize=normalize, layer=layer)
