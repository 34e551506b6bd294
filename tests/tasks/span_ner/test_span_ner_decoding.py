import itertools
import math

import numpy as np
import pytest

from nlpzoo.tasks.span_ner import decoding
from nlpzoo.tasks.span_ner.decoding import (
    calibrate_threshold,
    decode_flat,
    decode_nested,
    spans_overlap,
)
from nlpzoo.tasks.span_ner.metrics import span_scores

LABELS = ["NONE", "LOC", "ORG", "PER"]


def _all_spans(num_words, max_width):
    """Every (start, end) of width <= max_width, as the span enumeration layer lists them."""
    spans = [
        (start, start + width - 1)
        for width in range(1, min(max_width, num_words) + 1)
        for start in range(num_words - width + 1)
    ]
    starts = np.array([s for s, _ in spans], "int32").reshape(-1)
    ends = np.array([e for _, e in spans], "int32").reshape(-1)
    return starts, ends


def _random_inputs(rng, num_words=None, max_width=4, num_labels=len(LABELS)):
    num_words = int(rng.integers(1, 12)) if num_words is None else num_words
    starts, ends = _all_spans(num_words, max_width)
    logits = rng.normal(scale=2.0, size=(len(starts), num_labels))
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return probabilities, starts, ends


def _best(probabilities):
    """(label index, score) per row, the way the decoders read a row."""
    index = 1 + np.argmax(probabilities[:, 1:], axis=1)
    return index, probabilities[np.arange(len(probabilities)), index]


def _total(spans):
    return sum(span[3] for span in spans)


def _assert_no_overlap(spans):
    for a, b in itertools.combinations(spans, 2):
        assert not spans_overlap(a, b), (a, b)


# ---------------------------------------------------------------------------------------------
# spans_overlap
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ((0, 0), (0, 0), True),
        ((0, 1), (1, 2), True),  # inclusive ends: word 1 is shared
        ((0, 1), (2, 3), False),
        ((0, 5, "ORG"), (2, 3, "PER", 0.9), True),  # nested
        ((3, 3), (0, 2), False),
    ],
)
def test_spans_overlap(a, b, expected):
    assert spans_overlap(a, b) is expected and spans_overlap(b, a) is expected


def test_spans_overlap_equals_shared_words():
    for a in itertools.combinations_with_replacement(range(5), 2):
        for b in itertools.combinations_with_replacement(range(5), 2):
            shared = set(range(a[0], a[1] + 1)) & set(range(b[0], b[1] + 1))
            assert spans_overlap(a, b) == bool(shared)


# ---------------------------------------------------------------------------------------------
# Nested decoding
# ---------------------------------------------------------------------------------------------


def test_nested_keeps_exactly_the_spans_above_threshold():
    rng = np.random.default_rng(0)
    for trial in range(200):
        probabilities, starts, ends = _random_inputs(rng)
        threshold = float(rng.uniform(0.1, 0.9))
        index, score = _best(probabilities)
        expected = sorted(
            (int(s), int(e), LABELS[i], float(p))
            for s, e, i, p in zip(starts, ends, index, score)
            if p >= threshold
        )
        assert decode_nested(probabilities, starts, ends, LABELS, threshold) == expected


def test_nested_threshold_is_inclusive_and_none_is_not_a_label():
    probabilities = [[0.5, 0.5, 0.0], [0.9, 0.05, 0.05], [0.0, 0.2, 0.8]]
    assert decode_nested(probabilities, [0, 1, 2], [0, 1, 2], ["NONE", "A", "B"]) == [
        (0, 0, "A", 0.5),
        (2, 2, "B", 0.8),
    ]
    # With a low threshold, a span whose NONE probability dominates still comes back.
    assert decode_nested(probabilities, [0, 1, 2], [0, 1, 2], ["NONE", "A", "B"], 0.05)[1] == (
        1, 1, "A", 0.05
    )


