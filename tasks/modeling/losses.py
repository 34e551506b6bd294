"""Losses that task models share."""

import keras
import tensorflow as tf
from keras import ops


def replica_weight(count):
    """R · count / Σ count over the R replicas of a `tf.distribute` step: the weight that
    turns one replica's mean over its own `count` items (examples, words, masked tokens)
    into its share of the mean over every replica's items.

    Each replica's loss is scaled by 1/R and their gradients are summed, so a step on
    the mean of per-replica means equals one device's step on the whole batch only when
    every replica counts alike; with this weight it always does (a last batch of 7
    examples split 4 + 3, or halves holding different numbers of words). 1 outside a
    strategy of several replicas; 0 for a replica that counts 0 items. No gradient flows
    through it.

    Args:
        count: this replica's number of items (or total weight), a scalar.

    Returns:
        A float32 scalar (a Python 1.0 with a single replica).

    Examples:
    >>> replica_weight(3)  # one replica: its mean is the mean
    1.0
    """
    context = tf.distribute.get_replica_context()
    replicas = context.num_replicas_in_sync if context is not None else 1
    if replicas == 1:
        return 1.0
    count = ops.stop_gradient(ops.cast(count, "float32"))
    total = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
    return tf.math.divide_no_nan(count * replicas, total)


def masked_sparse_cross_entropy(labels, logits, weights=None):
    """Weighted mean cross-entropy of `logits` against integer `labels` (float32).

    Slots whose label is negative (-1 marks padding) count with weight 0,
    whatever `weights` says; the rest with `weights` (1 by default). The
    mean is Σ w · CE / Σ w, and 0 when no slot counts, so a batch without a
    single real slot adds nothing and produces no NaN. Under a strategy of several
    replicas it is weighted by `replica_weight(Σ w)`. Used by the softmax
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
    count = ops.sum(weight)
    return total / ops.maximum(count, 1e-6) * replica_weight(count)


def distillation_loss(teacher_probabilities, student_logits, temperature=1.0):
    """Hinton et al.'s soft-target loss: T² · KL(teacher_T ‖ student_T), averaged over slots.

    A slot is one example (classification) or one word (tagging). The
    teacher's distribution comes already softened at temperature T (a softmax
    of its logits / T, or a CRF's marginals at T); the student's is
    softmax(student_logits / T). Multiplying by T² keeps the gradients'
    scale independent of T, so the loss mixes with a hard-label loss at the
    same weight whatever T is. A slot whose teacher row is all zeros (padding,
    a word the teacher did not see) has no target: the mean is
    Σ w · KL / Σ w with w = Σ_k p_k (1 or 0), and 0 when no slot counts.
    The teacher's side is a constant: no gradient flows into it. Under a strategy of
    several replicas the mean is weighted by `replica_weight(Σ w)`.

    Args:
        teacher_probabilities: [..., K] rows that sum to 1 (or are all 0).
        student_logits: [..., K] the student's scores, any float dtype.
        temperature: T > 0.

    Returns:
        A float32 scalar.

    References:
        Hinton, Vinyals and Dean, "Distilling the Knowledge in a Neural
        Network" (2015).

    Examples:
    >>> import numpy as np
    >>> teacher = np.array([[0.5, 0.5], [0.0, 0.0]], "float32")  # row 2: no target
    >>> logits = np.log(np.array([[0.9, 0.1], [0.3, 0.7]], "float32"))
    >>> round(float(distillation_loss(teacher, logits)), 4)  # 0.5 ln(0.5/0.9) + 0.5 ln(5)
    0.5108
    >>> round(float(distillation_loss(teacher, logits * 3.0, temperature=3.0)), 3)  # 9 x as much
    4.597
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    p = ops.stop_gradient(ops.cast(teacher_probabilities, "float32"))
    log_q = ops.log_softmax(ops.cast(student_logits, "float32") / temperature, axis=-1)
    # 0 · log 0 = 0: rows (and entries) without mass contribute nothing.
    p_log_p = ops.where(p > 0, p * ops.log(ops.maximum(p, 1e-30)), 0.0)
    per_slot = ops.sum(p_log_p - p * log_q, axis=-1)
    count = ops.sum(ops.sum(p, axis=-1))
    return (temperature ** 2 * ops.sum(per_slot) / ops.maximum(count, 1e-6)
            * replica_weight(count))
