"""Sentences longer than the model's window, cut into overlapping windows and merged back.

A word-level model sees at most `max_seq_length - 2` subwords. Prediction
and evaluation must still give every word of a longer text a label, so a
long sentence is cut into windows of whole words that overlap by up to
`stride` subwords (as the `stride` of Hugging Face's token-classification
pipeline); each window is encoded and predicted as a sentence of its own,
with the words before and after it as document context (packed only where
the window leaves room; see `tasks.words.document_context`). Each word then takes
its prediction from the window where it has the most context: the window
that maximises the smaller of its distances, in words, to the window's two
edges (ties go to the earlier window). Span scores are merged the same way
per span (the smaller distance of its first and last word), and entities
are decoded once over the whole sentence.

`window_sentences` makes the windows (sentences carrying a `Window` in
their `window` field); `merge_word_values` and `merge_span_scores` give
each original sentence back its values. Sentences that fit are passed
through unchanged, so their predictions are exactly those of an unwindowed
run.

Examples:
>>> plan_windows([2, 2, 2, 2, 2], budget=6, stride=2)
[(0, 3), (2, 5)]
>>> owners([(0, 3), (2, 5)], 5).tolist()
[0, 0, 0, 1, 1]
"""

import dataclasses
import logging
import numbers

import numpy as np
from absl import flags

DEFAULT_STRIDE_FRACTION = 0.5
STRIDE_FLAG = "stride"


@dataclasses.dataclass(frozen=True)
class Window:
    """Where a window sentence comes from.

    Args:
        parent: the whole sentence (a `TaggedSentence` or `SpanSentence`).
        index: the position of `parent` in the list that was windowed.
        start, end: the parent's words in this window, `[start, end)`.
    """

    parent: object
    index: int
    start: int
    end: int


