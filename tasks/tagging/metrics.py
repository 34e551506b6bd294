"""Entity-level scores for tagging, equal to `seqeval`'s default mode (the conlleval rules).

Pure Python; `seqeval` itself is only used by the tests, as the reference.
"""

from nlpzoo.tasks.words.entity_scores import score_entities
from nlpzoo.tasks.words.tags import tags_to_spans


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


def _token_accuracy(true_tag_sequences, pred_tag_sequences):
    pairs = [
        (true_tag, pred_tag)
        for true_tags, pred_tags in zip(true_tag_sequences, pred_tag_sequences)
        for true_tag, pred_tag in zip(true_tags, pred_tags)
    ]
    correct = sum(true_tag == pred_tag for true_tag, pred_tag in pairs)
    return correct / len(pairs) if pairs else 0.0


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
    scores = score_entities(_entities(true_tag_sequences), _entities(pred_tag_sequences))
    scores["token_accuracy"] = _token_accuracy(true_tag_sequences, pred_tag_sequences)
    scores["per_type"] = scores.pop("per_type")  # per_type stays the last key
    return scores
