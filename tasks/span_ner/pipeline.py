"""tf.data pipeline for span NER: word features plus a [words, L] span label grid.

Features are those of `tasks.words.pipeline`. The label of the span that starts
at word i and ends at word i + w sits at `labels[i, w]`: 0 for NONE, the
entity type id otherwise, -1 where the span runs past the last kept word.
Sentences that carry document context (`left_context`, `right_context`, see
`tasks.words.document_context`) are encoded with it; spans stay inside the sentence.
"""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.words.document_context import context_lists
from nlpzoo.tasks.text.labels import LabelSet
from nlpzoo.tasks.words.pipeline import LABEL_PADDING, make_word_dataset


def span_label_grid(sentence, labels, max_span_width):
    """The [words, max_span_width] label grid of one `SpanSentence`.

    `labels` is a `LabelSet`, or the label names in id order.

    Spans wider than `max_span_width` cannot be predicted and are left out
    (they still count as missed in evaluation). Two gold labels on the same
    span keep the first in sorted order.

    Examples:
    >>> from nlpzoo.tasks.span_ner import SpanSentence
    >>> s = SpanSentence(("New", "York", "rocks"), ((0, 1, "LOC"),))
    >>> span_label_grid(s, LabelSet(["NONE", "LOC"]), 2).tolist()
    [[0, 1], [0, 0], [0, -1]]
    """
    if not isinstance(labels, LabelSet):
        labels = LabelSet(labels, kind="entity type")  # names in id order
    count = len(sentence.words)
    grid = np.zeros((count, max_span_width), np.int32)
    starts = np.arange(count)[:, None]
    widths = np.arange(max_span_width)[None, :]
    grid[starts + widths >= count] = LABEL_PADDING
    for start, end, label in reversed(sentence.spans):
        label_id = labels.id(label, f"{sentence.source}:{sentence.line}")
        if end - start < max_span_width:
            grid[start, end - start] = label_id
    return grid


def make_dataset(
    sentences,
    preprocessor,
    labels,
    max_span_width=10,
    max_seq_length=None,
    batch_size=32,
    training=False,
    seed=None,
):
    """Builds batched (features, span label grids) for `SpanSentence`s.

    Args:
        sentences: the sentences; their entity types must be in `labels`.
            Their `left_context` and `right_context` words, if any, are
            packed around them, unlabelled.
        preprocessor: a `WordPreprocessor`, or a `WordPieceTokenizer` (then
            with `max_seq_length`, 128 by default).
        labels: "NONE" then the entity types.
        max_span_width: L, the widest span in words.
        max_seq_length, batch_size, training, seed: as for `make_word_dataset`.
    """
    label_set = LabelSet(labels, kind="entity type")
    grids = [span_label_grid(s, label_set, max_span_width) for s in sentences]
    left_context, right_context = context_lists(sentences)
    dataset = make_word_dataset(
        [s.words for s in sentences], grids, preprocessor, max_seq_length=max_seq_length,
        batch_size=batch_size, training=training, seed=seed, left_context=left_context,
        right_context=right_context)

    def hide_truncated_spans(features, labels):
        # Spans that end past the last kept word (truncated sentences) are not labels.
        kept = tf.reduce_sum(features["word_mask"], axis=1)
        words = tf.shape(labels)[1]
        ends = tf.range(words)[:, None] + tf.range(max_span_width)[None, :]
        inside = ends[None, :, :] < kept[:, None, None]
        return features, tf.where(inside, labels, LABEL_PADDING)

    return dataset.map(hide_truncated_spans, num_parallel_calls=tf.data.AUTOTUNE)