def check_stride(value):
    """`value` as an int >= 0 or None (for the tasks' `Options`).

    Examples:
    >>> check_stride(None), check_stride(32)
    (None, 32)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"stride must be an integer >= 0 or None, got {value!r}")
    return int(value)


def define_stride_flag(flag_values):
    """Defines `--stride` in `flag_values` once (word tasks in tools/train.py, and
    tools/predict.py, tools/evaluate.py, tools/export.py to override a model's own).

    Examples:
    >>> values = flags.FlagValues()
    >>> define_stride_flag(values); define_stride_flag(values)
    >>> _ = values(["predict", "--stride=16"])
    >>> values.stride
    16
    """
    if STRIDE_FLAG in flag_values:
        return
    flags.DEFINE_integer(
        STRIDE_FLAG, None, "Tagging and span NER: a sentence longer than the model's window "
        "(max_seq_length subwords) is predicted and evaluated in windows of whole words that "
        "overlap by up to this many subwords; each word takes the prediction of the window "
        "where it has the most context. Default: half the window.", lower_bound=0,
        flag_values=flag_values)


def resolve_stride(stride, max_seq_length):
    """The overlap in subwords: `stride`, or half the window when it is None.

    Examples:
    >>> resolve_stride(None, 128), resolve_stride(16, 128)
    (63, 16)
    """
    budget = max_seq_length - 2
    if stride is None:
        return int(budget * DEFAULT_STRIDE_FRACTION)
    if stride < 0 or stride >= budget:
        raise ValueError(f"stride={stride} must be in 0..{budget - 1} "
                         f"(max_seq_length={max_seq_length} leaves {budget} subwords)")
    return int(stride)


def plan_windows(counts, budget, stride):
    """`[(start, end), ...]` word windows of a sentence whose words have `counts` subwords.

    Each window takes as many whole words as fit in `budget` subwords (a
    single word longer than the budget is a window of its own; the encoder
    then drops it). The next window starts at the first word after the
    current start from which the rest of the current window has at most
    `stride` subwords (and leaves room for the next word), so windows
    overlap by up to `stride` subwords and each adds a word. A sentence that
    fits is one window.

    Examples:
    >>> plan_windows([1, 1, 1], budget=8, stride=2)
    [(0, 3)]
    >>> plan_windows([3, 3, 3, 3], budget=6, stride=0)
    [(0, 2), (2, 4)]
    >>> plan_windows([1, 9, 1], budget=4, stride=1)
    [(0, 1), (1, 2), (2, 3)]
    """
    counts = [int(c) for c in counts]
    windows, start = [], 0
    while True:
        end, used = start, 0
        while end < len(counts) and (end == start or used + counts[end] <= budget):
            used += counts[end]
            end += 1
        windows.append((start, end))
        if end >= len(counts):
            return windows
        # Overlap: at most `stride` subwords, and room left for the next word.
        overlap = min(stride, budget - counts[end])
        following, tail = end, 0
        while following - 1 > start and tail + counts[following - 1] <= overlap:
            following -= 1
            tail += counts[following]
        start = following


def owners(windows, num_words):
    """int [num_words]: for each word, the window where it has the most context.

    Examples:
    >>> owners([(0, 4), (2, 6), (4, 8)], 8).tolist()
    [0, 0, 0, 1, 1, 2, 2, 2]
    """
    best = np.full(num_words, -1)
    best_context = np.full(num_words, -1)
    for index, (start, end) in enumerate(windows):
        positions = np.arange(start, end)
        context = np.minimum(positions - start, end - 1 - positions)
        better = context > best_context[start:end]
        best[start:end][better] = index
        best_context[start:end][better] = context[better]
    return best


def window_sentences(sentences, subword_counts, max_seq_length, stride, make_window):
    """Sentences → the same, with each one longer than the window replaced by its windows.

    Args:
        sentences: word sentences (with `words`, `left_context`, `right_context`).
        subword_counts: a function from a list of word tuples to one list of
            subword counts per word each (every word counts at least 1).
        max_seq_length: the model's window, `[CLS]` and `[SEP]` included.
        stride: overlap in subwords (`resolve_stride`).
        make_window: `make_window(sentence, window, left, right)` → the
            `Window` as a sentence of the same class (its words and labels the
            parent's, sliced; `window` set), given its context words.

    Returns:
        A list of sentences, windows in place of their parents, in order.
    """
    budget = max_seq_length - 2
    stride = resolve_stride(stride, max_seq_length)
    sentences = list(sentences)
    counts = subword_counts([s.words for s in sentences])
    result = []
    for index, (sentence, word_counts) in enumerate(zip(sentences, counts)):
        if sum(word_counts) <= budget:
            result.append(sentence)
            continue
        words = sentence.words
        for start, end in plan_windows(word_counts, budget, stride):
            # The subwords the window leaves free: at most that many context words are used.
            free = max(0, budget - sum(word_counts[start:end]))
            left, right = context_words(
                sentence.left_context if start == 0 else (), words[max(0, start - free):start],
                words[end:end + free], sentence.right_context if end == len(words) else (),
                free)
            result.append(make_window(sentence, Window(sentence, index, start, end), left, right))
    return result


def context_words(far_left, near_left, near_right, far_right, free):
    """`(left, right)`: the context words of a window, at most `free` words on each side.

    The left context is `far_left + near_left` (the document's words before the
    sentence, then the sentence's before the window), the right one
    `near_right + far_right`. The encoder packs at most `free` context subwords
    around a window (the `max_seq_length - 2` subwords less the window's own),
    the left ones from the end of its context and the right ones from the start,
    and every word is at least one subword: only the last `free` words on the left
    and the first `free` on the right can be packed, so the encoding is the same
    as with all of them. Cutting here keeps a sentence's windows linear in its
    length: each window carrying all the words around it made `[windows × words]`
    (a 40,000-word line took 24 GB and two minutes to tag).

    Examples:
    >>> context_words(("a", "b"), ("c",), ("d", "e"), ("f",), free=2)
    (('b', 'c'), ('d', 'e'))
    >>> context_words((), (), ("d",), ("f", "g"), free=8)
    ((), ('d', 'f', 'g'))
    >>> context_words(("a",), ("b",), ("c",), ("d",), free=0)
    ((), ())
    """
    left = tuple(near_left[max(0, len(near_left) - free):])
    missing = free - len(left)
    if missing > 0:
        left = tuple(far_left[max(0, len(far_left) - missing):]) + left
    right = tuple(near_right[:free])
    missing = free - len(right)
    if missing > 0:
        right = right + tuple(far_right[:missing])
    return left, right


def windowed_examples(sentences, preprocessor, stride, make_window):
    """`window_sentences` with a `WordPreprocessor`'s window and subword counts."""
    return window_sentences(sentences, preprocessor.subword_counts,
                            preprocessor.max_seq_length, stride, make_window)


def kept_word_counts(sentences, preprocessor, what="training"):
    """How many leading words of each sentence fit the window (training cuts the rest).

    A sentence keeps its words while their subwords fit in `max_seq_length - 2`
    (`WordPreprocessor`). Logs how many sentences lose words.

    Returns:
        One int per sentence.

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> from nlpzoo.tasks.words.preprocessor import WordPreprocessor
    >>> preprocessor = WordPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"],
    ...                                 max_seq_length=5)
    >>> kept_word_counts([TaggedSentence(("a",) * 5, ("O",) * 5)], preprocessor)
    [3]
    """
    budget = preprocessor.max_seq_length - 2
    counts = preprocessor.subword_counts([s.words for s in sentences])
    kept = [int(np.searchsorted(np.cumsum(c), budget, side="right")) for c in counts]
    cut = sum(k < len(c) for k, c in zip(kept, counts))
    if cut:
        logging.warning(
            "%d of %d %s sentences are longer than max_seq_length=%d subwords: their words "
            "past the window are not trained on (predict and evaluate use windows)",
            cut, len(sentences), what, preprocessor.max_seq_length)
    return kept


def log_truncated(sentences, preprocessor, what="training"):
    """Logs how many sentences lose words to the window (training truncates them).

    Returns the count.
    """
    kept = kept_word_counts(sentences, preprocessor, what)
    return sum(k < len(s.words) for k, s in zip(kept, sentences))


def parents(sentences):
    """The original sentences of a possibly windowed list, in order.

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> whole = TaggedSentence(("a", "b", "c"), ("O",) * 3)
    >>> windows = [dataclasses.replace(whole, words=whole.words[s:e], tags=whole.tags[s:e],
    ...                                window=Window(whole, 0, s, e)) for s, e in ((0, 2), (1, 3))]
    >>> parents(windows) == [whole]
    True
    """
    result = []
    for _, group in _groups(sentences):
        result.append(group[0].window.parent if group[0].window else group[0])
    return result


def _merge_groups(sentences, values):
    """`(group, its values)` for each run of `_groups`; `values` has one item per sentence."""
    values = list(values)
    if len(values) != len(sentences):
        raise ValueError(f"{len(values)} predictions for {len(sentences)} sentences")
    position = 0
    for _, group in _groups(sentences):
        yield group, values[position:position + len(group)]
        position += len(group)


def _groups(sentences):
    """`(key, [sentences])` runs: a sentence alone, or the windows of one parent."""
    groups = []
    for position, sentence in enumerate(sentences):
        key = ("window", sentence.window.index) if sentence.window else ("whole", position)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(sentence)
        else:
            groups.append((key, [sentence]))
    return groups


def merge_word_values(sentences, values):
    """Per-word values of windows → per-word values of the original sentences.

    Args:
        sentences: the list `window_sentences` returned.
        values: one list of per-word values for each of `sentences`.

    Returns:
        One list per original sentence: each word's value from its owner window.

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> whole = TaggedSentence(tuple("abcdef"), ("O",) * 6)
    >>> windows = [dataclasses.replace(whole, words=whole.words[s:e], tags=whole.tags[s:e],
    ...            window=Window(whole, 0, s, e)) for s, e in ((0, 4), (2, 6))]
    >>> merge_word_values(windows, [["x0", "x1", "x2", "x3"], ["y2", "y3", "y4", "y5"]])
    [['x0', 'x1', 'x2', 'y3', 'y4', 'y5']]
    """
    merged = []
    for group, group_values in _merge_groups(sentences, values):
        if not group[0].window:
            merged.append(list(group_values[0]))
            continue
        spans = [(s.window.start, s.window.end) for s in group]
        owner = owners(spans, len(group[0].window.parent.words))
        merged.append([group_values[k][word - spans[k][0]] for word, k in enumerate(owner)])
    return merged


def merge_span_scores(sentences, scores):
    """Span scores of windows → span scores of the original sentences.

    Args:
        sentences: the list `window_sentences` returned.
        scores: per sentence `(probabilities [S, C], starts [S], ends [S])`
            with word positions inside that sentence (as
            `tasks.span_ner.evaluation.span_probabilities` gives them).

    Returns:
        The same per original sentence, positions in the whole sentence,
        each span scored by the window where its first and last words have
        the most context (sorted by start, then end).
    """
    merged = []
    for group, group_scores in _merge_groups(sentences, scores):
        if not group[0].window:
            merged.append(group_scores[0])
            continue
        probabilities, starts, ends, contexts = [], [], [], []
        for sentence, (p, s, e) in zip(group, group_scores):
            offset, width = sentence.window.start, sentence.window.end - sentence.window.start
            probabilities.append(p)
            starts.append(np.asarray(s) + offset)
            ends.append(np.asarray(e) + offset)
            contexts.append(np.minimum(np.asarray(s), width - 1 - np.asarray(e)))
        probabilities = np.concatenate(probabilities)
        starts, ends = np.concatenate(starts), np.concatenate(ends)
        contexts = np.concatenate(contexts)
        order = np.arange(len(starts))
        # Sort by span, most context first, earlier window first; keep each span's first row.
        rank = np.lexsort((order, -contexts, ends, starts))
        starts, ends = starts[rank], ends[rank]
        first = np.ones(len(rank), bool)
        first[1:] = (starts[1:] != starts[:-1]) | (ends[1:] != ends[:-1])
        merged.append((probabilities[rank][first], starts[first], ends[first]))
    return merged
