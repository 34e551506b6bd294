"""Decoding start/end logits: the best span against brute force, windows merged, the
no-answer threshold and its search."""

import types

import numpy as np
import pytest

from nlpzoo.tasks.question_answering.decoding import (
    best_no_answer_threshold,
    decode_all,
    decode_question,
    window_candidates,
)
from nlpzoo.tasks.question_answering.metrics import question_scores


def _window(context_start, offsets, index=0):
    starts = np.array([s for s, _ in offsets])
    ends = np.array([e for _, e in offsets])
    return types.SimpleNamespace(context_start=context_start, char_starts=starts,
                                 char_ends=ends, example_index=index)


def _brute_force(logits, window, max_answer_length):
    """Every valid (score, first, last) pair, by enumeration."""
    count = len(window.char_starts)
    pairs = []
    for first in range(count):
        for last in range(first, min(count, first + max_answer_length)):
            score = logits[0][window.context_start + first] + logits[1][window.context_start + last]
            pairs.append((score, first, last))
    return pairs


@pytest.mark.parametrize("seed", range(20))
def test_the_best_pair_of_a_window_is_the_best_of_all_valid_pairs(seed):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 25))
    window = _window(int(rng.integers(1, 6)), [(i, i + 1) for i in range(count)])
    length = window.context_start + count + 1 + int(rng.integers(0, 5))
    logits = rng.normal(size=(2, length)).round(1)  # ties happen
    max_answer_length = int(rng.integers(1, 8))
    null, pairs = window_candidates(logits, window, n_best_size=length,
                                    max_answer_length=max_answer_length)
    expected = _brute_force(logits, window, max_answer_length)
    assert null == pytest.approx(logits[0][0] + logits[1][0])
    assert sorted((round(s, 6), f, l) for s, _, f, l in pairs) == \
        sorted((round(s, 6), f, l) for s, f, l in expected)
    assert pairs[0][0] == pytest.approx(max(s for s, _, _ in expected))
    # The probability is the product of the start and end softmax over [CLS] and the context.
    allowed = [0] + list(range(window.context_start, window.context_start + count))
    start_p = np.exp(logits[0][allowed]) / np.exp(logits[0][allowed]).sum()
    end_p = np.exp(logits[1][allowed]) / np.exp(logits[1][allowed]).sum()
    score, log_p, first, last = pairs[0]
    assert np.exp(log_p) == pytest.approx(start_p[1 + first] * end_p[1 + last])


def test_n_best_limits_the_starts_and_ends_looked_at():
    window = _window(1, [(i, i + 1) for i in range(6)])
    logits = np.array([[0, 6, 5, 4, 3, 2, 1, -9], [0, 1, 2, 3, 4, 5, 6, -9]], float)
    _, pairs = window_candidates(logits, window, n_best_size=2, max_answer_length=30)
    # starts among tokens 0, 1; ends among tokens 5, 4.
    assert {(f, l) for _, _, f, l in pairs} == {(0, 5), (0, 4), (1, 5), (1, 4)}


def test_windows_are_merged_and_spans_deduplicated():
    example = types.SimpleNamespace(context="aa bb cc dd")
    offsets = [(0, 2), (3, 5), (6, 8), (9, 11)]
    first = _window(2, offsets[:3])
    second = _window(2, offsets[1:])
    # Window 1 likes "bb" (2 + 2), window 2 "cc" (5 + 5) and "bb" again (1 + 1).
    logits_1 = np.array([[3, -9, 0, 2, 0, -9], [3, -9, 0, 2, 0, -9]], float)
    logits_2 = np.array([[1, -9, 1, 5, 0, -9], [1, -9, 1, 5, 0, -9]], float)
    decoded = decode_question(example, [first, second], [logits_1, logits_2], n_best_size=3,
                              max_answer_length=1)
    assert (decoded.answer, decoded.start_char, decoded.end_char) == ("cc", 6, 8)
    assert [a["answer"] for a in decoded.n_best] == ["cc", "bb", "aa"]  # bb once: its best 4
    assert decoded.n_best[1]["score"] == 4.0
    # The no-answer score is the lowest window's: 2 (window 2), against the best 10.
    assert decoded.no_answer_margin == pytest.approx(2 - 10)


def test_no_answer_wins_only_when_allowed_and_above_the_threshold():
    example = types.SimpleNamespace(context="aa bb")
    window = _window(1, [(0, 2), (3, 5)])
    logits = np.array([[4.0, 1, 2, -9], [4.0, 1, 1, -9]])  # null 8, best 3: margin 5
    assert decode_question(example, [window], [logits]).answer == "bb"
    assert decode_question(example, [window], [logits], allow_no_answer=True,
                           no_answer_threshold=4.9).answer == ""
    kept = decode_question(example, [window], [logits], allow_no_answer=True,
                           no_answer_threshold=5.1)
    assert kept.answer == "bb" and kept.no_answer_margin == pytest.approx(5)


def test_decode_all_groups_windows_by_question():
    examples = [types.SimpleNamespace(context="aa bb"), types.SimpleNamespace(context="cc")]
    windows = [_window(1, [(0, 2)], 0), _window(1, [(3, 5)], 0), _window(1, [(0, 2)], 1)]
    logits = [np.array([[0, 1, -9], [0, 1, -9]], float), np.array([[0, 2, -9], [0, 2, -9]], float),
              np.array([[0, 1, -9], [0, 1, -9]], float)]
    assert [d.answer for d in decode_all(examples, windows, logits)] == ["bb", "cc"]


def test_the_threshold_search_finds_the_best_f1_by_brute_force():
    rng = np.random.default_rng(3)
    gold = [[""] if rng.random() < 0.5 else ["x y"] for _ in range(40)]
    answers = [str(rng.choice(["x y", "x", "z"])) for _ in gold]
    decoded = [types.SimpleNamespace(n_best=({"answer": a},), no_answer_margin=float(m))
               for a, m in zip(answers, rng.normal(size=len(gold)).round(2))]

    def score(answer, wanted):
        return question_scores(answer, wanted)[1]

    threshold, best = best_no_answer_threshold(decoded, gold, score)

    def mean_at(t):
        return np.mean([score("" if d.no_answer_margin > t else d.n_best[0]["answer"], g)
                        for d, g in zip(decoded, gold)])

    candidates = [d.no_answer_margin for d in decoded] + [-10.0, 10.0]
    brute = max(mean_at(t) for t in candidates + [c - 1e-3 for c in candidates])
    assert best == pytest.approx(brute) and mean_at(threshold) == pytest.approx(brute)
