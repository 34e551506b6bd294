"""Entity-level scores for tagging, equal to `seqeval`'s default mode (the conlleval rules).

Pure Python; `seqeval` itself is only used by the tests, as the reference.
"""

import collections

from tasks.tagging.readers import tags_to_spans


def _check_same_shape(true_tag_sequences, pred_tag_sequences):
    if len(true_tag_sequences) != len(pred_tag_sequences):
        raise ValueError(
            f"{len(true_tag_sequences)} true sequences but {len(pred_tag_sequences)} predicted"
        )
    for index, (true_tags, pred_tags) in enumerate(zip(true_tag_sequences, pred_tag_sequences)):
        if len(true_tags) != len(pred_tags):
            raise ValueError(
                f"sequence {index}: {len(true_tags)} true tags but {len(pred_tags)} predicted"
            )


def _entities(tag_sequences):
    """The set of `(sequence_index, start, end, type)` of all entities; the index keeps
    entities of different sentences apart, as seqeval's `O` between sentences does."""
    return {
        (index, start, end, entity_type)
        for index, tags in enumerate(tag_sequences)
        for start, end, entity_type in tags_to_spans(tags)
    }


def _divide(numerator, denominator):
    """numerator / denominator, and 0.0 where the denominator is 0 (seqeval's default)."""
    return numerator / denominator if denominator else 0.0


def precision_recall_f1(true_count, pred_count, correct_count):
    """Precision, recall and F1 computed the way seqeval does (F1 from P and R).

    Examples:
    >>> precision_recall_f1(4, 2, 2)["f1"]
    0.6666666666666666
    """
    precision = _divide(correct_count, pred_count)
    recall = _divide(correct_count, true_count)
    f1 = _divide(2 * precision * recall, precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "support": true_count}


def _token_accuracy(true_tag_sequences, pred_tag_sequences):
    pairs = [
        (true_tag, pred_tag)
        for true_tags, pred_tags in zip(true_tag_sequences, pred_tag_sequences)
        for true_tag, pred_tag in zip(true_tags, pred_tags)
    ]
    return _divide(sum(true_tag == pred_tag for true_tag, pred_tag in pairs), len(pairs))


def entity_scores(true_tag_sequences, pred_tag_sequences):
    """Entity-level precision, recall and F1, overall (micro-averaged) and per entity type.

    An entity counts as correct when its type, start and end all match. Entities are read
    with `tags_to_spans`, i.e. exactly as `seqeval`'s default mode (and conlleval) reads
    them: an `I-x` after `O` or after another type starts a new entity. Scores whose
    denominator is 0 are 0.0, as in `seqeval` (`zero_division="warn"`, without the warning).

    Args:
        true_tag_sequences: one sequence of gold tags per sentence.
        pred_tag_sequences: one sequence of predicted tags per sentence, same lengths.

    Returns:
        A dict with `precision`, `recall`, `f1`, `support` (number of gold entities),
        `token_accuracy` (share of words whose tag is right; 0.0 without words) and
        `per_type`: `{type: {"precision", "recall", "f1", "support"}}` for every type seen in
        the gold or the predicted tags, sorted by type.

    Raises:
        ValueError: the sequences differ in number or length, or a tag is not `O` nor
            `B-`/`I-`/`E-`/`S-` followed by a type.

    Examples:
    >>> scores = entity_scores([["B-PER", "I-PER", "O", "B-LOC"]],
    ...                        [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> scores["precision"], scores["recall"], scores["token_accuracy"]
    (0.5, 0.5, 0.75)
    >>> scores["per_type"]["LOC"]
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 1}
    """
    _check_same_shape(true_tag_sequences, pred_tag_sequences)
    true_entities = _entities(true_tag_sequences)
    pred_entities = _entities(pred_tag_sequences)
    correct_entities = true_entities & pred_entities

    def count_by_type(entities):
        return collections.Counter(entity_type for *_, entity_type in entities)

    true_counts = count_by_type(true_entities)
    pred_counts = count_by_type(pred_entities)
    correct_counts = count_by_type(correct_entities)
    per_type = {
        entity_type: precision_recall_f1(
            true_counts[entity_type], pred_counts[entity_type], correct_counts[entity_type]
        )
        for entity_type in sorted(true_counts | pred_counts)
    }
    overall = precision_recall_f1(len(true_entities), len(pred_entities), len(correct_entities))
    overall["token_accuracy"] = _token_accuracy(true_tag_sequences, pred_tag_sequences)
    overall["per_type"] = per_type
    return overall
