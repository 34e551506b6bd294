"""Per-label threshold tuning (tasks/modeling/label_thresholds.py) against a brute-force
search over every threshold that could matter, on hand-made and random cases."""

import numpy as np
import pytest

from nlpzoo.tasks.modeling.label_thresholds import (
    best_threshold,
    f1_at_thresholds,
    labels_over_thresholds,
    threshold_candidates,
    tune_thresholds,
)


def _f1_by_counting(probabilities, present, threshold):
    tp = sum(1 for p, y in zip(probabilities, present) if p >= threshold and y)
    fp = sum(1 for p, y in zip(probabilities, present) if p >= threshold and not y)
    fn = sum(1 for p, y in zip(probabilities, present) if p < threshold and y)
    return 0.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def _brute_force_best(probabilities, present):
    """The best F1 over a fine grid of thresholds and over the scores themselves (what any
    threshold can give: predictions only change at a score)."""
    grid = np.concatenate([np.linspace(0, 1, 2001), probabilities])
    return max(_f1_by_counting(probabilities, present, t) for t in grid)


def test_a_hand_made_case():
    # Label 0: the two positives score 0.30 and 0.45, the negatives 0.10 and 0.40: the best
    # F1 cuts below 0.30 (TP 2, FP 1: 0.8) — not at 0.5, where nothing is predicted (0).
    # Label 1: separable at any threshold in (0.55, 0.60]; 0.5 lies outside, so the
    # midpoint 0.575. Label 2: never present: every threshold gives 0; 0.5 is kept.
    probabilities = np.array([[0.30, 0.60, 0.9],
                              [0.45, 0.70, 0.2],
                              [0.10, 0.55, 0.6],
                              [0.40, 0.20, 0.1]])
    targets = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 0], [0, 0, 0]])
    thresholds, f1 = tune_thresholds(probabilities, targets)
    assert thresholds.tolist() == pytest.approx([0.2, 0.575, 0.5])
    assert f1.tolist() == pytest.approx([0.8, 1.0, 0.0])
    for label in range(3):
        column, present = probabilities[:, label], targets[:, label]
        assert f1[label] == pytest.approx(_brute_force_best(column, present))
        assert _f1_by_counting(column, present, thresholds[label]) == pytest.approx(f1[label])


def test_ties_keep_the_threshold_closest_to_one_half():
    # Every threshold in (0.2, 0.8] separates the classes: 0.5 itself is among the best.
    assert best_threshold(np.array([0.2, 0.8]), np.array([0, 1])) == (0.5, 1.0)
    # Only thresholds in (0.1, 0.3] give F1 1 (0.5 gives TP 1, FN 1: 0.667): the
    # interval's midpoint 0.2, not 0.5.
    threshold, f1 = best_threshold(np.array([0.1, 0.3, 0.9]), np.array([0, 1, 1]))
    assert (threshold, f1) == (pytest.approx(0.2), 1.0)
    # Two disjoint best intervals at the same distance from 0.5: the lower one wins.
    probabilities = np.array([0.3, 0.4, 0.6, 0.7])
    present = np.array([1, 0, 0, 1])
    candidates = threshold_candidates(probabilities)
    f1 = f1_at_thresholds(probabilities, present, candidates)
    best = candidates[f1 == f1.max()]
    chosen, _ = best_threshold(probabilities, present)
    assert chosen == min(best, key=lambda t: (abs(t - 0.5), t))


@pytest.mark.parametrize("seed", range(6))
def test_random_labels_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    # Scores rounded to 2 places: ties between examples, some of them across classes.
    probabilities = np.round(rng.random((40, 5)), 2)
    targets = (rng.random((40, 5)) < np.array([0.05, 0.2, 0.5, 0.8, 0.0])).astype(int)
    thresholds, f1 = tune_thresholds(probabilities, targets)
    for label in range(5):
        column, present = probabilities[:, label], targets[:, label]
        assert f1[label] == pytest.approx(_brute_force_best(column, present), abs=1e-12)
        assert _f1_by_counting(column, present, thresholds[label]) == pytest.approx(f1[label])
        # No candidate with the same F1 is closer to 0.5.
        candidates = threshold_candidates(column)
        scores = f1_at_thresholds(column, present, candidates)
        assert all(abs(t - 0.5) >= abs(thresholds[label] - 0.5)
                   for t in candidates[scores == f1[label]])
    assert thresholds[4] == 0.5  # never present


def test_f1_at_thresholds_counts_as_by_hand():
    rng = np.random.default_rng(11)
    probabilities = np.round(rng.random(25), 1)
    present = rng.random(25) < 0.4
    thresholds = np.linspace(-0.05, 1.05, 23)
    expected = [_f1_by_counting(probabilities, present, t) for t in thresholds]
    np.testing.assert_allclose(f1_at_thresholds(probabilities, present, thresholds),
                               expected, atol=1e-12)


def test_labels_over_thresholds_includes_the_threshold_itself():
    over = labels_over_thresholds(np.array([[0.5, 0.49], [0.2, 0.7]]), [0.5, 0.5])
    assert over.tolist() == [[True, False], [False, True]]
