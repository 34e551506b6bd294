"""The features of a pair of sentence vectors that a pair classifier reads: (u, v, |u − v|)."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register

# Each term of a combination, as a function of the two vectors.
PAIR_TERMS = {
    "u": lambda u, v: u,
    "v": lambda u, v: v,
    "|u-v|": lambda u, v: ops.abs(u - v),
    "u-v": lambda u, v: u - v,
    "u*v": lambda u, v: u * v,
}


def parse_pair_combination(combination):
    """The terms of a comma-separated combination, checked (spaces are ignored).

    Examples:
    >>> parse_pair_combination("u, v, |u - v|")
    ['u', 'v', '|u-v|']
    """
    terms = [term.replace(" ", "") for term in str(combination).split(",")]
    unknown = [term for term in terms if term not in PAIR_TERMS]
    if not terms or unknown:
        raise ValueError(f"unknown term(s) {unknown} in combination {combination!r}; "
                         f"valid terms: {', '.join(PAIR_TERMS)}")
    return terms


@register
class PairFeatures(keras.layers.Layer):
    """Concatenates terms of two vectors u, v [..., H] into [..., n·H].

    Sentence-BERT's classification objective (Reimers & Gurevych 2019) reads
    `"u,v,|u-v|"`, the default: both sentence vectors and their element-wise
    distance; `"u*v"` (element-wise product) and `"u-v"` are there too
    (InferSent's features are `"u,v,|u-v|,u*v"`). Computed in the layer's
    compute dtype; no weights.

    Args:
        combination: comma-separated terms, in output order: `u`, `v`,
            `|u-v|`, `u-v`, `u*v`.

    Examples:
    >>> import numpy as np
    >>> u, v = np.array([[1.0, 2.0]]), np.array([[3.0, 1.0]])
    >>> PairFeatures()(u, v).numpy().tolist()
    [[1.0, 2.0, 3.0, 1.0, 2.0, 1.0]]

    References:
        Reimers & Gurevych 2019, Sentence-BERT: Sentence Embeddings using
        Siamese BERT-Networks (section 3).
    """

    def __init__(self, combination="u,v,|u-v|", **kwargs):
        super().__init__(**kwargs)
        self.terms = parse_pair_combination(combination)
        self.combination = ",".join(self.terms)

    def call(self, u, v):
        u, v = ops.cast(u, self.compute_dtype), ops.cast(v, self.compute_dtype)
        return ops.concatenate([PAIR_TERMS[term](u, v) for term in self.terms], axis=-1)

    def compute_output_shape(self, u_shape, v_shape=None):
        width = None if u_shape[-1] is None else len(self.terms) * u_shape[-1]
        return tuple(u_shape[:-1]) + (width,)

    def get_config(self):
        config = super().get_config()
        config.update({"combination": self.combination})
        return config
