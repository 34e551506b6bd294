"""tf.data pipeline for word tagging: one tag id per word, on its first subword.

See `tasks.words.pipeline` for the features. Labels are tag ids [W], -1 at
padded words. Sentences that carry document context (`left_context`,
`right_context`, see `tasks.words.document_context`) are encoded with it.
"""

import numpy as np

from nlpzoo.tasks.words.document_context import context_lists
from nlpzoo.tasks.text.labels import LabelSet
from nlpzoo.tasks.words.tags import split_tag
from nlpzoo.tasks.words.pipeline import LABEL_PADDING, make_word_dataset

__all__ = ["LABEL_PADDING", "continuation_ids", "encode_tags", "make_dataset"]


def encode_tags(sentences, labels):
    """Tag ids per sentence; a tag not in `labels` is an error naming the line."""
    tags = LabelSet(labels, kind="tag")
    return [[tags.id(tag, f"{sentence.source}:{sentence.line_of(offset)}")
             for offset, tag in enumerate(sentence.tags)] for sentence in sentences]


def continuation_ids(labels):
    """For each tag id, the id a non-first subword gets when every subword is labelled.

    B-x continues as I-x (when I-x is a known tag); every other tag as itself.

    Examples:
    >>> continuation_ids(["O", "B-PER", "I-PER"]).tolist()
    [0, 2, 2]
    """
    index = {name: i for i, name in enumerate(labels)}
    result = []
    for i, name in enumerate(labels):
        prefix, entity_type = split_tag(name) if name != "O" else ("O", None)
        inside = f"I-{entity_type}"
        result.append(index[inside] if prefix == "B" and inside in index else i)
    return np.asarray(result, np.int32)


def make_dataset(
    sentences,
    preprocessor,
    labels,
    max_seq_length=None,
    batch_size=32,
    training=False,
    seed=None,
    label_all_subwords=False,
):
    """Builds batched (features, tag ids) for `sentences` (`TaggedSentence`s).

    Args:
        sentences: the sentences; their tags must be in `labels`. Their
            `left_context` and `right_context` words, if any, are packed
            around them, unlabelled.
        preprocessor: a `WordPreprocessor`, or a `WordPieceTokenizer` (then
            with `max_seq_length`, 128 by default).
        labels: tag names in id order.
        max_seq_length: with a tokenizer: the longest `[CLS] … [SEP]` sequence.
        batch_size: sentences per batch.
        training: shuffle every epoch and group sentences of similar length.
        seed: shuffle seed.
        label_all_subwords: in training, label every subword (B-x continues as
            I-x) instead of the first subword of each word only.
    """
    tag_ids = [np.asarray(ids, np.int32) for ids in encode_tags(sentences, labels)]
    left_context, right_context = context_lists(sentences)
    return make_word_dataset(
        [s.words for s in sentences],
        tag_ids,
        preprocessor,
        max_seq_length=max_seq_length,
        batch_size=batch_size,
        training=training,
        seed=seed,
        continuation=continuation_ids(labels) if label_all_subwords else None,
        left_context=left_context,
        right_context=right_context,
    )
