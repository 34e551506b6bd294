"""The multiple-negatives ranking loss: each anchor must pick its own positive out of the batch.

For a batch of B (anchor, positive) pairs the model scores every anchor
against every candidate: the B positives of the batch (in-batch negatives:
pair j's positive is a negative for anchor i ≠ j) and, with hard negatives,
the B hard negatives of the batch as well. The loss is the cross-entropy of
`scale · cos(anchor_i, candidate_j)` over j with target j = i, averaged over
the batch (sentence-transformers' `MultipleNegativesRankingLoss`, Henderson
et al. 2017). The symmetric variant averages it with the same loss read the
other way: each positive picks its anchor among the batch's anchors
(`MultipleNegativesSymmetricRankingLoss`).

False negatives. Two pairs of a batch may share a positive (two questions
answered by one paragraph): plain MNRL then trains anchor i away from its
own positive text in column j. Here each pair carries the id of its
positive text and of its hard negative (`targets`): a candidate whose id is
anchor i's positive id, other than column i, is left out of row i's softmax
(and, read the other way, an anchor whose positive is the same text), as is
a hard negative with the same text as the row's positive or missing (id
−1). The ids are per text, so equal texts are equal ids whatever the batch.

Under `tf.distribute` every replica computes the loss on its own part of
the global batch: the negatives of an anchor are those of its replica
(batch / replicas pairs), not of the global batch.

References:
    Henderson et al. 2017, Efficient Natural Language Response Suggestion
    for Smart Reply. Reimers & Gurevych 2019, Sentence-BERT (the
    sentence-transformers implementation, scale 20).
"""

import keras
from keras import ops

# A logit that drops a candidate from the softmax: large and finite (float32), not −inf.
_EXCLUDED = -1e9


def cosine_matrix(anchors, candidates):
    """[B, C] float32 cosine similarity of each anchor [B, H] with each candidate [C, H].

    Examples:
    >>> import numpy as np
    >>> cosine_matrix(np.array([[1.0, 0.0]]), np.array([[2.0, 0.0], [0.0, 3.0]])).numpy().tolist()
    [[1.0, 0.0]]
    """
    def unit(rows):
        rows = ops.cast(rows, "float32")
        return rows / ops.maximum(ops.norm(rows, axis=-1, keepdims=True), 1e-12)

    return ops.matmul(unit(anchors), ops.transpose(unit(candidates)))


def excluded_candidates(targets, num_candidates):
    """[B, C] bool: which candidates leave each row's softmax (see the module docstring).

    `targets` [B, 2] holds (positive id, hard negative id or −1) per pair;
    the candidates are the B positives, then (C = 2B) the B hard negatives.

    Examples:
    >>> import numpy as np
    >>> targets = np.array([[0, -1], [0, -1], [1, -1]])  # pairs 0 and 1 share a positive
    >>> excluded_candidates(targets, 3).numpy().astype(int).tolist()
    [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    """
    targets = ops.cast(targets, "int32")
    positive_ids = targets[:, 0]
    candidate_ids = ops.concatenate([positive_ids, targets[:, 1]], axis=0)[:num_candidates]
    batch = ops.shape(targets)[0]
    same_text = ops.equal(positive_ids[:, None], candidate_ids[None, :])
    own_column = ops.equal(ops.arange(batch)[:, None], ops.arange(num_candidates)[None, :])
    missing = ops.equal(candidate_ids, -1)[None, :]
    return ops.logical_or(ops.logical_and(same_text, ops.logical_not(own_column)), missing)


def multiple_negatives_ranking_loss(targets, cosines, scale=20.0, symmetric=False):
    """Per-pair loss [B], float32: the cross-entropy of each anchor's scaled cosines with its
    own positive (column i) as the target; see the module docstring.

    Args:
        targets: [B, 2] (positive text id, hard negative text id or −1);
            any numeric dtype (Keras hands losses float targets).
        cosines: [B, C] cos(anchor_i, candidate_j): C = B (the positives) or
            2B (then the hard negatives).
        scale: the inverse temperature multiplying the cosines (20).
        symmetric: also each positive → its anchor over the batch's anchors
            (the [B, B] block read by columns); the two losses are averaged.

    Examples:
    >>> import numpy as np
    >>> cosines = np.array([[0.9, 0.1], [0.2, 0.8]], "float32")
    >>> loss = multiple_negatives_ranking_loss(np.array([[0, -1], [1, -1]]), cosines, scale=1.0)
    >>> [round(float(value), 4) for value in loss]  # -log softmax([0.9, 0.1])[0], ...[1]
    [0.3711, 0.4375]
    """
    cosines = ops.cast(cosines, "float32")
    batch = ops.shape(cosines)[0]
    excluded = excluded_candidates(targets, ops.shape(cosines)[1])
    logits = ops.where(excluded, _EXCLUDED, scale * cosines)
    labels = ops.arange(batch)
    loss = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    if symmetric:
        backward = ops.transpose(logits[:, :batch])  # the same-text mask is symmetric
        loss = 0.5 * (loss + keras.losses.sparse_categorical_crossentropy(
            labels, backward, from_logits=True))
    return loss


@keras.saving.register_keras_serializable(package="nlpzoo")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """`multiple_negatives_ranking_loss` as a Keras loss (mean over the batch).

    Args:
        scale: the inverse temperature of the cosines (sentence-transformers: 20).
        symmetric: average with the positive → anchor direction.

    Examples:
    >>> import numpy as np
    >>> loss = MultipleNegativesRankingLoss(scale=1.0)
    >>> cosines = np.array([[0.9, 0.1], [0.2, 0.8]], "float32")
    >>> round(float(loss(np.array([[0, -1], [1, -1]]), cosines)), 4)  # (0.3711 + 0.4375) / 2
    0.4043
    """

    def __init__(self, scale=20.0, symmetric=False, name="multiple_negatives_ranking",
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = float(scale)
        self.symmetric = bool(symmetric)

    def call(self, y_true, y_pred):
        return multiple_negatives_ranking_loss(y_true, y_pred, self.scale, self.symmetric)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "symmetric": self.symmetric}
