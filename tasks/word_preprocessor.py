"""Words → `[CLS] subwords [SEP]` plus the word ↔ subword map, for word-level tasks.

`WordPreprocessor` is the one word encoding of the project: the tagging and
span NER pipelines call `encode_words` inside `tf.data`, and exported models
call it (through `call`) on raw sentences split as Python's `str.split()`.
"""

import keras
import tensorflow as tf

from tasks.preprocessor import TextPreprocessor

# Every character Python's str.isspace() accepts: str.split() splits at each of them.
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WHITESPACE_PATTERN = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE) + "]"


def split_words(texts):
    """[B] strings → string RaggedTensor [B, words], split as Python's `str.split()`.

    Examples:
    >>> split_words(tf.constant(["  EU\\u00a0rejects\\tGerman ", ""])).to_list()
    [[b'EU', b'rejects', b'German'], []]
    """
    spaced = tf.strings.regex_replace(texts, _WHITESPACE_PATTERN, " ")
    return tf.strings.split(spaced)


def row_exclusive_cumsum(lengths):
    """Exclusive cumulative sum inside each row of a ragged [b, W] tensor.

    Examples:
    >>> row_exclusive_cumsum(tf.ragged.constant([[2, 1, 3], [4]])).to_list()
    [[0, 2, 3], [0]]
    """
    flat = lengths.flat_values
    global_exclusive = tf.cumsum(flat, exclusive=True)
    row_offsets = tf.gather(
        tf.concat([global_exclusive, [tf.reduce_sum(flat)]], 0), lengths.row_starts()
    )
    per_value_offset = tf.repeat(row_offsets, lengths.row_lengths())
    return lengths.with_flat_values(global_exclusive - per_value_offset)


@keras.saving.register_keras_serializable(package="nlpzoo")
class WordPreprocessor(TextPreprocessor):
    """Split words → model features with each word's first-subword position.

    Each sentence becomes `token_ids`, `segment_ids`, `padding_mask`
    (`[CLS] subwords [SEP]`, [tokens]) and `word_starts` (the position of
    each word's first subword in `token_ids`), `word_mask` (1 per kept word)
    [words]. A word whose subwords do not all fit in `max_seq_length - 2` is
    dropped with every word after it; a word with no subword becomes `[UNK]`.

    Args: as `TextPreprocessor`.

    Examples:
    >>> preprocessor = WordPreprocessor(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s"], max_seq_length=4)
    >>> features, counts = preprocessor.encode_words(tf.ragged.constant([["opens", "x"]]))
    >>> features["token_ids"].to_list(), features["word_starts"].to_list(), counts.to_list()
    ([[2, 4, 5, 3]], [[1]], [[2]])
    >>> preprocessor(tf.constant(["opens"]))["word_starts"].numpy().tolist()
    [[1, 0, 0, 0]]
    """

    def encode_words(self, words):
        """String RaggedTensor [B, words] → (ragged features, subwords per kept word).

        Returns:
            `(features, subword_counts)`: the five features as int32
            RaggedTensors ([B, (tokens)] and [B, (kept words)]), and the number
            of subwords of each kept word [B, (kept words)].
        """
        tokenizer = self.tokenizer()
        pieces = tokenizer.tokenize(words.flat_values).merge_dims(-2, -1)  # [N, P]
        counts = pieces.row_lengths()
        # A word with no piece (e.g. only a control character) becomes [UNK].
        unk = tf.fill([tf.shape(counts)[0], 1], tokenizer.unk_id)
        with_unk = tf.concat([pieces, tf.RaggedTensor.from_tensor(unk)], axis=1)
        keep = tf.ragged.range(counts + 1) < tf.expand_dims(tf.maximum(counts, 1), 1)
        pieces = words.with_flat_values(tf.ragged.boolean_mask(with_unk, keep))  # [B, W, P]
        counts = tf.cast(pieces.row_lengths(axis=2), tf.int32)  # [B, W]
        kept = row_exclusive_cumsum(counts) + counts <= self.max_seq_length - 2
        pieces = tf.ragged.boolean_mask(pieces, kept)
        counts = tf.ragged.boolean_mask(counts, kept)
        flat = pieces.merge_dims(1, 2)  # [B, T']
        batch = flat.nrows()
        cls = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], tokenizer.cls_id))
        sep = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], tokenizer.sep_id))
        token_ids = tf.concat([cls, flat, sep], axis=1)
        starts = row_exclusive_cumsum(counts) + 1
        features = {
            "token_ids": token_ids,
            "segment_ids": tf.zeros_like(token_ids),
            "padding_mask": tf.ones_like(token_ids),
            "word_starts": starts,
            "word_mask": tf.ones_like(starts),
        }
        return features, counts

    def encode(self, words):
        """String RaggedTensor [B, words] → the ragged features (see `encode_words`)."""
        return self.encode_words(words)[0]

    def call(self, text):
        """Dense features of raw sentences, split into words as `str.split()` does."""
        return self.pad(self.encode(split_words(text)))
