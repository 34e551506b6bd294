"""Span-level precision, recall and F1 for (flat or nested) NER.

Pure Python. On spans read from tags with `tags_to_spans`, the scores equal
`tasks.tagging.metrics.entity_scores`, and so `seqeval`'s default mode: both count
with `tasks.words.entity_scores.score_entities`.
"""

from nlpzoo.tasks.words.entity_scores import score_entities


def _span_set(sentences, what):
    """`{(sentence_index, start, end, label)}`; the index keeps sentences apart."""
    entities = set()
    for index, spans in enumerate(sentences):
        spans = getattr(spans, "spans", spans)  # a SpanSentence, or its spans
        for span in spans:
            if len(span) < 3:
                raise ValueError(
                    f"{what} sentence {index}: span {span!r} is not (start, end, label, ...)"
                )
            start, end, label = span[:3]
            entities.add((index, int(start), int(end), label))
    return entities


def span_scores(gold, predicted):
    """Span-level precision, recall and F1, overall (micro-averaged) and per entity type.

    A predicted span is correct when its start, end (inclusive) and label all equal those of a
    gold span of the same sentence. Spans may nest or overlap; a span listed twice in one
    sentence counts once. Scores whose denominator is 0 are 0.0.

    Args:
        gold: per sentence, its gold spans `(start, end, label)` (or `SpanSentence` objects).
        predicted: per sentence, the predicted spans; fields after the label (such as the
            score of `decode_flat`) are ignored.

    Returns:
        A dict with `precision`, `recall`, `f1`, `support` (number of gold spans) and
        `per_type`: `{type: {"precision", "recall", "f1", "support"}}` for every type seen in
        the gold or the predicted spans, sorted by type.

    Raises:
        ValueError: `gold` and `predicted` differ in number of sentences, or a span has fewer
            than three fields.

    Examples:
    >>> scores = span_scores([[(0, 2, "ORG"), (0, 1, "ORG"), (4, 4, "LOC")]],
    ...                      [[(0, 2, "ORG", 0.9), (4, 4, "PER", 0.8)]])
    >>> scores["precision"], scores["recall"], scores["support"]
    (0.5, 0.3333333333333333, 3)
    >>> scores["per_type"]["PER"]
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 0}
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    return score_entities(_span_set(gold, "gold"), _span_set(predicted, "predicted"))