@pytest.mark.parametrize("max_width", [1, 3, 6])
def test_nested_gold_spans_survive_one_hot_probabilities(max_width):
    rng = np.random.default_rng(max_width)
    for _ in range(100):
        num_words = int(rng.integers(1, 10))
        starts, ends = _all_spans(num_words, max_width)
        row_of = {(int(s), int(e)): row for row, (s, e) in enumerate(zip(starts, ends))}
        gold = {
            (s, e, LABELS[int(rng.integers(1, len(LABELS)))])
            for s, e in row_of
            if rng.random() < 0.3
        }
        probabilities = np.zeros((len(starts), len(LABELS)))
        probabilities[:, 0] = 1.0
        for start, end, label in gold:
            probabilities[row_of[start, end]] = np.eye(len(LABELS))[LABELS.index(label)]
        decoded = decode_nested(probabilities, starts, ends, LABELS)
        assert [span[:3] for span in decoded] == sorted(gold)
        assert all(span[3] == 1.0 for span in decoded)


def test_nested_united_airlines_holding():
    words = ["United", "Airlines", "Holding", "rose"]
    starts, ends = _all_spans(len(words), 3)
    probabilities = np.tile([0.97, 0.01, 0.01, 0.01], (len(starts), 1))
    for row, span in enumerate(zip(starts, ends)):
        if span in [(0, 1), (0, 2)]:
            probabilities[row] = [0.1, 0.05, 0.8, 0.05]
    assert [span[:3] for span in decode_nested(probabilities, starts, ends, LABELS)] == [
        (0, 1, "ORG"),
        (0, 2, "ORG"),
    ]
    # Flat decoding keeps one of the two nested spans.
    assert [span[:3] for span in decode_flat(probabilities, starts, ends, LABELS)] == [
        (0, 1, "ORG")
    ]


# ---------------------------------------------------------------------------------------------
# Flat decoding
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["greedy", "exact"])
def test_flat_never_overlaps_and_keeps_only_candidates(method):
    rng = np.random.default_rng(1)
    for _ in range(300):
        probabilities, starts, ends = _random_inputs(rng)
        threshold = float(rng.uniform(0.0, 0.8))
        nested = decode_nested(probabilities, starts, ends, LABELS, threshold)
        flat = decode_flat(probabilities, starts, ends, LABELS, threshold, method)
        _assert_no_overlap(flat)
        assert flat == sorted(flat)
        assert set(flat) <= set(nested)


def test_greedy_takes_best_first_and_skips_what_overlaps():
    rng = np.random.default_rng(2)
    for _ in range(200):
        probabilities, starts, ends = _random_inputs(rng)
        flat = decode_flat(probabilities, starts, ends, LABELS, threshold=0.3)
        candidates = decode_nested(probabilities, starts, ends, LABELS, threshold=0.3)
        # Every candidate left out overlaps a kept span that scores at least as high: the
        # greedy choice, and also why the result is maximal.
        for candidate in set(candidates) - set(flat):
            assert any(spans_overlap(candidate, kept) and kept[3] >= candidate[3] for kept in flat)


def test_greedy_ties_prefer_shorter_then_earlier():
    labels = ["NONE", "X"]
    probabilities = [[0.2, 0.8]] * 3
    # (0, 2) and (1, 1) tie on score: the shorter (1, 1) wins; (0, 2) then overlaps it.
    assert decode_flat(probabilities, [0, 1, 3], [2, 1, 3], labels) == [
        (1, 1, "X", 0.8),
        (3, 3, "X", 0.8),
    ]
    # (0, 1) and (1, 2) tie on score and width: the earlier one wins.
    assert decode_flat(probabilities[:2], [1, 0], [2, 1], labels) == [(0, 1, "X", 0.8)]


