"""Raw text (or pairs) → each pattern filled in, with the verbalizer's label-word pieces.

For every pattern the example's text goes in `{text}` (and its second text in
`{text_pair}`), and the mask slot becomes n mask tokens, n the most word pieces
of any label word (a word of m pieces is scored at the first m masks). Each
part (literal text, a slot, the masks) is tokenized on its own, as the fill-mask
preprocessor tokenizes the text between masks, and the whole is packed as one
segment: `[CLS] filled pattern [SEP]`, segment id 0. When it does not fit in
`max_seq_length`, only the slots are truncated (longest first, from their end);
the pattern's own words and the masks are always kept.

Features, with P patterns and C labels:
- `token_ids`, `segment_ids`, `padding_mask` int32 [B, (T), P]: one sequence per
  pattern along the last axis, each padded to the example's longest (T);
- `mask_positions` int32 [B, n, P]: where each pattern's masks are;
- `label_piece_ids` int32 [B, C, n]: each label word's pieces (-1 past its end),
  the same in every row (the model reads the verbalizer from here, so a saved
  model's preprocessor holds all of it).
"""

import keras
import tensorflow as tf

from nlpzoo.tasks.io.errors import OptionError
from nlpzoo.tasks.prompt_classification.patterns import (
    TEXT,
    TEXT_PAIR,
    check_patterns,
    parse_pattern,
)
from nlpzoo.tasks.text.batching import bucket_length
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.text.ragged_rows import concat_rows, ones_per_row, row_prefix
from nlpzoo.tasks.text.subword_tokenizer import longest_first_lengths

PROMPT_INPUTS = ("token_ids", "segment_ids", "padding_mask", "mask_positions",
                 "label_piece_ids")
_SEQUENCE_FEATURES = ("token_ids", "segment_ids", "padding_mask")


def _constant_rows(ids, rows):
    """[rows, (len(ids))]: the same int32 ids in every row."""
    dense = tf.tile(tf.constant([list(ids)], tf.int32, shape=[1, len(ids)]), [rows, 1])
    return tf.RaggedTensor.from_tensor(dense)


