"""tf.data pipeline for word-level tasks: WordPiece subwords, a word ↔ subword map, buckets.

Each sentence (a list of words, already split) becomes:
- `token_ids`, `segment_ids`, `padding_mask` [T]: `[CLS] subwords [SEP]`;
- `word_starts` [W]: the position of each word's first subword in `token_ids`;
- `word_mask` [W]: 1 for every word kept;
- labels [W, ...]: one row per word (tag ids, or span labels by start), padded with -1.

A word whose subwords do not all fit in `max_seq_length - 2` is dropped with
every word after it; `word_mask` says how many were kept.
"""

import tensorflow as tf

from tasks.batching import shuffle_batch_and_count

LABEL_PADDING = -1
_TOKENIZE_BATCH = 256


def _word_pieces(tokenizer, words):
    """[b, W] words → int32 [b, W, P] pieces; a word with no piece becomes [UNK]."""
    pieces = tokenizer.tokenize(words.flat_values).merge_dims(-2, -1)  # [N, P]
    lengths = pieces.row_lengths()
    unk = tf.fill([tf.shape(lengths)[0], 1], tokenizer.unk_id)
    with_unk = tf.concat([pieces, tf.RaggedTensor.from_tensor(unk)], axis=1)
    keep = tf.ragged.range(lengths + 1) < tf.expand_dims(tf.maximum(lengths, 1), 1)
    fixed = tf.ragged.boolean_mask(with_unk, keep)
    return words.with_flat_values(fixed)


def _row_exclusive_cumsum(lengths):
    """Exclusive cumulative sum inside each row of a ragged [b, W] tensor."""
    flat = lengths.flat_values
    global_exclusive = tf.cumsum(flat, exclusive=True)
    row_offsets = tf.gather(
        tf.concat([global_exclusive, [tf.reduce_sum(flat)]], 0), lengths.row_starts()
    )
    per_value_offset = tf.repeat(row_offsets, lengths.row_lengths())
    return lengths.with_flat_values(global_exclusive - per_value_offset)


def encode_words(tokenizer, words, max_seq_length):
    """`[CLS] subwords [SEP]` and first-subword positions of split words, in TF ops.

    The same encoding as `make_word_dataset` (first-subword labelling), for
    graphs that start from words, such as exported serving functions.

    Args:
        tokenizer: a `WordPieceTokenizer`.
        words: a string RaggedTensor [batch, words].
        max_seq_length: the longest `[CLS] … [SEP]` sequence; a word whose
            subwords do not all fit is dropped with every word after it.

    Returns:
        `(token_ids, word_starts)`: int32 RaggedTensors [batch, tokens] and
        [batch, kept words]; the row lengths of `word_starts` are the numbers
        of words kept.

    Examples:
    >>> from tasks.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s"])
    >>> token_ids, starts = encode_words(tokenizer, tf.ragged.constant([["opens", "x"]]), 4)
    >>> token_ids.to_list(), starts.to_list()
    ([[2, 4, 5, 3]], [[1]])
    """
    pieces = _word_pieces(tokenizer, words)  # [b, W, P]
    lengths = tf.cast(pieces.row_lengths(axis=2), tf.int32)  # [b, W]
    kept = _row_exclusive_cumsum(lengths) + lengths <= max_seq_length - 2
    pieces = tf.ragged.boolean_mask(pieces, kept)
    lengths = tf.ragged.boolean_mask(lengths, kept)
    flat = pieces.merge_dims(1, 2)  # [b, T']
    batch = flat.nrows()
    cls = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], tokenizer.cls_id))
    sep = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], tokenizer.sep_id))
    token_ids = tf.concat([cls, flat, sep], axis=1)
    return token_ids, _row_exclusive_cumsum(lengths) + 1


