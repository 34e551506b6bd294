"""tf.data pipeline for word-level tasks: WordPiece subwords, a word ↔ subword map, buckets.

Each sentence (a list of words, already split) becomes the features of
`tasks.word_preprocessor.WordPreprocessor` and labels [W, ...]: one row per
word (tag ids, or span labels by start), padded with -1.

A word whose subwords do not all fit in `max_seq_length - 2` is dropped with
every word after it; `word_mask` says how many were kept.
"""

import tensorflow as tf

from tasks.batching import shuffle_batch_and_count
from tasks.preprocessor import as_preprocessor
from tasks.word_preprocessor import WordPreprocessor

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
    """
    preprocessor = as_preprocessor(preprocessor, max_seq_length, WordPreprocessor)
    if not words:
        raise ValueError("no sentences to make a dataset from")
    ragged_words = tf.ragged.constant([list(w) for w in words], dtype=tf.string)
    row_lengths = [len(w) for w in words]
    flat_labels = tf.concat([tf.constant(l, tf.int32) for l in labels], axis=0) if sum(
        row_lengths) else tf.zeros([0] + list(labels[0].shape[1:]), tf.int32)
    ragged_labels = tf.RaggedTensor.from_row_lengths(flat_labels, row_lengths)
    every_subword = continuation is not None and training
    if every_subword:
        continuation = tf.constant(continuation, tf.int32)

    def encode(words, tags):
        features, counts = preprocessor.encode_words(words)
        kept = tf.cast(counts.row_lengths(), tf.int32)
        tags = tf.ragged.boolean_mask(tags, tf.ragged.range(tags.row_lengths()) <
                                      tf.cast(kept, tf.int64)[:, None])
        if every_subword:
            # Every subword is a position to label: B-x continues as I-x.
            position_in_word = tf.ragged.range(counts.flat_values).flat_values
            word_tag = tf.repeat(tags.flat_values, counts.flat_values)
            piece_tags = tf.where(position_in_word == 0, word_tag,
                                  tf.gather(continuation, word_tag))
            pieces = tf.reduce_sum(counts, axis=1)
            tags = tf.RaggedTensor.from_row_lengths(piece_tags, pieces)
            starts = tf.cast(tf.ragged.range(pieces) + 1, tf.int32)
            features.update(word_starts=starts, word_mask=tf.ones_like(starts))
        return features, tags

    dataset = (
        tf.data.Dataset.from_tensor_slices((ragged_words, ragged_labels))
        .batch(_TOKENIZE_BATCH)
        .map(encode, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        # Unbatched ragged rows are dense tensors; this map makes their spec dense too.
        .map(lambda features, tags: (features, tags), num_parallel_calls=tf.data.AUTOTUNE)
        .cache()
    )
    padding = {**preprocessor.padding_values, "labels": LABEL_PADDING}
    return shuffle_batch_and_count(dataset, len(words), batch_size,
                                   preprocessor.max_seq_length, padding, training, seed)