@keras.saving.register_keras_serializable(package="nlpzoo")
class PromptPreprocessor(TextPreprocessor):
    """A `TextPreprocessor` that fills prompt patterns and carries the verbalizer (module
    docstring).

    Args:
        vocabulary, lowercase, max_seq_length: as for `TextPreprocessor`.
        patterns: the patterns (`patterns.parse_pattern`), one or more.
        label_words: the verbalizer's word of each label, in label-id order.

    Examples:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "it", "was", "un",
    ...               "##able", "able", "who", "?"]
    >>> preprocessor = PromptPreprocessor(vocabulary, max_seq_length=16,
    ...                                   patterns=["{text} it was [MASK]"],
    ...                                   label_words=["able", "unable"])
    >>> features = preprocessor(tf.constant(["who ?"]))
    >>> features["token_ids"].numpy()[0, :9, 0].tolist()  # two masks: "unable" has 2 pieces
    [2, 10, 11, 5, 6, 4, 4, 3, 0]
    >>> features["mask_positions"].numpy()[0, :, 0].tolist()
    [5, 6]
    >>> features["label_piece_ids"].numpy()[0].tolist()
    [[9, -1], [7, 8]]
    """

    def __init__(self, vocabulary=None, lowercase=True, max_seq_length=128, patterns=(),
                 label_words=(), **kwargs):
        self.patterns = [str(pattern) for pattern in patterns]
        self.label_words = [str(word) for word in label_words]
        self._parts = [parse_pattern(pattern) for pattern in self.patterns]
        self.reads_pairs = check_patterns(self.patterns)
        if len(self.label_words) < 2:
            raise ValueError("a prompt preprocessor needs the words of at least 2 labels")
        self._constants = None
        super().__init__(vocabulary, lowercase=lowercase, max_seq_length=max_seq_length,
                         **kwargs)

    def set_vocabulary(self, vocabulary):
        super().set_vocabulary(vocabulary)
        self._constants = None

    def set_tokenizer(self, tokenizer):
        super().set_tokenizer(tokenizer)
        self._constants = None

    @property
    def num_patterns(self):
        return len(self.patterns)

    def _tokenized(self):
        """`(label pieces, per pattern its parts with literal ids)`, computed once, eagerly."""
        if self._constants is None:
            tokenizer = self.tokenizer()
            with tf.init_scope():
                pieces = tokenizer.word_pieces(tf.constant(self.label_words)).to_list()
                parts = [[("literal", tokenizer.tokenize_flat(tf.constant([part[1]]))
                           .to_list()[0]) if part[0] == "literal" else part
                          for part in pattern] for pattern in self._parts]
            self._check_words(pieces, tokenizer.unk_id)
            num_masks = max(len(word) for word in pieces)
            for pattern, pattern_parts in zip(self.patterns, parts):
                fixed = 2 + num_masks + sum(len(part[1]) for part in pattern_parts
                                            if part[0] == "literal")
                slots = sum(part[0] in (TEXT, TEXT_PAIR) for part in pattern_parts)
                if fixed + slots > self.max_seq_length:
                    raise ValueError(f"pattern {pattern!r}: its words, {num_masks} masks and "
                                     f"[CLS]/[SEP] take {fixed} of max_seq_length="
                                     f"{self.max_seq_length} pieces, leaving no room for text")
            self._constants = (pieces, parts)
        return self._constants

    def _check_words(self, pieces, unk_id):
        """Refuses a label word the vocabulary cannot spell (an unknown piece) and two
        words of the same pieces: the scores could not tell their labels apart."""
        seen = {}
        for word, word_pieces in zip(self.label_words, pieces):
            if unk_id in word_pieces:
                raise OptionError(f"--verbalizer: the word {word!r} is not in the vocabulary "
                                  "(its pieces hold the unknown token); pick another word")
            other = seen.setdefault(tuple(word_pieces), word)
            if other != word:
                raise OptionError(f"--verbalizer: the words {other!r} and {word!r} are the "
                                  "same word pieces; give each label its own word")

    @property
    def num_masks(self):
        """n: the masks of each pattern, the most pieces of any label word."""
        return max(len(word) for word in self._tokenized()[0])

    def label_pieces(self):
        """The word pieces (ids) of each label word, in label-id order.

        >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##able", "able"]
        >>> PromptPreprocessor(vocabulary, patterns=["{text} [MASK]"],
        ...                    label_words=["able", "unable"]).label_pieces()
        [[7], [5, 6]]
        """
        return [list(word) for word in self._tokenized()[0]]

    def encode(self, text, text_pair=None):
        """[B] strings (and [B] second texts) → the ragged and dense features of the module
        docstring."""
        if (text_pair is not None) != self.reads_pairs:
            raise ValueError("the patterns have a {text_pair} slot: pass text pairs"
                             if self.reads_pairs else
                             "the patterns have no {text_pair} slot: pass single texts")
        tokenizer = self.tokenizer()
        pieces, parts = self._tokenized()
        num_masks = max(len(word) for word in pieces)
        text = tf.convert_to_tensor(text, tf.string)
        batch = tf.shape(text, out_type=tf.int64)[0]
        slots = {TEXT: tf.cast(tokenizer.tokenize_flat(text), tf.int32)}
        if text_pair is not None:
            slots[TEXT_PAIR] = tf.cast(tokenizer.tokenize_flat(
                tf.convert_to_tensor(text_pair, tf.string)), tf.int32)
        sequences, positions = [], []
        for pattern_parts in parts:
            names = [part[0] for part in pattern_parts if part[0] in slots]
            fixed = 2 + num_masks + sum(len(part[1]) for part in pattern_parts
                                        if part[0] == "literal")
            kept = dict(zip(names, longest_first_lengths(
                [slots[name].row_lengths() for name in names], self.max_seq_length - fixed)))
            rows = [ones_per_row(tokenizer.cls_id, batch)]
            mask_start = None
            for part in pattern_parts:
                if part[0] == "literal":
                    rows.append(_constant_rows(part[1], batch))
                elif part[0] == "mask":
                    mask_start = tf.add_n([row.row_lengths() for row in rows])
                    rows.append(_constant_rows([tokenizer.mask_id] * num_masks, batch))
                else:
                    rows.append(row_prefix(slots[part[0]], kept[part[0]]))
            rows.append(ones_per_row(tokenizer.sep_id, batch))
            sequences.append(concat_rows(rows))
            positions.append(tf.cast(mask_start[:, None], tf.int32)
                             + tf.range(num_masks, dtype=tf.int32)[None, :])
        lengths = tf.stack([sequence.row_lengths() for sequence in sequences], axis=-1)
        longest = tf.reduce_max(lengths, axis=-1)  # [B]: the example's T
        width = tf.reduce_max(tf.concat([longest, [0]], 0))
        token_ids = tf.stack([sequence.to_tensor(tokenizer.pad_id, shape=[batch, width])
                              for sequence in sequences], axis=-1)
        padding_mask = tf.cast(tf.range(width)[None, :, None] < lengths[:, None, :], tf.int32)
        features = {"token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids),
                    "padding_mask": padding_mask}
        features = {name: tf.RaggedTensor.from_tensor(value, lengths=longest)
                    for name, value in features.items()}
        label_ids = [word + [-1] * (num_masks - len(word)) for word in pieces]
        features["mask_positions"] = tf.stack(positions, axis=-1)
        features["label_piece_ids"] = tf.tile(tf.constant([label_ids], tf.int32),
                                              tf.stack([batch, 1, 1]))
        return features

    def pad(self, features):
        """The sequences padded to the bucket of the batch's longest example; the mask
        positions and label pieces as they are."""
        longest = tf.reduce_max(tf.concat(
            [tf.cast(features["token_ids"].row_lengths(), tf.int32), [1]], 0))
        length = bucket_length(longest, self.max_seq_length)
        padded = {}
        for name in _SEQUENCE_FEATURES:
            value = features[name].to_tensor(self.padding_values.get(name, 0))
            padded[name] = tf.pad(value, [[0, 0], [0, length - tf.shape(value)[1]], [0, 0]],
                                  constant_values=self.padding_values.get(name, 0))
        for name in ("mask_positions", "label_piece_ids"):
            padded[name] = features[name]
        return padded

    def get_config(self):
        config = super().get_config()
        config.update({"patterns": list(self.patterns), "label_words": list(self.label_words)})
        return config
