"""Decoding span-classifier probabilities into entities, and calibrating the threshold.

Pure Python and NumPy, no TensorFlow.

The input for one sentence is what a span classifier gives for its candidate spans:

- `probabilities`: [S, C], one row per candidate span, one column per label of
  `labels`; column 0 is `NONE` (no entity).
- `starts`, `ends`: [S] word positions of each candidate, `end` INCLUSIVE.

A candidate's score is its best non-`NONE` probability and its label that column's label
(the first such column on ties). Candidates with a score >= `threshold` are kept:

- nested NER (`decode_nested`) keeps them all;
- flat NER (`decode_flat`) keeps a non-overlapping subset: `"greedy"` by descending score, or
  `"exact"`, the subset with the largest total score (weighted interval scheduling).

Lowering the threshold trades precision for recall; `calibrate_threshold` picks the one with the
best micro F1 on held-out data.

Outputs are lists of `(start, end, label, score)` sorted by start, end and label, with
`score` a Python float.
"""

import bisect
import math
import typing

import numpy as np

from nlpzoo.tasks.span_ner.metrics import span_scores

FLAT_METHODS = ("greedy", "exact")
MODES = ("flat", "nested")
DEFAULT_GRID = tuple(round(0.05 * step, 2) for step in range(1, 20))
# calibrate_threshold also tries every distinct candidate score when there are at most this many.
MAX_SCORE_THRESHOLDS = 100


def spans_overlap(a, b):
    """Whether two spans share at least one word.

    Args:
        a: a span `(start, end, ...)` with an inclusive `end`; further fields are ignored.
        b: another span.

    Returns:
        True when the word ranges intersect (nesting counts as overlapping).

    Examples:
    >>> spans_overlap((0, 1, "ORG"), (1, 3, "PER")), spans_overlap((0, 1), (2, 3))
    (True, False)
    """
    return a[0] <= b[1] and b[0] <= a[1]


# ---------------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------------


def _best_labels(probabilities, starts, ends, labels):
    """Every candidate span with its best non-NONE label and probability, unfiltered.

    Returns:
        A list of `(start, end, label, score)` in input order.
    """
    probabilities = np.asarray(probabilities, dtype=np.float64)
    starts = np.asarray(starts)
    ends = np.asarray(ends)
    if probabilities.ndim != 2 or probabilities.shape[1] != len(labels):
        raise ValueError(
            f"probabilities must have shape [S, {len(labels)}] (one column per label), "
            f"got {probabilities.shape}"
        )
    num_spans = probabilities.shape[0]
    if starts.shape != (num_spans,) or ends.shape != (num_spans,):
        raise ValueError(
            f"starts {starts.shape} and ends {ends.shape} must have shape [{num_spans}]"
        )
    if num_spans and (starts.min() < 0 or np.any(starts > ends)):
        raise ValueError("every span needs 0 <= start <= end (end is inclusive)")
    if num_spans == 0 or len(labels) < 2:
        return []
    entity_probabilities = probabilities[:, 1:]
    best = np.argmax(entity_probabilities, axis=1)
    scores = entity_probabilities[np.arange(num_spans), best]
    return [
        (int(start), int(end), labels[index + 1], float(score))
        for start, end, index, score in zip(starts.tolist(), ends.tolist(), best.tolist(), scores)
    ]


def _above(candidates, threshold):
    return [candidate for candidate in candidates if candidate[3] >= threshold]


def _greedy(candidates):
    """Non-overlapping subset: by descending score, then shorter, then earlier, then label."""
    order = sorted(candidates, key=lambda c: (-c[3], c[1] - c[0], c[0], c[2]))
    occupied = set()
    kept = []
    for candidate in order:
        words = range(candidate[0], candidate[1] + 1)
        if not any(word in occupied for word in words):
            occupied.update(words)
            kept.append(candidate)
    return kept


