"""Per-label decision thresholds of a multi-label model, tuned for F1 on validation data.

A label is predicted when its probability is at least its threshold. Each
label's threshold is picked on its own, as the one that gives that label the
best F1 on the validation set: sigmoid outputs of a model trained with binary
cross-entropy are rarely calibrated for rare labels, whose best threshold is
often far below 0.5.

Candidates: 0.5 itself, 0 (every example), and the midpoint between every two
neighbouring distinct probabilities of the label, 0 and 1 included as
neighbours (so "every example" and "no example" are candidates with a margin
too). A midpoint keeps a margin on both sides of the validation scores. Among candidates with the best F1 the one
closest to 0.5 wins, the lower on an exact tie: a label whose F1 no threshold
changes (never present in the validation set) keeps 0.5.
"""

import numpy as np

from nlpzoo.tasks.modeling.multi_label_metrics import f1_from_counts

DEFAULT_THRESHOLD = 0.5


def threshold_candidates(probabilities):
    """The candidate thresholds of one label's probabilities [N], ascending (module docstring).

    Examples:
    >>> threshold_candidates(np.array([0.2, 0.8, 0.2])).tolist()
    [0.0, 0.1, 0.5, 0.9]
    """
    scores = np.unique(np.concatenate([[0.0, 1.0], np.asarray(probabilities, np.float64)]))
    midpoints = (scores[:-1] + scores[1:]) / 2
    # 0 as well: "every example" when some probability is 0 itself (no midpoint below it).
    return np.unique(np.concatenate([[0.0], midpoints, [DEFAULT_THRESHOLD]]))


def f1_at_thresholds(probabilities, present, thresholds):
    """One label's F1 at each of `thresholds` (predicted: probability ≥ threshold).

    Args:
        probabilities: the label's probability for each example [N].
        present: whether each example has the label [N] (0/1 or bool).
        thresholds: candidate thresholds [T].

    Returns:
        F1 [T] (float64), counted with sorted scores: O((N + T) log N).

    Examples:
    >>> f1_at_thresholds(np.array([0.9, 0.6, 0.3]), np.array([1, 0, 1]),
    ...                  np.array([0.2, 0.5, 0.95])).round(4).tolist()
    [0.8, 0.5, 0.0]
    """
    probabilities = np.asarray(probabilities, np.float64)
    present = np.asarray(present).astype(bool)
    order = np.argsort(probabilities, kind="stable")
    sorted_scores = probabilities[order]
    # positives_from[k]: how many examples with the label have one of the N - k highest scores.
    positives_from = np.concatenate([np.cumsum(present[order][::-1])[::-1], [0]])
    first_predicted = np.searchsorted(sorted_scores, thresholds, side="left")
    predicted = len(probabilities) - first_predicted
    true_positives = positives_from[first_predicted]
    return f1_from_counts(true_positives, predicted - true_positives,
                          present.sum() - true_positives)


def best_threshold(probabilities, present):
    """`(threshold, F1)`: one label's F1-best candidate threshold, closest to 0.5 on ties.

    Examples:
    >>> best_threshold(np.array([0.1, 0.3, 0.35, 0.9]), np.array([0, 1, 1, 1]))
    (0.2, 1.0)
    >>> best_threshold(np.array([0.1, 0.7]), np.array([0, 0]))  # never present: no change
    (0.5, 0.0)
    """
    candidates = threshold_candidates(probabilities)
    f1 = f1_at_thresholds(probabilities, present, candidates)
    best = np.flatnonzero(f1 == f1.max())
    # Closest to 0.5; candidates are ascending, so argmin takes the lower one on a tie.
    chosen = best[np.argmin(np.abs(candidates[best] - DEFAULT_THRESHOLD))]
    return float(candidates[chosen]), float(f1[chosen])


def tune_thresholds(probabilities, targets):
    """Each label's F1-best threshold on validation data (`best_threshold` per column).

    Args:
        probabilities: [N, C] the model's label probabilities on the validation set.
        targets: [N, C] 0/1, the validation set's labels.

    Returns:
        `(thresholds, f1)`: two float64 arrays [C], each label's threshold and its F1 there.

    Examples:
    >>> thresholds, f1 = tune_thresholds(np.array([[0.1, 0.9], [0.3, 0.6], [0.35, 0.2]]),
    ...                                  np.array([[0, 1], [1, 1], [1, 0]]))
    >>> thresholds.tolist(), f1.tolist()  # label 1: 0.4 and 0.5 tie, 0.5 is kept
    ([0.2, 0.5], [1.0, 1.0])
    """
    probabilities = np.asarray(probabilities, np.float64)
    targets = np.asarray(targets)
    pairs = [best_threshold(probabilities[:, j], targets[:, j])
             for j in range(probabilities.shape[1])]
    thresholds = np.array([threshold for threshold, _ in pairs], np.float64)
    return thresholds, np.array([f1 for _, f1 in pairs], np.float64)


def labels_over_thresholds(probabilities, thresholds):
    """Which labels are predicted: probability ≥ its label's threshold ([N, C] bool).

    Examples:
    >>> labels_over_thresholds(np.array([[0.3, 0.3]]), [0.25, 0.5]).tolist()
    [[True, False]]
    """
    return np.asarray(probabilities) >= np.asarray(thresholds, np.float64)
