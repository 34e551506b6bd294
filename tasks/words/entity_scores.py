"""Precision, recall and F1 of predicted entities against gold ones, overall and per type.

One home for the counting that tagging (`tasks.tagging.metrics`) and span NER
(`tasks.span_ner.metrics`) share: each turns its predictions into entities
`(sentence, start, end, type)` and calls `score_entities`. Pure Python.
"""

import collections


def _divide(numerator, denominator):
    """numerator / denominator, and 0.0 where the denominator is 0 (seqeval's default)."""
    return numerator / denominator if denominator else 0.0


def precision_recall_f1(true_count, pred_count, correct_count):
    """Precision, recall and F1 computed the way seqeval does (F1 from P and R).

    Args:
        true_count: number of gold entities.
        pred_count: number of predicted entities.
        correct_count: number of predicted entities that are also gold.

    Returns:
        A dict with `precision`, `recall`, `f1` and `support` (= `true_count`); a score
        whose denominator is 0 is 0.0.

    Examples:
    >>> precision_recall_f1(4, 2, 2)
    {'precision': 1.0, 'recall': 0.5, 'f1': 0.6666666666666666, 'support': 4}
    """
    precision = _divide(correct_count, pred_count)
    recall = _divide(correct_count, true_count)
    f1 = _divide(2 * precision * recall, precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "support": true_count}


def score_entities(gold, predicted):
    """Micro-averaged and per-type precision, recall and F1 of `predicted` against `gold`.

    An entity is a tuple `(sentence, start, end, type)`; a predicted entity is correct when
    the same tuple is gold. The sentence index keeps equal spans of different sentences
    apart. Duplicates count once (the entities are sets).

    Args:
        gold: the gold entities, any iterable of `(sentence, start, end, type)`.
        predicted: the predicted entities, same form.

    Returns:
        A dict with `precision`, `recall`, `f1`, `support` (number of gold entities) and
        `per_type`: `{type: {"precision", "recall", "f1", "support"}}` for every type seen in
        the gold or the predicted entities, sorted by type. A score whose denominator is 0 is
        0.0, as in `seqeval`.

    Examples:
    >>> scores = score_entities({(0, 0, 1, "PER"), (0, 3, 3, "LOC")},
    ...                         {(0, 0, 1, "PER"), (0, 3, 3, "ORG")})
    >>> scores["precision"], scores["recall"], scores["support"]
    (0.5, 0.5, 2)
    >>> scores["per_type"]["ORG"]
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 0}
    """
    gold, predicted = set(gold), set(predicted)
    correct = gold & predicted

    def count_by_type(entities):
        return collections.Counter(entity_type for *_, entity_type in entities)

    gold_counts = count_by_type(gold)
    predicted_counts = count_by_type(predicted)
    correct_counts = count_by_type(correct)
    per_type = {
        entity_type: precision_recall_f1(
            gold_counts[entity_type], predicted_counts[entity_type], correct_counts[entity_type]
        )
        for entity_type in sorted(gold_counts | predicted_counts)
    }
    overall = precision_recall_f1(len(gold), len(predicted), len(correct))
    overall["per_type"] = per_type
    return overall