def test_exact_is_never_below_greedy():
    rng = np.random.default_rng(3)
    strictly_better = 0
    for _ in range(500):
        probabilities, starts, ends = _random_inputs(rng, max_width=5)
        threshold = float(rng.uniform(0.0, 0.6))
        greedy = decode_flat(probabilities, starts, ends, LABELS, threshold, "greedy")
        exact = decode_flat(probabilities, starts, ends, LABELS, threshold, "exact")
        assert _total(exact) >= _total(greedy) - 1e-9
        strictly_better += _total(exact) > _total(greedy) + 1e-9
    assert strictly_better > 0  # the trials do reach cases where greedy is not optimal


def _brute_force_best_total(candidates):
    best = 0.0
    for size in range(1, len(candidates) + 1):
        for subset in itertools.combinations(candidates, size):
            if not any(spans_overlap(a, b) for a, b in itertools.combinations(subset, 2)):
                best = max(best, _total(subset))
    return best


def test_exact_equals_brute_force_for_small_n():
    rng = np.random.default_rng(4)
    for _ in range(300):
        num_spans = int(rng.integers(0, 10))
        starts = rng.integers(0, 8, size=num_spans)
        ends = starts + rng.integers(0, 4, size=num_spans)
        probabilities = rng.dirichlet(np.ones(len(LABELS)) * 0.5, size=num_spans)
        probabilities = probabilities.reshape(num_spans, len(LABELS))
        candidates = decode_nested(probabilities, starts, ends, LABELS, threshold=0.0)
        exact = decode_flat(probabilities, starts, ends, LABELS, threshold=0.0, method="exact")
        _assert_no_overlap(exact)
        assert math.isclose(_total(exact), _brute_force_best_total(candidates), abs_tol=1e-9)


def test_exact_beats_greedy_on_a_hand_made_case():
    # One long span (0.9) against two short ones (0.6 + 0.6) that it covers.
    probabilities = [[0.1, 0.9], [0.4, 0.6], [0.4, 0.6]]
    args = (probabilities, [0, 0, 1], [1, 0, 1], ["NONE", "X"])
    assert decode_flat(*args) == [(0, 1, "X", 0.9)]
    assert decode_flat(*args, method="exact") == [(0, 0, "X", 0.6), (1, 1, "X", 0.6)]


def test_edge_cases_and_errors():
    empty = np.zeros((0, len(LABELS)))
    assert decode_nested(empty, [], [], LABELS) == []
    assert decode_flat(empty, [], [], LABELS, method="exact") == []
    assert decode_flat([[1.0], [1.0]], [0, 1], [0, 1], ["NONE"]) == []  # no entity label
    with pytest.raises(ValueError, match="method"):
        decode_flat(empty, [], [], LABELS, method="beam")
    with pytest.raises(ValueError, match="shape"):
        decode_nested(np.zeros((2, 3)), [0, 1], [0, 1], LABELS)
    with pytest.raises(ValueError, match="shape"):
        decode_nested(np.zeros((2, 4)), [0], [0, 1], LABELS)
    with pytest.raises(ValueError, match="start <= end"):
        decode_flat(np.zeros((1, 4)), [2], [1], LABELS)
    with pytest.raises(ValueError, match="start <= end"):
        decode_flat(np.zeros((1, 4)), [-1], [1], LABELS)


# ---------------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------------


def _hand_made_calibration_case():
    """Two sentences; the gold spans score 0.8, 0.6 and 0.35, false alarms 0.7 and 0.3."""
    labels = ["NONE", "PER"]
    first = ([[0.2, 0.8], [0.3, 0.7], [0.65, 0.35]], [0, 2, 4], [0, 2, 4])
    second = ([[0.4, 0.6], [0.7, 0.3]], [0, 1], [0, 1])
    gold = [[(0, 0, "PER"), (4, 4, "PER")], [(0, 0, "PER")]]
    return gold, [first, second], labels


