"""tf.data pipeline for word-level tasks: WordPiece subwords, a word ↔ subword map, buckets.

Each sentence (a list of words, already split) becomes the features of
`tasks.words.preprocessor.WordPreprocessor` and labels [W, ...]: one row per
word (tag ids, or span labels by start), padded with -1.

A word whose subwords do not all fit in `max_seq_length - 2` is dropped with
every word after it; `word_mask` says how many were kept. With document
context (`left_context`, `right_context`), the neighbouring sentences' words
fill the subwords the sentence leaves free (see `WordPreprocessor`); they
carry no label.
"""

import tensorflow as tf

from nlpzoo.tasks.text.batching import shuffle_batch_and_count
from nlpzoo.tasks.text.preprocessor import as_preprocessor
from nlpzoo.tasks.text.ragged_rows import row_prefix, value_rowids
from nlpzoo.tasks.words.preprocessor import WORD_ENDS, WordPreprocessor

LABEL_PADDING = -1
_TOKENIZE_BATCH = 256


def make_word_dataset(
    words,
    labels,
    preprocessor,
    batch_size=32,
    training=False,
    seed=None,
    continuation=None,
    max_seq_length=None,
    left_context=None,
    right_context=None,
):
    """Builds batched (features, labels) from word lists and per-word label rows.

    Args:
        words: one list of words per sentence.
        labels: one int32 array per sentence, shaped [words] or [words, K].
        preprocessor: a `WordPreprocessor` (or a `WordPieceTokenizer`, with
            `max_seq_length`).
        batch_size: sentences per batch.
        training: shuffle every epoch and group sentences of similar length.
        seed: shuffle seed.
        continuation: for [words] labels in training only: label every
            subword, a non-first subword of a word labelled `l` getting
            `continuation[l]`; None labels first subwords only.
        max_seq_length: with a tokenizer: the longest `[CLS] … [SEP]` sequence.
        left_context, right_context: None (no context, the default), or one
            list of words per sentence each: the words before and after it in
            its document (`tasks.words.document_context.add_document_context`).
    """
    preprocessor = as_preprocessor(preprocessor, max_seq_length, WordPreprocessor)
    if not words:
        raise ValueError("no sentences to make a dataset from")
    word_rows = ragged_words(words)
    row_lengths = [len(w) for w in words]
    flat_labels = tf.concat([tf.constant(l, tf.int32) for l in labels], axis=0) if sum(
        row_lengths) else tf.zeros([0] + list(labels[0].shape[1:]), tf.int32)
    ragged_labels = tf.RaggedTensor.from_row_lengths(flat_labels, row_lengths)
    with_context = left_context is not None or right_context is not None
    for name, context in (("left_context", left_context), ("right_context", right_context)):
        if context is not None and len(context) != len(words):
            raise ValueError(f"{name} has {len(context)} rows for {len(words)} sentences")
    if with_context:
        contexts = tuple(ragged_words(context if context is not None else [()] * len(words))
                         for context in (left_context, right_context))
    every_subword = continuation is not None and training
    if every_subword:
        continuation = tf.constant(continuation, tf.int32)

    def encode(words, tags, context=None):
        features, counts = preprocessor.encode_words(words, *(context or ()))
        tags = row_prefix(tags, counts.row_lengths())  # the words kept
        if every_subword:
            # Every subword is a position to label: B-x continues as I-x.
            pieces_of_words = tf.ragged.range(counts.flat_values)  # [words, (pieces)]
            position_in_word = pieces_of_words.flat_values
            word_of_piece = value_rowids(pieces_of_words)
            word_tag = tf.gather(tags.flat_values, word_of_piece)
            piece_tags = tf.where(position_in_word == 0, word_tag,
                                  tf.gather(continuation, word_tag))
            pieces = tf.reduce_sum(counts, axis=1)
            tags = tf.RaggedTensor.from_row_lengths(piece_tags, pieces)
            # Each subword's position: its word's first subword's, plus its place in the word.
            word_starts = tf.gather(features["word_starts"].flat_values, word_of_piece)
            starts = tf.RaggedTensor.from_row_lengths(word_starts + position_in_word, pieces)
            features.update(word_starts=starts, word_mask=tf.ones_like(starts))
            if WORD_ENDS in features:  # each subword is a span of its own
                features[WORD_ENDS] = starts + 1
            if "word_shapes" in features:  # each subword gets its word's shape
                features["word_shapes"] = tf.RaggedTensor.from_row_lengths(
                    tf.gather(features["word_shapes"].flat_values, word_of_piece), pieces)
        return features, tags

    slices = (word_rows, ragged_labels) + ((contexts,) if with_context else ())
    dataset = (
        tf.data.Dataset.from_tensor_slices(slices)
        .batch(_TOKENIZE_BATCH)
        .map(encode, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        # Unbatched ragged rows are dense tensors; this map makes their spec dense too.
        .map(lambda features, tags: (features, tags), num_parallel_calls=tf.data.AUTOTUNE)
    )
    padding = {**preprocessor.padding_values, "labels": LABEL_PADDING}
    return shuffle_batch_and_count(dataset, len(words), batch_size,
                                   preprocessor.max_seq_length, padding, training, seed)


def ragged_words(word_lists):
    """A string RaggedTensor [sentences, (words)], built from flat values (fast, and of the
    right type when every row is empty).

    >>> ragged_words([("a", "b"), ()]).to_list()
    [[b'a', b'b'], []]
    """
    flat = [word for words in word_lists for word in words]
    return tf.RaggedTensor.from_row_lengths(tf.constant(flat, tf.string, shape=[len(flat)]),
                                            [len(words) for words in word_lists])
