"""`tasks.modeling.losses.masked_sparse_cross_entropy` against NumPy and the three losses it replaced."""


import keras
import numpy as np
import pytest
from keras import ops

from nlpzoo.tasks.modeling.losses import masked_sparse_cross_entropy


def _data(seed, shape=(3, 5), classes=4, fraction_padded=0.3):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=3.0, size=shape + (classes,)).astype("float32")
    labels = rng.integers(0, classes, size=shape).astype("int32")
    labels[rng.random(shape) < fraction_padded] = -1
    return labels, logits


def _numpy(labels, logits, weights):
    logits = logits.astype("float64")
    log_probs = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(
        -1, keepdims=True)) - logits.max(-1, keepdims=True)
    weights = weights * (labels >= 0)
    picked = np.take_along_axis(log_probs, np.maximum(labels, 0)[..., None], -1)[..., 0]
    return -(picked * weights).sum() / max(weights.sum(), 1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_matches_numpy(seed):
    labels, logits = _data(seed)
    weights = np.random.default_rng(seed + 10).random(labels.shape).astype("float32")
    for w in (None, weights):
        loss = masked_sparse_cross_entropy(labels, logits, w)
        assert keras.backend.standardize_dtype(loss.dtype) == "float32"
        expected = _numpy(labels, logits, np.ones(labels.shape) if w is None else w)
        np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


def test_nothing_to_predict_gives_zero():
    labels, logits = _data(0)
    assert float(masked_sparse_cross_entropy(np.full_like(labels, -1), logits)) == 0.0
    assert float(masked_sparse_cross_entropy(labels, logits, np.zeros(labels.shape))) == 0.0


def _old_tagging(y, y_pred, word_mask):
    """tasks/tagging/model.py before: the softmax head's loss."""
    mask = ops.cast(word_mask, "float32") * ops.cast(y >= 0, "float32")
    per_word = keras.losses.sparse_categorical_crossentropy(
        ops.maximum(y, 0), y_pred, from_logits=True)
    return ops.sum(per_word * mask) / ops.maximum(ops.sum(mask), 1.0)


def _old_span_ner(labels, y_pred, span_mask, none_weight):
    """tasks/span_ner/model.py before."""
    valid = ops.cast(span_mask, "float32") * ops.cast(labels >= 0, "float32")
    weight = valid * ops.where(labels == 0, none_weight, 1.0)
    per_span = keras.losses.sparse_categorical_crossentropy(
        ops.maximum(labels, 0), y_pred, from_logits=True)
    return ops.sum(per_span * weight) / ops.maximum(ops.sum(weight), 1e-6)


def _old_pretraining(labels, logits):
    """tasks/pretraining/model.py before: MLM and SBO."""
    real = ops.cast(labels >= 0, "float32")
    per_slot = keras.losses.sparse_categorical_crossentropy(
        ops.maximum(labels, 0), logits, from_logits=True)
    return ops.sum(per_slot * real) / ops.maximum(ops.sum(real), 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_bit_for_bit_equal_to_the_losses_it_replaced(seed):
    labels, logits = _data(seed, fraction_padded=[0.0, 0.3, 1.0][seed % 3])
    mask = (np.random.default_rng(seed).random(labels.shape) < 0.7).astype("int32")
    new = masked_sparse_cross_entropy
    pairs = [
        (new(labels, logits, weights=mask), _old_tagging(labels, logits, mask)),
        (new(labels, logits), _old_pretraining(labels, logits)),
    ]
    for none_weight in (1.0, 0.3):
        weight = ops.cast(mask, "float32") * ops.where(labels == 0, none_weight, 1.0)
        pairs.append((new(labels, logits, weights=weight),
                      _old_span_ner(labels, logits, mask, none_weight)))
    for ours, old in pairs:
        assert float(ours) == float(old)
