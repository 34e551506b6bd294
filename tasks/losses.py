"""Losses that task models share."""

import keras
from keras import ops


def masked_sparse_cross_entropy(labels, logits, weights=None):
    """Weighted mean cross-entropy of `logits` against integer `labels` (float32).

    Slots whose label is negative (-1 marks padding) count with weight 0,
    whatever `weights` says; the rest with `weights` (1 by default). The
    mean is Σ w · CE / Σ w, and 0 when no slot counts, so a batch without a
    single real slot adds nothing and produces no NaN. Used by the softmax
    tagger (weights: the word mask), span NER (span mask × NONE weight) and
    pretraining (MLM and SBO slots).

    Args:
        labels: int label ids [...], negative where there is nothing to predict.
        logits: float scores [..., num_classes].
        weights: optional per-slot weights, the shape of `labels`.

    Returns:
        A float32 scalar.

    Examples:
    >>> import numpy as np
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]]], "float32"))
    >>> round(float(masked_sparse_cross_entropy(np.array([[0, 0, -1]]), logits)), 4)
    0.3993
    >>> loss = masked_sparse_cross_entropy(np.array([[0, 0, 1]]), logits,
    ...                                    weights=np.array([[1.0, 0.0, 1.0]]))
    >>> round(float(loss), 4)  # (ln 2 + ln 1.25) / 2
    0.4581
    """
    labels = ops.cast(labels, "int32")
    weight = ops.cast(labels >= 0, "float32")
    if weights is not None:
        weight = weight * ops.cast(weights, "float32")
    per_slot = keras.losses.sparse_categorical_crossentropy(
        ops.maximum(labels, 0), logits, from_logits=True)
    total = ops.sum(ops.cast(per_slot, "float32") * weight)
    # With 0/1 weights the sum is 0 or >= 1, so this floor only matters for
    # fractional weights (NONE spans) and for an empty batch (0 / floor = 0).
    return total / ops.maximum(ops.sum(weight), 1e-6)
