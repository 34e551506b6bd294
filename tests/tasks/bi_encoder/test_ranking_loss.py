"""The multiple-negatives ranking loss against a NumPy brute force, and one training step."""

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers import Encoder
from nlpzoo.tasks.bi_encoder import BiEncoder
from nlpzoo.tasks.bi_encoder.ranking_loss import (
    MultipleNegativesRankingLoss,
    cosine_matrix,
    multiple_negatives_ranking_loss,
)


def _unit(rows):
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def _log_softmax_at(row, target):
    row = row - row.max()
    return row[target] - np.log(np.exp(row).sum())


def brute_force_loss(anchors, positives, negatives=None, positive_ids=None, negative_ids=None,
                     scale=20.0, symmetric=False):
    """MNRL written out loop by loop: for each anchor i, the softmax over the candidates it
    may see (every positive whose text differs from its own, its own positive, every present
    hard negative that differs from its positive) of scale * cosine."""
    batch = len(anchors)
    positive_ids = np.arange(batch) if positive_ids is None else np.asarray(positive_ids)
    candidates, candidate_ids = list(positives), list(positive_ids)
    if negatives is not None:
        candidates += list(negatives)
        candidate_ids += list(negative_ids)
    losses = []
    for i in range(batch):
        kept = [j for j in range(len(candidates))
                if j == i or (candidate_ids[j] != positive_ids[i] and candidate_ids[j] != -1)]
        scores = np.array([scale * float(_unit(anchors[i]) @ _unit(candidates[j])) for j in kept])
        forward = -_log_softmax_at(scores, kept.index(i))
        if symmetric:
            kept_anchors = [j for j in range(batch)
                            if j == i or positive_ids[j] != positive_ids[i]]
            scores = np.array([scale * float(_unit(positives[i]) @ _unit(anchors[j]))
                               for j in kept_anchors])
            forward = 0.5 * (forward - _log_softmax_at(scores, kept_anchors.index(i)))
        losses.append(forward)
    return np.mean(losses)


def _loss(anchors, positives, negatives=None, positive_ids=None, negative_ids=None,
          scale=20.0, symmetric=False):
    batch = len(anchors)
    positive_ids = np.arange(batch) if positive_ids is None else np.asarray(positive_ids)
    negative_ids = np.full(batch, -1) if negative_ids is None else np.asarray(negative_ids)
    candidates = positives if negatives is None else np.concatenate([positives, negatives])
    cosines = cosine_matrix(anchors.astype("float32"), candidates.astype("float32"))
    targets = np.stack([positive_ids, negative_ids], axis=1).astype("float32")  # as Keras hands them
    return float(MultipleNegativesRankingLoss(scale=scale, symmetric=symmetric)(targets, cosines))


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("scale", [1.0, 20.0, 50.0])
@pytest.mark.parametrize("with_negatives", [False, True])
def test_matches_the_brute_force(symmetric, scale, with_negatives):
    rng = np.random.default_rng(int(scale) + 2 * symmetric + with_negatives)
    batch, hidden = 6, 5
    anchors, positives = rng.normal(size=(batch, hidden)), rng.normal(size=(batch, hidden))
    negatives = rng.normal(size=(batch, hidden)) if with_negatives else None
    negative_ids = np.arange(batch, 2 * batch) if with_negatives else None
    expected = brute_force_loss(anchors, positives, negatives, None, negative_ids, scale, symmetric)
    assert _loss(anchors, positives, negatives, None, negative_ids, scale, symmetric) == (
        pytest.approx(expected, rel=1e-5, abs=1e-5))


@pytest.mark.parametrize("symmetric", [False, True])
def test_repeated_positives_and_missing_or_equal_hard_negatives_are_left_out(symmetric):
    rng = np.random.default_rng(7)
    batch, hidden = 5, 4
    anchors = rng.normal(size=(batch, hidden))
    positives = rng.normal(size=(batch, hidden))
    positives[3] = positives[1]  # pairs 1 and 3 share a positive text (id 1)
    positive_ids = [0, 1, 2, 1, 4]
    negatives = rng.normal(size=(batch, hidden))
    negatives[0] = positives[2]  # pair 0's hard negative is pair 2's positive: a real negative
    negatives[4] = positives[4]  # pair 4's hard negative is its own positive: left out
    negative_ids = [2, -1, 5, 6, 4]  # pair 1 has none
    expected = brute_force_loss(anchors, positives, negatives, positive_ids, negative_ids,
                                symmetric=symmetric)
    got = _loss(anchors, positives, negatives, positive_ids, negative_ids, symmetric=symmetric)
    assert got == pytest.approx(expected, rel=1e-5)
    # Without the ids the shared positive counts against both pairs: a different loss.
    assert _loss(anchors, positives, symmetric=symmetric) != pytest.approx(
        brute_force_loss(anchors, positives, positive_ids=positive_ids, symmetric=symmetric),
        rel=1e-5)


def test_a_batch_of_one_pair_has_zero_loss_and_the_loss_is_float32_under_bfloat16():
    cosines = tf.constant([[0.3]], tf.bfloat16)
    loss = multiple_negatives_ranking_loss(np.array([[0, -1]]), cosines)
    assert loss.dtype == tf.float32 and float(loss[0]) == 0.0


def test_config_round_trips():
    loss = MultipleNegativesRankingLoss(scale=10.0, symmetric=True)
    again = MultipleNegativesRankingLoss.from_config(loss.get_config())
    assert (again.scale, again.symmetric) == (10.0, True)


@pytest.mark.parametrize("hard_negatives", [False, True])
def test_one_gradient_step_lowers_the_loss(hard_negatives):
    import keras

    keras.utils.set_random_seed(3)
    encoder = Encoder(vocabulary_size=40, num_layers=1, num_heads=2, hidden_dim=16,
                      intermediate_dim=32, dropout=0.0)
    model = BiEncoder(encoder, objective="multiple_negatives", hard_negatives=hard_negatives)
    rng = np.random.default_rng(0)
    batch, length = 8, 6

    def tower(prefix):
        ids = rng.integers(4, 40, size=(batch, length)).astype("int32")
        return {prefix + "token_ids": ids, prefix + "segment_ids": np.zeros_like(ids),
                prefix + "padding_mask": np.ones_like(ids)}

    features = {**tower(""), **tower("pair_"), **(tower("negative_") if hard_negatives else {})}
    targets = np.stack([np.arange(batch), np.arange(batch, 2 * batch) if hard_negatives
                        else np.full(batch, -1)], axis=1).astype("int32")
    loss = MultipleNegativesRankingLoss()
    optimizer = keras.optimizers.SGD(learning_rate=0.05)

    def current():
        return float(loss(targets, model(features, training=False)))

    before = current()
    with tf.GradientTape() as tape:
        value = loss(targets, model(features, training=True))
    optimizer.apply_gradients(zip(tape.gradient(value, model.trainable_variables),
                                  model.trainable_variables))
    assert model.output_shape == (None, None)
    assert current() < before