def _exact(candidates):
    """Non-overlapping subset with the largest total score (weighted interval scheduling).

    Sort by end; `best[j]` is the best total over the first j candidates, and candidate j
    either is left out (`best[j]`) or joins the best set of candidates that end before it starts
    (found by binary search). O(n log n).
    """
    order = sorted(candidates, key=lambda c: (c[1], c[0], c[2]))
    ends = [candidate[1] for candidate in order]
    best = [0.0] * (len(order) + 1)
    previous = [0] * len(order)
    for j, (start, _, _, score) in enumerate(order):
        previous[j] = bisect.bisect_left(ends, start, 0, j)  # candidates ending before `start`
        best[j + 1] = max(best[j], best[previous[j]] + score)
    kept = []
    j = len(order)
    while j > 0:
        if best[j] == best[j - 1]:
            j -= 1  # leaving candidate j - 1 out is as good: prefer that
        else:
            kept.append(order[j - 1])
            j = previous[j - 1]
    return kept


def _check_method(method):
    if method not in FLAT_METHODS:
        raise ValueError(f"method={method!r}: expected one of {FLAT_METHODS}")


def _select(candidates, threshold, mode, method):
    kept = _above(candidates, threshold)
    if mode == "flat":
        kept = _greedy(kept) if method == "greedy" else _exact(kept)
    return sorted(kept)


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


def decode_nested(probabilities, starts, ends, labels, threshold=0.5):
    """Nested NER: every candidate span whose best non-`NONE` probability is >= `threshold`.

    Args:
        probabilities: [S, C] probabilities per candidate span; column 0 is `NONE`.
        starts: [S] first word of each span.
        ends: [S] last word of each span (inclusive).
        labels: the C labels, `NONE` first.
        threshold: the smallest kept score.

    Returns:
        A sorted list of `(start, end, label, score)`; spans may nest or overlap.

    Raises:
        ValueError: the shapes do not agree, or a span has start > end or a negative start.

    Examples:
    >>> probabilities = [[0.1, 0.9, 0.0], [0.2, 0.1, 0.7], [0.6, 0.3, 0.1]]
    >>> decode_nested(probabilities, [0, 0, 1], [2, 1, 1], ["NONE", "ORG", "PER"])
    [(0, 1, 'PER', 0.7), (0, 2, 'ORG', 0.9)]
    """
    candidates = _best_labels(probabilities, starts, ends, labels)
    return _select(candidates, threshold, "nested", None)


def decode_flat(probabilities, starts, ends, labels, threshold=0.5, method="greedy"):
    """Flat NER: a non-overlapping set of spans among those scoring >= `threshold`.

    A candidate's score is its best non-`NONE` probability.

    - `"greedy"`: take candidates by descending score and keep one unless it overlaps a span
      already kept. Ties go to the shorter span, then the earlier start.
    - `"exact"`: the non-overlapping set with the largest total score (weighted interval
      scheduling, O(S log S)). Its total is never below greedy's. Among equally good sets it
      prefers leaving out the candidates that end last.

    Args:
        probabilities: [S, C] probabilities per candidate span; column 0 is `NONE`.
        starts: [S] first word of each span.
        ends: [S] last word of each span (inclusive).
        labels: the C labels, `NONE` first.
        threshold: the smallest score a kept span may have.
        method: `"greedy"` or `"exact"`.

    Returns:
        A sorted list of non-overlapping `(start, end, label, score)`.

    Raises:
        ValueError: an unknown method, shapes that do not agree, or a span with start > end or a
            negative start.

    Examples:
    >>> probabilities = [[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]]
    >>> starts, ends = [0, 1, 2], [1, 1, 2]
    >>> decode_flat(probabilities, starts, ends, ["NONE", "ORG"])
    [(0, 1, 'ORG', 0.9), (2, 2, 'ORG', 0.7)]
    >>> decode_flat([[0.1, 0.9], [0.4, 0.6], [0.4, 0.6]], [0, 0, 1], [1, 0, 1],
    ...             ["NONE", "ORG"], method="exact")
    [(0, 0, 'ORG', 0.6), (1, 1, 'ORG', 0.6)]
    """
    _check_method(method)
    candidates = _best_labels(probabilities, starts, ends, labels)
    return _select(candidates, threshold, "flat", method)


# ---------------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------------


