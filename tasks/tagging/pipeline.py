"""tf.data pipeline for word tagging: WordPiece subwords, a word ↔ subword map, buckets.

Each example becomes:
- `token_ids`, `segment_ids`, `padding_mask` [T]: `[CLS] subwords [SEP]`;
- `word_starts` [W]: the position of each word's first subword in `token_ids`;
- `word_mask` [W]: 1 for every word kept;
- label: the word tag ids [W] (padded with -1).

A word whose subwords do not all fit in `max_seq_length - 2` is dropped with
every word after it; `kept_words` reports how many were kept so that
decoding can tag the rest "O" and evaluation still counts their entities.
"""

import numpy as np
import tensorflow as tf

from tasks.batching import batch_to_buckets, bucket_lengths
from tasks.tagging.readers import split_tag

LABEL_PADDING = -1
_TOKENIZE_BATCH = 256


def encode_tags(sentences, label_names):
    """Tag ids per sentence; a tag not in `label_names` is an error naming the line."""
    index = {name: i for i, name in enumerate(label_names)}
    encoded = []
    for sentence in sentences:
        ids = []
        for offset, tag in enumerate(sentence.tags):
            if tag not in index:
                raise ValueError(
                    f"{sentence.source}:{sentence.line + offset}: tag {tag!r} was not seen "
                    f"in training (known tags: {', '.join(label_names)})"
                )
            ids.append(index[tag])
        encoded.append(ids)
    return encoded


def continuation_ids(label_names):
    """For each tag id, the id a non-first subword gets when every subword is labelled.

    B-x continues as I-x (when I-x is a known tag); every other tag as itself.

    Examples:
    >>> continuation_ids(["O", "B-PER", "I-PER"]).tolist()
    [0, 2, 2]
    """
    index = {name: i for i, name in enumerate(label_names)}
    result = []
    for i, name in enumerate(label_names):
        prefix, entity_type = split_tag(name) if name != "O" else ("O", None)
        inside = f"I-{entity_type}"
        result.append(index[inside] if prefix == "B" and inside in index else i)
    return np.asarray(result, np.int32)


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


def make_dataset(
    sentences,
    tokenizer,
    label_names,
    max_seq_length=128,
    batch_size=32,
    training=False,
    seed=None,
    label_all_subwords=False,
):
    """Builds batched (features, tag ids) for `sentences` (`TaggedSentence`s).

    Args:
        sentences: the sentences; their tags must be in `label_names`.
        tokenizer: a `WordPieceTokenizer`.
        label_names: tag names in id order.
        max_seq_length: the longest `[CLS] … [SEP]` sequence.
        batch_size: sentences per batch.
        training: shuffle every epoch and group sentences of similar length.
        seed: shuffle seed.
        label_all_subwords: in training, label every subword (B-x continues as
            I-x) instead of the first subword of each word only.
    """
    if not sentences:
        raise ValueError("no sentences to make a dataset from")
    tag_ids = encode_tags(sentences, label_names)
    words = tf.ragged.constant([list(s.words) for s in sentences], dtype=tf.string)
    tags = tf.ragged.constant(tag_ids, dtype=tf.int32, ragged_rank=1) if any(tag_ids) else (
        tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), [0] * len(sentences)))
    continuation = tf.constant(continuation_ids(label_names))
    budget = max_seq_length - 2
    every_subword = bool(label_all_subwords and training)

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
        tf.data.Dataset.from_tensor_slices((words, tags))
        .batch(_TOKENIZE_BATCH)
        .map(tokenize, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        .map(trim, num_parallel_calls=tf.data.AUTOTUNE)
        .cache()
    )
    if training:
        dataset = dataset.shuffle(len(sentences), seed=seed, reshuffle_each_iteration=True)
    dataset = batch_to_buckets(
        dataset,
        batch_size,
        bucket_lengths(max_seq_length),
        padding_values={"token_ids": tokenizer.pad_id, "labels": LABEL_PADDING},
        group_by_length=training,
    )
    if not training:
        batches = -(-len(sentences) // batch_size)
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
    return dataset.prefetch(tf.data.AUTOTUNE)
