"""Start/end logits of a question's windows → its n best answers, as character spans.

Each window proposes the pairs of its `n_best_size` best start and
`n_best_size` best end tokens in the context with end >= start and at most
`max_answer_length` tokens; a pair scores the sum of its two logits. The
question's answers are the best-scoring pairs over all its windows (one per
character span), as text of the context as written. Its no-answer score is
the lowest [CLS] score (start + end logit at position 0) of its windows: the
window that most believes an answer is there. SQuAD v2.0 decoding answers ""
when that no-answer score beats the best answer's by more than a threshold
(`no_answer_threshold`, tuned on validation data after training).

An answer's `probability` is the product of its start and end softmax
probabilities in its window (over [CLS] and the window's context).
"""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Decoded:
    """A question's decoded answer, its n-best list and its no-answer margin.

    `answer`, `start_char`, `end_char` (end exclusive; -1 for no answer),
    `score` (the pair's logit sum) and `probability`; `n_best` a list of
    dicts with the same fields, best first; `no_answer_margin` the
    no-answer score minus the best answer's score (what the threshold is
    compared with).
    """

    answer: str
    start_char: int
    end_char: int
    score: float
    probability: float
    n_best: tuple
    no_answer_margin: float


def _log_softmax(values):
    shifted = values - np.max(values)
    return shifted - np.log(np.sum(np.exp(shifted)))


def window_candidates(logits, window, n_best_size=20, max_answer_length=30):
    """`(no-answer score, [(score, log probability, first token, last token), ...])` of one
    window; tokens index the window's context.

    Examples:
    >>> import types
    >>> window = types.SimpleNamespace(context_start=2, char_starts=np.arange(3))
    >>> logits = np.array([[0.0, -9, 3, 1, 0, -9], [0.0, -9, 0, 2, 4, -9]])
    >>> null, pairs = window_candidates(logits, window, n_best_size=2, max_answer_length=2)
    >>> null, [(float(score), first, last) for score, _, first, last in pairs]
    (0.0, [(5.0, 0, 1), (5.0, 1, 2), (3.0, 1, 1)])
    """
    count = len(window.char_starts)
    context = slice(window.context_start, window.context_start + count)
    starts, ends = np.asarray(logits[0], np.float64), np.asarray(logits[1], np.float64)
    allowed = np.concatenate([[0], np.arange(context.start, context.stop)])
    start_log_p = _log_softmax(starts[allowed])[1:]
    end_log_p = _log_softmax(ends[allowed])[1:]
    context_starts, context_ends = starts[context], ends[context]
    best_starts = np.argsort(-context_starts, kind="stable")[:n_best_size]
    best_ends = np.argsort(-context_ends, kind="stable")[:n_best_size]
    pairs = [(context_starts[first] + context_ends[last],
              start_log_p[first] + end_log_p[last], int(first), int(last))
             for first in best_starts for last in best_ends
             if first <= last < first + max_answer_length]
    pairs.sort(key=lambda pair: (-pair[0], pair[2], pair[3]))
    return float(starts[0] + ends[0]), pairs


def decode_question(example, windows, logits, n_best_size=20, max_answer_length=30,
                    allow_no_answer=False, no_answer_threshold=0.0):
    """The `Decoded` answer of `example` from its windows and their logits.

    Examples:
    >>> import types
    >>> example = types.SimpleNamespace(context="Ann met Bo")
    >>> window = types.SimpleNamespace(context_start=2, char_starts=np.array([0, 4, 8]),
    ...                                char_ends=np.array([3, 7, 10]))
    >>> logits = np.array([[0.0, -9, 1, 0, 3, -9], [0.0, -9, 0, 1, 3, -9]])
    >>> decoded = decode_question(example, [window], [logits])
    >>> decoded.answer, decoded.start_char, decoded.end_char, decoded.no_answer_margin
    ('Bo', 8, 10, -6.0)
    >>> decode_question(example, [window], [logits], allow_no_answer=True,
    ...                 no_answer_threshold=-7.0).answer
    ''
    """
    candidates, null_score = [], None
    for window, window_logit in zip(windows, logits):
        null, pairs = window_candidates(window_logit, window, n_best_size, max_answer_length)
        null_score = null if null_score is None else min(null_score, null)
        candidates.extend((score, log_p, int(window.char_starts[first]),
                           int(window.char_ends[last])) for score, log_p, first, last in pairs)
    candidates.sort(key=lambda candidate: (-candidate[0], candidate[2], candidate[3]))
    n_best, seen = [], set()
    for score, log_p, start, end in candidates:
        if (start, end) in seen:
            continue
        seen.add((start, end))
        n_best.append({"answer": example.context[start:end], "start_char": start,
                       "end_char": end, "score": float(score),
                       "probability": float(np.exp(log_p))})
        if len(n_best) == n_best_size:
            break
    if not n_best:  # no window had a context token (cannot happen with a non-empty context)
        return Decoded("", -1, -1, float(null_score or 0.0), 0.0, (), float("inf"))
    best = n_best[0]
    margin = float(null_score - best["score"])
    if allow_no_answer and margin > no_answer_threshold:
        return Decoded("", -1, -1, float(null_score), 0.0, tuple(n_best), margin)
    return Decoded(best["answer"], best["start_char"], best["end_char"], best["score"],
                   best["probability"], tuple(n_best), margin)


