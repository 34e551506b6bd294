"""Words → `[CLS] subwords [SEP]` plus the word ↔ subword map, for word-level tasks.

`WordPreprocessor` is the one word encoding of the project: the tagging and
span NER pipelines call `encode_words` inside `tf.data`, and exported models
call it (through `call`) on raw sentences, cleaned and split into words as BERT
splits raw text (`tasks.text.word_splitting.split_texts`: whitespace, punctuation, CJK).
"""

import keras
import tensorflow as tf

from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.text.ragged_rows import (
    concat_rows,
    merge_inner_rows,
    ones_per_row,
    row_exclusive_cumsum,
    row_prefix,
    row_suffix,
    row_sums,
    split_rows,
    value_rowids,
)
from nlpzoo.tasks.text.word_splitting import split_texts
from nlpzoo.tasks.words.shapes import word_shape_ids

WORD_ENDS = "word_ends"  # the feature and model input name: one past each word's last subword


def split_context_budget(budget, left, right):
    """Context subwords to take on each side: `(left_take, right_take)`, int32 [B].

    The most context that fits in `budget` subwords, split as evenly as the
    two sides allow (an odd one out goes to the right); a side with less than
    its half leaves the rest to the other.

    Args:
        budget: int32 [B], free subwords beside the centre sentence (>= 0).
        left: int32 [B], subwords of left context available.
        right: int32 [B], subwords of right context available.

    Examples:
    >>> takes = split_context_budget(tf.constant([7, 7, 7, 0]), tf.constant([10, 1, 10, 5]),
    ...                              tf.constant([10, 10, 1, 5]))
    >>> [take.numpy().tolist() for take in takes]
    [[3, 1, 6, 0], [4, 6, 1, 0]]
    """
    left_take = tf.minimum(left, tf.maximum(budget // 2, budget - right))
    return left_take, tf.minimum(right, budget - left_take)


@keras.saving.register_keras_serializable(package="nlpzoo")
class WordPreprocessor(TextPreprocessor):
    """Split words → model features with each word's first-subword position.

    Each sentence becomes `token_ids`, `segment_ids`, `padding_mask`
    (`[CLS] subwords [SEP]`, [tokens]) and `word_starts` (the position of
    each word's first subword in `token_ids`), `word_mask` (1 per kept word)
    [words]. A word whose subwords do not all fit in `max_seq_length - 2` is
    dropped with every word after it; a word with no subword becomes `[UNK]`.

    Document context (`encode_words(words, left_context, right_context)`):
    words of the neighbouring sentences are packed around the sentence as
    `[CLS] left-context sentence right-context [SEP]`. The sentence always
    comes first: context only fills the subwords it leaves free (none when
    the sentence itself had to be cut), split evenly between the two sides
    (`split_context_budget`) and trimmed at the far ends (the start of the
    left context, the end of the right one). Context subwords are attended to
    (`padding_mask` 1) but are no words: `word_starts` point into the
    sentence only. Segment ids stay 0.

    With `word_shapes=True` there is a sixth feature, `word_shapes` [words]:
    each kept word's capitalisation as written (`tasks.words.shapes`), for
    models on an uncased encoder that want it back. With `word_ends=True`
    there is another, `word_ends` [words]: one past each kept word's last
    subword (its subwords are `word_starts` up to `word_ends`), for models
    that read all of a word's subwords (`layers.SubwordPooling`).

    Args: as `TextPreprocessor`, and
        word_shapes: add the `word_shapes` feature.
        word_ends: add the `word_ends` feature.

    Examples:
    >>> preprocessor = WordPreprocessor(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s"], max_seq_length=4)
    >>> features, counts = preprocessor.encode_words(tf.ragged.constant([["opens", "x"]]))
    >>> features["token_ids"].to_list(), features["word_starts"].to_list(), counts.to_list()
    ([[2, 4, 5, 3]], [[1]], [[2]])
    >>> preprocessor(tf.constant(["opens"]))["word_starts"].numpy().tolist()
    [[1, 0, 0, 0]]
    >>> roomier = WordPreprocessor(preprocessor.vocabulary, max_seq_length=6)
    >>> features, _ = roomier.encode_words(tf.ragged.constant([["open"]]),
    ...     left_context=tf.ragged.constant([["x", "opens"]]),
    ...     right_context=tf.ragged.constant([["opens"]]))
    >>> features["token_ids"].to_list(), features["word_starts"].to_list()
    ([[2, 5, 4, 4, 5, 3]], [[2]])

    (Three free subwords: one to the left, trimmed from its start, two to the
    right.)

    >>> shaped = WordPreprocessor(preprocessor.vocabulary, word_shapes=True)
    >>> shaped.encode(tf.ragged.constant([["Opens", "x", "X"]]))["word_shapes"].to_list()
    [[8, 1, 2]]
    >>> spans = WordPreprocessor(preprocessor.vocabulary, word_ends=True)
    >>> features = spans.encode(tf.ragged.constant([["opens", "x", "open"]]))
    >>> features["word_starts"].to_list(), features["word_ends"].to_list()
    ([[1, 3, 4]], [[3, 4, 5]])
    """

    def __init__(self, vocabulary=None, lowercase=True, max_seq_length=128, word_shapes=False,
                 word_ends=False, **kwargs):
        super().__init__(vocabulary, lowercase=lowercase, max_seq_length=max_seq_length,
                         **kwargs)
        self.word_shapes = bool(word_shapes)
        self.word_ends = bool(word_ends)

    def word_pieces(self, words):
        """String RaggedTensor [B, words] → int32 subwords [B, words, (pieces)].

        A word with no piece (e.g. only a control character) becomes `[UNK]`.
        """
        return self._word_pieces_of([words])[0]

    def _word_pieces_of(self, word_tensors):
        """`word_pieces` of each of several [B_i, words] tensors, tokenized together (one
        tokenizer graph: it is most of what a traced encode costs)."""
        pieces = self.tokenizer().word_pieces(
            tf.concat([words.flat_values for words in word_tensors], axis=0))  # [N, P]
        results = []
        for words in word_tensors[:-1]:
            own, pieces = split_rows(pieces, tf.shape(words.flat_values)[0])
            results.append(words.with_flat_values(own))
        return results + [word_tensors[-1].with_flat_values(pieces)]  # each [B, W, P]

    def subword_counts(self, word_lists):
        """Subwords of every word (at least 1: an empty word is `[UNK]`), one list per sentence.

        Examples:
        >>> preprocessor = WordPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s"])
        >>> preprocessor.subword_counts([("opens", "open"), ()])
        [[2, 1], []]
        """
        word_lists = [tuple(words) for words in word_lists]
        flat = [word for words in word_lists for word in words]
        if not flat:
            return [[] for _ in word_lists]
        pieces = self.tokenizer().tokenize(tf.constant(flat, tf.string)).merge_dims(-2, -1)
        counts = tf.maximum(pieces.row_lengths(), 1).numpy().tolist()
        result, position = [], 0
        for words in word_lists:
            result.append(counts[position:position + len(words)])
            position += len(words)
        return result

    def encode_words(self, words, left_context=None, right_context=None):
        """String RaggedTensor [B, words] → (ragged features, subwords per kept word).

        Args:
            words: the sentences, split into words.
            left_context, right_context: optional string RaggedTensors
                [B, words]: the words before and after each sentence in its
                document (see the class docstring); None or empty rows for none.

        Returns:
            `(features, subword_counts)`: the five features (and `word_shapes`,
            `word_ends` when on) as int32 RaggedTensors ([B, (tokens)] and
            [B, (kept words)]), and the number of subwords of each kept word
            [B, (kept words)].
        """
        tokenizer = self.tokenizer()
        contexts = [context for context in (left_context, right_context) if context is not None]
        pieces, *context_pieces = self._word_pieces_of([words] + contexts)  # [B, W, P]
        left = right = None  # context subwords [B, (subwords)]
        if left_context is not None:
            left = merge_inner_rows(context_pieces.pop(0))
        if right_context is not None:
            right = merge_inner_rows(context_pieces.pop(0))
        counts = tf.cast(pieces.row_lengths(axis=2), tf.int32)  # [B, W]
        fits = row_exclusive_cumsum(counts) + counts <= self.max_seq_length - 2
        kept = row_sums(tf.cast(fits, tf.int32))  # a prefix of every row fits
        pieces = row_prefix(pieces, kept)
        counts = row_prefix(counts, kept)
        flat = merge_inner_rows(pieces)  # [B, T']
        batch = flat.nrows()
        starts = row_exclusive_cumsum(counts) + 1
        if contexts:
            whole = tf.equal(counts.row_lengths(), words.row_lengths())
            flat, offsets = self._with_context(flat, whole, left, right)
            starts = starts.with_flat_values(
                starts.flat_values + tf.gather(offsets, value_rowids(starts)))
        token_ids = concat_rows(
            [ones_per_row(tokenizer.cls_id, batch), flat, ones_per_row(tokenizer.sep_id, batch)])
        features = {
            "token_ids": token_ids,
            "segment_ids": tf.zeros_like(token_ids),
            "padding_mask": tf.ones_like(token_ids),
            "word_starts": starts,
            "word_mask": tf.ones_like(starts),
        }
        if self.word_shapes:
            features["word_shapes"] = row_prefix(word_shape_ids(words), kept)
        if self.word_ends:  # a kept word's subwords are all kept, context or not
            features[WORD_ENDS] = starts + counts
        return features, counts

    @staticmethod
    def _no_subwords(batch):
        """[B, (0)]: the subwords of absent context."""
        return tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32),
                                                tf.zeros([batch], tf.int64), validate=False)

    def _with_context(self, centre, whole, left, right):
        """`left centre right` subwords [B, (tokens)] and the left length [B] (int32); `left`
        and `right` are context subwords [B, (subwords)], or None for none."""
        batch = centre.nrows()
        left = self._no_subwords(batch) if left is None else left
        right = self._no_subwords(batch) if right is None else right
        left_length = tf.cast(left.row_lengths(), tf.int32)
        right_length = tf.cast(right.row_lengths(), tf.int32)
        free = self.max_seq_length - 2 - tf.cast(centre.row_lengths(), tf.int32)
        budget = tf.where(whole, free, 0)  # a sentence cut short gets no context
        left_take, right_take = split_context_budget(budget, left_length, right_length)
        return concat_rows([row_suffix(left, left_take), centre, row_prefix(right, right_take)]
                           ), left_take

    def encode(self, words, left_context=None, right_context=None):
        """String RaggedTensor [B, words] → the ragged features (see `encode_words`)."""
        return self.encode_words(words, left_context, right_context)[0]

    def call(self, text, left_context=None, right_context=None):
        """Dense features of raw sentences, cleaned and split into words (`split_texts`).

        `left_context` and `right_context`, when given, are [B] raw strings
        of the neighbouring sentences' words (split the same way; "" for none).
        """
        left = None if left_context is None else split_texts(left_context)
        right = None if right_context is None else split_texts(right_context)
        return self.pad(self.encode(split_texts(text), left, right))

    def get_config(self):
        config = super().get_config()
        # Absent when off: the configs of older models stay valid.
        if self.word_shapes:
            config["word_shapes"] = True
        if self.word_ends:
            config["word_ends"] = True
        return config
