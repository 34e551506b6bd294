"""float32 logits over the vocabulary, decoded with the input embedding table (tied)."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


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


@register
class TiedVocabularyDecoder(keras.layers.Layer):
    """Logits `x · Eᵀ + b` with a tied embedding table E, or `x · W + b` untied.

    The output layer of `MaskedLMHead` and `SpanBoundaryHead`. Tied, it reads
    the table of `embedding_layer` (e.g. `encoder.token_embedding`) and owns
    only the bias b [V]: the table is referenced, not tracked, so it is not
    among this layer's weights, and it is trained and saved once, by the
    layer that owns it. So `get_config` stores `tied=True` and the sizes,
    and `from_config` gives a decoder that must be re-tied (`tie(layer)`)
    before it is called; the model that owns both re-ties it when it is
    rebuilt. Untied (`tied=False`, or no `embedding_layer`) it has its own
    kernel W [E, V].

    It always computes in float32 (its own float32 scope, so the tied float32
    table is read unrounded even inside a bfloat16 model): logits feed the
    softmax and loss.

    Args:
        vocabulary_size: V.
        embedding_layer: a `keras.layers.Embedding` to tie to.
        tied: whether to decode with an embedding table; defaults to
            `embedding_layer is not None`.
        embedding_dim: the table's width E; taken from `embedding_layer`
            when given (and checked against it), else the input width.
        initializer_range: stddev of the untied kernel's initialiser.

    Examples:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(50, 8)
    >>> hidden = embedding(np.array([[2, 7, 9]]))
    >>> decoder = TiedVocabularyDecoder(50, embedding_layer=embedding)
    >>> logits = decoder(hidden)
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((1, 3, 50), 'float32')
    >>> [weight.name for weight in decoder.weights]  # the table is not its own
    ['bias']
    >>> restored = TiedVocabularyDecoder.from_config(decoder.get_config())
    >>> restored.is_tied, restored.tie(embedding).is_tied
    (False, True)
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_layer=None,
        tied=None,
        embedding_dim=None,
        initializer_range=0.02,
        **kwargs,
    ):
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        if tied is None:
            tied = embedding_layer is not None
        if embedding_layer is not None and not tied:
            raise ValueError("embedding_layer was given but tied=False")
        self.tied = bool(tied)
        self.embedding_dim = int(embedding_dim) if embedding_dim else None
        self.initializer_range = float(initializer_range)
        self._reference = None
        if embedding_layer is not None:
            self.tie(embedding_layer)

    def tie(self, embedding_layer):
        """Decodes with `embedding_layer`'s table from now on; returns self.

        Needed after `from_config` of a tied decoder (or of a head holding one).
        """
        if not self.tied:
            raise ValueError("this decoder (or head) was built untied (tied=False)")
        self.embedding_dim = _check_embedding_layer(
            embedding_layer, self.vocabulary_size, self.embedding_dim
        )
        self._reference = _LayerReference(embedding_layer)
        return self

    @property
    def is_tied(self):
        """True once the decoder reads an embedding table."""
        return self.tied and self._reference is not None

    def get_embedding_layer(self):
        """The tied embedding layer, or None.

        A method, not a property: Keras saves the layers it finds in
        attributes, and the table must be saved by its owner only.
        """
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

    def get_config(self):
        return {**super().get_config(), **tying_config(self),
                "initializer_range": self.initializer_range}


def tying_config(layer):
    """The config entries of a layer that decodes with a `TiedVocabularyDecoder`.

    The decoder and the heads built on it (`TiedHeadMixin`) all save these:
    the vocabulary size, whether it is tied and the table's width.

    Examples:
    >>> tying_config(TiedVocabularyDecoder(50, tied=True, embedding_dim=8))
    {'vocabulary_size': 50, 'tied': True, 'embedding_dim': 8}
    """
    return {"vocabulary_size": layer.vocabulary_size, "tied": layer.tied,
            "embedding_dim": layer.embedding_dim}


# Our name for GELU's tanh approximation as a head's activation (Hugging Face's "gelu_new",
# the encoder's `gelu_approximate=True`): Keras's "gelu" string is the exact form only.
GELU_APPROXIMATE = "gelu_approximate"


def head_activation(activation):
    """The function of a head's `activation` setting: `GELU_APPROXIMATE` or a Keras one.

    Examples:
    >>> import numpy as np
    >>> x = np.array([1.0], "float32")
    >>> exact, tanh = head_activation("gelu")(x), head_activation(GELU_APPROXIMATE)(x)
    >>> round(float(exact[0]), 5), round(float(tanh[0]), 5)
    (0.84134, 0.84119)
    """
    if activation == GELU_APPROXIMATE:
        return _gelu_approximate
    return keras.activations.get(activation)


def _gelu_approximate(x):
    return ops.gelu(x, approximate=True)


class TiedHeadMixin:
    """`tie`, `is_tied`, `get_embedding_layer`, `tied` and `embedding_dim` for a
    head whose output layer is a `TiedVocabularyDecoder` in `self.decoder`.

    The tying state lives in the decoder only; the head forwards to it.
    """

    def _set_head_settings(self, activation, layer_norm_epsilon, initializer_range):
        """Sets what the head's dense layers and LayerNorms are made with."""
        self.activation = (activation if activation == GELU_APPROXIMATE else
                           keras.activations.serialize(keras.activations.get(activation)))
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.initializer_range = float(initializer_range)

    def _head_config(self):
        """The `get_config` entries every tied head has (its own follow them)."""
        return {**tying_config(self), "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range}

    def _make_decoder(self, vocabulary_size, embedding_layer, tied, embedding_dim):
        """Sets `vocabulary_size` and makes the head's output layer, `self.decoder`.

        Called in the head's `__init__` after `_set_head_settings`.
        """
        self.vocabulary_size = int(vocabulary_size)
        self.decoder = TiedVocabularyDecoder(
            self.vocabulary_size,
            embedding_layer=embedding_layer,
            tied=tied,
            embedding_dim=embedding_dim,
            initializer_range=self.initializer_range,
            name="decoder",
        )

    @property
    def tied(self):
        """Whether the decoder uses an embedding table (tied or still to be re-tied)."""
        return self.decoder.tied

    @property
    def embedding_dim(self):
        """The table's width, or None for an untied head sized by its input."""
        return self.decoder.embedding_dim

    @property
    def is_tied(self):
        """True once the decoder reads an embedding table."""
        return self.decoder.is_tied

    def tie(self, embedding_layer):
        """Ties the decoder to `embedding_layer` (e.g. `encoder.token_embedding`).

        Needed after `from_config` of a tied head; returns the head.
        """
        self.decoder.tie(embedding_layer)
        return self

    def get_embedding_layer(self):
        """The tied embedding layer, or None."""
        return self.decoder.get_embedding_layer()