def decode_all(examples, windows, logits, **options):
    """The `Decoded` answer of every example, from all their windows' logits (windows in
    example order, as `make_windows` makes them)."""
    by_example = [[] for _ in examples]
    for window, window_logit in zip(windows, logits):
        by_example[window.example_index].append((window, window_logit))
    return [decode_question(example, [w for w, _ in pairs], [l for _, l in pairs], **options)
            for example, pairs in zip(examples, by_example)]


def best_no_answer_threshold(decoded, examples, score):
    """The no-answer threshold that maximises the mean `score(prediction, example)`, and
    that mean: SQuAD v2.0's search over every question's margin (a question answers ""
    when its margin is above the threshold).

    Examples:
    >>> import types
    >>> decoded = [types.SimpleNamespace(answer="x", n_best=({"answer": "x"},),
    ...                                  no_answer_margin=m) for m in (-2.0, 1.0, 3.0)]
    >>> gold = ["x", "", ""]
    >>> best_no_answer_threshold(decoded, gold, lambda p, g: float(p == g))
    (-0.5, 1.0)
    """
    margins, answered, unanswered = _answer_scores(decoded, examples, score)
    order = np.argsort(-margins, kind="stable")
    # Threshold just above every margin: all answered. Lowering it past a margin makes
    # that question unanswered.
    total = best_total = float(answered.sum())
    best_threshold = float(margins.max()) if len(margins) else 0.0
    for rank, index in enumerate(order):
        total += float(unanswered[index] - answered[index])
        if total > best_total:
            # Halfway to the next margin: every margin down to this one is above it.
            below = margins[order[rank + 1]] if rank + 1 < len(order) else margins[index] - 2
            best_total, best_threshold = total, float(margins[index] + below) / 2
    return best_threshold, best_total / max(len(decoded), 1)


def threshold_table(decoded, examples, exact, f1, thresholds):
    """`[threshold, exact match, F1]` rows (percent) at each threshold: a question answers
    "" when its no-answer margin is above it.

    Examples:
    >>> import types
    >>> decoded = [types.SimpleNamespace(n_best=({"answer": "x"},), no_answer_margin=m)
    ...            for m in (-1.0, 2.0)]
    >>> def same(answer, gold):
    ...     return float(answer == gold)
    >>> threshold_table(decoded, ["x", ""], same, same, [3.0, 0.0])
    [[3.0, 50.0, 50.0], [0.0, 100.0, 100.0]]
    """
    margins = _answer_scores(decoded, examples, exact)[0]
    columns = [_answer_scores(decoded, examples, score)[1:] for score in (exact, f1)]
    rows = []
    for threshold in thresholds:
        unanswered = margins > threshold
        rows.append([float(threshold)] + [
            100.0 * float(np.where(unanswered, none, answered).mean()) if len(margins) else 0.0
            for answered, none in columns])
    return rows


def _answer_scores(decoded, examples, score):
    """Each question's no-answer margin, and `score` of its best answer and of "" (float
    arrays [N]): what the threshold search and the threshold table both read."""
    margins = np.asarray([d.no_answer_margin for d in decoded], np.float64)
    answered = np.asarray([score(d.n_best[0]["answer"] if d.n_best else "", example)
                           for d, example in zip(decoded, examples)], np.float64)
    unanswered = np.asarray([score("", example) for example in examples], np.float64)
    return margins, answered, unanswered