class Calibration(typing.NamedTuple):
    """What `calibrate_threshold` found; unpacks as `(threshold, f1, table)`.

    Attributes:
        threshold: the threshold with the best micro F1.
        f1: that F1.
        table: `(threshold, precision, recall, f1)` for every threshold tried, by threshold.

    Examples:
    >>> threshold, f1, table = Calibration(0.5, 1.0, [(0.5, 1.0, 1.0, 1.0)])
    >>> threshold
    0.5
    """

    threshold: float
    f1: float
    table: list


def _default_grid(candidate_lists):
    """0.05, 0.10, ..., 0.95, plus the distinct candidate scores when there are few."""
    scores = {candidate[3] for candidates in candidate_lists for candidate in candidates}
    grid = set(DEFAULT_GRID)
    if len(scores) <= MAX_SCORE_THRESHOLDS:
        grid.update(scores)
    return sorted(grid)


def _is_better(f1, threshold, best_f1, best_threshold):
    """Higher F1 wins; on (nearly) equal F1, the threshold closer to 0.5, then the higher."""
    if best_f1 is None:
        return True
    if not math.isclose(f1, best_f1, rel_tol=0.0, abs_tol=1e-12):
        return f1 > best_f1
    distance, best_distance = abs(threshold - 0.5), abs(best_threshold - 0.5)
    if not math.isclose(distance, best_distance, rel_tol=0.0, abs_tol=1e-12):
        return distance < best_distance
    return threshold > best_threshold


def calibrate_threshold(
    gold, predictions, labels, mode="flat", method="greedy", grid=None
):
    """Picks the decoding threshold with the best micro F1 on held-out sentences.

    Args:
        gold: per sentence, its gold `(start, end, label)` spans (or `SpanSentence` objects).
        predictions: per sentence, `(probabilities, starts, ends)` as for `decode_flat`.
        labels: the C labels, `NONE` first.
        mode: `"flat"` (decode with `decode_flat`) or `"nested"` (`decode_nested`).
        method: `"greedy"` or `"exact"`, for flat decoding.
        grid: the thresholds to try. By default 0.05, 0.10, ..., 0.95, plus every distinct
            candidate score when there are at most `MAX_SCORE_THRESHOLDS` of them (a threshold
            equal to a score keeps that candidate, so these cover every distinct decoding).

    Returns:
        A `Calibration` `(threshold, f1, table)`: the best threshold, its micro F1 (exact match
        of start, end and label, as `span_scores`), and `(threshold, precision, recall, f1)`
        for every threshold tried, sorted by threshold. Ties in F1 go to the threshold closest
        to 0.5 (then the higher one).

    Raises:
        ValueError: `gold` and `predictions` differ in length, an unknown mode or method, an
            empty grid, or decoding inputs that do not agree.

    Examples:
    >>> labels = ["NONE", "PER"]
    >>> predictions = [([[0.3, 0.7], [0.6, 0.4]], [0, 1], [0, 1])]
    >>> threshold, f1, table = calibrate_threshold([[(0, 0, "PER"), (1, 1, "PER")]],
    ...                                            predictions, labels, grid=[0.3, 0.5])
    >>> threshold, f1
    (0.3, 1.0)
    >>> [row[1:] for row in table]
    [(1.0, 1.0, 1.0), (1.0, 0.5, 0.6666666666666666)]
    """
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: expected one of {MODES}")
    if mode == "flat":
        _check_method(method)
    if len(gold) != len(predictions):
        raise ValueError(f"{len(gold)} gold sentences but {len(predictions)} predictions")
    candidate_lists = [
        _best_labels(probabilities, starts, ends, labels)
        for probabilities, starts, ends in predictions
    ]
    grid = _default_grid(candidate_lists) if grid is None else sorted({float(t) for t in grid})
    if not grid:
        raise ValueError("grid is empty: no threshold to try")
    table = []
    best_threshold = best_f1 = None
    for threshold in grid:
        predicted = [_select(c, threshold, mode, method) for c in candidate_lists]
        scores = span_scores(gold, predicted)
        table.append((threshold, scores["precision"], scores["recall"], scores["f1"]))
        if _is_better(scores["f1"], threshold, best_f1, best_threshold):
            best_threshold, best_f1 = threshold, scores["f1"]
    return Calibration(best_threshold, best_f1, table)