def make_word_dataset(
    words,
    labels,
    tokenizer,
    max_seq_length=128,
    batch_size=32,
    training=False,
    seed=None,
    continuation=None,
):
    """Builds batched (features, labels) from word lists and per-word label rows.

    Args:
        words: one list of words per sentence.
        labels: one int32 array per sentence, shaped [words] or [words, K].
        tokenizer: a `WordPieceTokenizer`.
        max_seq_length: the longest `[CLS] … [SEP]` sequence.
        batch_size: sentences per batch.
        training: shuffle every epoch and group sentences of similar length.
        seed: shuffle seed.
        continuation: for [words] labels in training only: label every
            subword, a non-first subword of a word labelled `l` getting
            `continuation[l]`; None labels first subwords only.
    """
    if not words:
        raise ValueError("no sentences to make a dataset from")
    ragged_words = tf.ragged.constant([list(w) for w in words], dtype=tf.string)
    row_lengths = [len(w) for w in words]
    flat_labels = tf.concat([tf.constant(l, tf.int32) for l in labels], axis=0) if sum(
        row_lengths) else tf.zeros([0] + list(labels[0].shape[1:]), tf.int32)
    ragged_labels = tf.RaggedTensor.from_row_lengths(flat_labels, row_lengths)
    budget = max_seq_length - 2
    every_subword = continuation is not None and training
    if every_subword:
        continuation = tf.constant(continuation, tf.int32)

    def tokenize(words, tags):
        pieces = _word_pieces(tokenizer, words)  # [b, W, P]
        lengths = tf.cast(pieces.row_lengths(axis=2), tf.int32)  # [b, W]
        ends = _row_exclusive_cumsum(lengths) + lengths
        kept = ends <= budget
        pieces = tf.ragged.boolean_mask(pieces, kept)
        tags = tf.ragged.boolean_mask(tags, kept)
        lengths = tf.ragged.boolean_mask(lengths, kept)
        flat = pieces.merge_dims(1, 2)  # [b, T']
        batch = flat.nrows()
        cls = tf.fill([batch, 1], tokenizer.cls_id)
        sep = tf.fill([batch, 1], tokenizer.sep_id)
        token_ids = tf.concat([tf.RaggedTensor.from_tensor(cls), flat,
                               tf.RaggedTensor.from_tensor(sep)], axis=1)
        if every_subword:
            word_lengths = lengths.flat_values
            position_in_word = tf.ragged.range(word_lengths).flat_values
            word_tag = tf.repeat(tags.flat_values, word_lengths)
            piece_tags = tf.where(position_in_word == 0, word_tag,
                                  tf.gather(continuation, word_tag))
            tags = tf.RaggedTensor.from_row_lengths(piece_tags, flat.row_lengths())
            starts = tf.cast(tf.ragged.range(flat.row_lengths()) + 1, tf.int32)
        else:
            starts = _row_exclusive_cumsum(lengths) + 1
        features = {
            "token_ids": token_ids.to_tensor(tokenizer.pad_id),
            "segment_ids": tf.zeros_like(token_ids).to_tensor(),
            "padding_mask": tf.ones_like(token_ids).to_tensor(),
            "word_starts": starts.to_tensor(),
            "word_mask": tf.ones_like(starts).to_tensor(),
            "token_length": tf.cast(token_ids.row_lengths(), tf.int32),
            "word_length": tf.cast(starts.row_lengths(), tf.int32),
        }
        return features, tags.to_tensor(LABEL_PADDING)

    def trim(features, tags):
        token_length = features.pop("token_length")
        word_length = features.pop("word_length")
        trimmed = {}
        for name, value in features.items():
            length = word_length if name.startswith("word_") else token_length
            trimmed[name] = value[:length]
        return trimmed, tags[:word_length]

    dataset = (
        tf.data.Dataset.from_tensor_slices((ragged_words, ragged_labels))
        .batch(_TOKENIZE_BATCH)
        .map(tokenize, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        .map(trim, num_parallel_calls=tf.data.AUTOTUNE)
        .cache()
    )
    return shuffle_batch_and_count(dataset, len(words), batch_size, max_seq_length,
                                   {"token_ids": tokenizer.pad_id, "labels": LABEL_PADDING}, training, seed)
