"""Micro and macro F1 of multi-label predictions (tasks/modeling/multi_label_metrics.py)
against brute-force counting, over uneven batches, with labels never predicted and never
present; the binary cross-entropy loss against the formula."""

import keras
import numpy as np
import pytest

from nlpzoo.tasks.classification.multi_label import (
    binary_cross_entropy,
    evaluation_metrics,
    multi_label_loss,
)
from nlpzoo.tasks.modeling.multi_label_metrics import MultiLabelF1, multi_label_scores


def _f1_by_counting(targets, predicted, labels):
    """F1 of the (example, label) decisions in `labels`, counted one by one in Python."""
    tp = fp = fn = 0
    for row_targets, row_predicted in zip(targets.tolist(), predicted.tolist()):
        for label in labels:
            gold, guess = row_targets[label] == 1, row_predicted[label]
            tp += gold and guess
            fp += (not gold) and guess
            fn += gold and not guess
    return 0.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def _brute_force(targets, predicted):
    num_labels = targets.shape[1]
    micro = _f1_by_counting(targets, predicted, range(num_labels))
    macro = np.mean([_f1_by_counting(targets, predicted, [j]) for j in range(num_labels)])
    return micro, macro


def _random_case(seed, examples=37, num_labels=6):
    """Random 0/1 targets and logits; label 4 is never present, label 5 never predicted
    (and label 3 present in a single example)."""
    rng = np.random.default_rng(seed)
    targets = (rng.random((examples, num_labels)) < 0.3).astype("float32")
    targets[:, 4] = 0
    targets[:, 3] = 0
    targets[rng.integers(examples), 3] = 1
    logits = rng.normal(size=(examples, num_labels)).astype("float32")
    logits[:, 5] = -np.abs(logits[:, 5]) - 1.5  # probabilities below 0.19
    return targets, logits


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("threshold", [0.5, 0.3])
def test_keras_f1_over_uneven_batches_equals_counting_over_the_set(seed, threshold):
    targets, logits = _random_case(seed)
    predicted = 1 / (1 + np.exp(-logits.astype(np.float64))) >= threshold
    assert not predicted[:, 5].any() and not targets[:, 4].any()
    micro, macro = _brute_force(targets, predicted)
    metrics = {average: MultiLabelF1(6, average, threshold=threshold)
               for average in ("micro", "macro")}
    for start, stop in ((0, 16), (16, 32), (32, 37)):  # batches of 16, 16 and 5
        for metric in metrics.values():
            metric.update_state(targets[start:stop], logits[start:stop])
    assert float(metrics["micro"].result()) == pytest.approx(micro, abs=1e-6)
    assert float(metrics["macro"].result()) == pytest.approx(macro, abs=1e-6)
    scores = multi_label_scores(targets, predicted)
    assert scores["micro_f1"] == pytest.approx(micro, abs=1e-12)
    assert scores["macro_f1"] == pytest.approx(macro, abs=1e-12)
    # Labels 4 (never present) and 5 (never predicted) count 0 in the macro mean.
    assert _f1_by_counting(targets, predicted, [4]) == 0.0
    metrics["macro"].reset_state()
    assert float(metrics["macro"].result()) == 0.0


def test_precision_recall_and_exact_match_by_hand():
    targets = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 0]])
    predicted = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 0]], bool)
    # TP 4 (rows 0, 2, 2, 3), FP 2 (row 2 label 2, row 3 label 0), FN 1 (row 0 label 2).
    scores = multi_label_scores(targets, predicted)
    assert scores["micro_precision"] == pytest.approx(4 / 6)
    assert scores["micro_recall"] == pytest.approx(4 / 5)
    assert scores["micro_f1"] == pytest.approx(8 / 11)
    # Label 0: TP 2 FP 1 → 0.8; label 1: TP 2 → 1; label 2: FP 1 FN 1 → 0.
    assert scores["macro_f1"] == pytest.approx((0.8 + 1.0 + 0.0) / 3)
    assert scores["exact_match"] == 0.25  # row 1 only (no label, none predicted)


def test_sample_weights_count_examples_as_often_as_their_weight():
    targets, logits = _random_case(7, examples=9)
    weights = np.array([2, 1, 0, 1, 3, 1, 0, 2, 1], "float32")
    metric = MultiLabelF1(6, "micro")
    metric.update_state(targets, logits, sample_weight=weights)
    repeated = np.repeat(np.arange(9), weights.astype(int))
    expected, _ = _brute_force(targets[repeated], logits[repeated] >= 0)
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)


def test_the_metric_round_trips_its_config():
    metric = MultiLabelF1(4, "macro", threshold=0.3, name="macro_f1")
    clone = MultiLabelF1.from_config(metric.get_config())
    assert (clone.num_labels, clone.average, clone.threshold, clone.name) == (
        4, "macro", 0.3, "macro_f1")
    with pytest.raises(ValueError, match="average must be one of micro, macro"):
        MultiLabelF1(4, "weighted")


def test_the_loss_is_the_hand_computed_binary_cross_entropy():
    # p = σ(logit): 0.8, 0.25 | 0.5, 0.9; targets 1, 0 | 1, 1:
    # −(ln 0.8 + ln 0.75 + ln 0.5 + ln 0.9) / 4
    probabilities = np.array([[0.8, 0.25], [0.5, 0.9]])
    logits = np.log(probabilities / (1 - probabilities)).astype("float32")
    targets = np.array([[1, 0], [1, 1]], "float32")
    by_hand = -(np.log(0.8) + np.log(0.75) + np.log(0.5) + np.log(0.9)) / 4
    assert float(multi_label_loss()(targets, logits)) == pytest.approx(by_hand, rel=1e-5)
    assert binary_cross_entropy(logits, targets) == pytest.approx(by_hand, rel=1e-6)
    assert evaluation_metrics(logits, targets, [0.5, 0.5])["loss"] == pytest.approx(by_hand,
                                                                                    rel=1e-6)
    # Smoothing ε = 0.2: targets 0.9 / 0.1; −Σ (t ln p + (1 − t) ln (1 − p)) / 4.
    smoothed = targets * 0.8 + 0.1
    by_hand = -np.mean(smoothed * np.log(probabilities)
                       + (1 - smoothed) * np.log(1 - probabilities))
    assert float(multi_label_loss(0.2)(targets, logits)) == pytest.approx(by_hand, rel=1e-5)
    # Keras's own class: a saved model needs no custom objects.
    assert type(multi_label_loss()) is keras.losses.BinaryCrossentropy


def test_the_loss_stays_finite_for_large_logits():
    logits = np.array([[80.0, -80.0]], "float32")
    targets = np.array([[0.0, 1.0]], "float32")
    assert float(multi_label_loss()(targets, logits)) == pytest.approx(80.0, rel=1e-4)
    assert binary_cross_entropy(logits, targets) == pytest.approx(80.0, rel=1e-9)