def test_calibration_picks_the_f1_maximising_threshold():
    gold, predictions, labels = _hand_made_calibration_case()
    # >= 0.8: 1 of 1 right (P 1, R 1/3, F1 .5); >= 0.6: 2 of 3 (F1 2/3);
    # >= 0.35: 3 of 4 (P .75, R 1, F1 6/7); >= 0.3: 3 of 5 (F1 .75).
    threshold, f1, table = calibrate_threshold(gold, predictions, labels)
    assert threshold == 0.35 and f1 == pytest.approx(6 / 7)
    thresholds = [row[0] for row in table]
    assert thresholds == sorted(thresholds)
    assert {0.05, 0.5, 0.95, 0.3, 0.35, 0.6, 0.7, 0.8} <= set(thresholds)
    for row_threshold, precision, recall, row_f1 in table:
        predicted = [decode_flat(*p, labels, threshold=row_threshold) for p in predictions]
        scores = span_scores(gold, predicted)
        assert (precision, recall, row_f1) == (scores["precision"], scores["recall"], scores["f1"])
        assert row_f1 <= f1
    # A grid without 0.35: the best of what is offered (0.1 keeps all five spans).
    assert calibrate_threshold(gold, predictions, labels, grid=[0.1, 0.5, 0.9])[:2] == (
        0.1,
        pytest.approx(0.75),
    )


def test_calibration_ties_go_to_the_threshold_closest_to_half():
    gold, predictions, labels = _hand_made_calibration_case()
    # 0.6, 0.65 and 0.7 all keep the same two spans.
    assert calibrate_threshold(gold, predictions, labels, grid=[0.7, 0.65, 0.61])[0] == 0.61
    # Equal distance from 0.5: the higher one.
    only_misses = [[(9, 9, "PER")], []]
    assert calibrate_threshold(only_misses, predictions, labels, grid=[0.4, 0.6, 0.3])[0] == 0.6


def test_calibration_flat_exact_and_nested():
    labels = ["NONE", "ORG"]
    # "United Airlines Holding" (0.9) contains "United Airlines" (0.7): both gold.
    predictions = [([[0.1, 0.9], [0.3, 0.7], [0.8, 0.2]], [0, 0, 3], [2, 1, 3])]
    gold = [[(0, 2, "ORG"), (0, 1, "ORG")]]
    nested = calibrate_threshold(gold, predictions, labels, mode="nested")
    assert nested.f1 == 1.0 and 0.2 < nested.threshold <= 0.7
    flat = calibrate_threshold(gold, predictions, labels, mode="flat", method="exact")
    assert flat.f1 == pytest.approx(2 / 3)  # one of two nested gold spans at best


def test_calibration_errors():
    gold, predictions, labels = _hand_made_calibration_case()
    with pytest.raises(ValueError, match="gold sentences"):
        calibrate_threshold(gold[:1], predictions, labels)
    with pytest.raises(ValueError, match="mode"):
        calibrate_threshold(gold, predictions, labels, mode="both")
    with pytest.raises(ValueError, match="method"):
        calibrate_threshold(gold, predictions, labels, method="viterbi")
    with pytest.raises(ValueError, match="empty"):
        calibrate_threshold(gold, predictions, labels, grid=[])


def test_calibration_on_random_data_matches_a_direct_search():
    rng = np.random.default_rng(5)
    predictions, gold = [], []
    for _ in range(40):
        probabilities, starts, ends = _random_inputs(rng)
        predictions.append((probabilities, starts, ends))
        gold.append([s[:3] for s in decode_flat(probabilities, starts, ends, LABELS, 0.4)[::2]])
    for mode, method in [("flat", "greedy"), ("flat", "exact"), ("nested", "greedy")]:
        threshold, f1, table = calibrate_threshold(gold, predictions, LABELS, mode, method)
        assert len(table) == 19  # many distinct scores: the default grid alone
        decode = decode_nested if mode == "nested" else decode_flat
        extra = {} if mode == "nested" else {"method": method}
        expected = max(
            span_scores(gold, [decode(*p, LABELS, t, **extra) for p in predictions])["f1"]
            for t in decoding.DEFAULT_GRID
        )
        assert f1 == expected and threshold in decoding.DEFAULT_GRID
