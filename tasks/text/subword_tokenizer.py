"""What every subword tokenizer gives the input pipelines: the one seam between text and ids.

A `SubwordTokenizer` turns strings into the ids of one pretrained family's
vocabulary, in TensorFlow ops (usable inside `tf.data` maps and exported
SavedModels alike). The pipelines and preprocessors use only this interface,
so WordPiece (BERT), byte-level BPE (RoBERTa) and SentencePiece (XLM-R,
ALBERT) are interchangeable behind it:

- `tokenize(texts)`: [B] strings → int32 ragged [B, (words), (pieces)], the
  text's words as the scheme splits running text, each word's pieces;
- `tokenize_flat(texts)`: the same joined, [B, (pieces)]: the ids a reference
  tokenizer gives the text without its special tokens;
- `word_pieces(words)`: [N] pre-split words → [N, (pieces)], each as a word
  of running text (after a space: "Ġword", "▁word"), never empty; what
  taggers, span NER and character offsets align words with;
- `pack(segments, max_length)`: 1 or 2 ragged piece rows → `token_ids` and
  `segment_ids` in the family's template (`PackTemplate`), truncated
  longest-first;
- `encode(text, text_pair=None)`: the ids of one text (or pair) with the
  special tokens, as Python ints: `transformers`' `input_ids`;
- `piece_text(token)` / `piece_lengths()`: what each piece spells inside a
  word, its word-start mark left out (character offsets of pieces).

It also names its special ids (`pad_id`, `unk_id`, `cls_id`, `sep_id`,
`mask_id`), lists its `vocabulary` (token strings in id order) and says
whether it lower-cases (`lowercase`, which word-shape features read). A
tokenizer saves itself as a small JSON `get_config()` plus asset files
(`save_assets(directory)`), and `tokenizer_from_assets(config, directory)`
rebuilds any registered kind from them: that is how a model's preprocessor
carries its tokenizer in a `.keras` file.
"""

import importlib
import os
from typing import NamedTuple

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from nlpzoo.tasks.text.ragged_rows import concat_rows, merge_inner_rows, ones_per_row, row_prefix

# The length of a piece that spells no fixed text (`piece_lengths`): longer than any word.
NO_FIXED_LENGTH = 1 << 20
# kind → class, filled by `register_tokenizer`.
TOKENIZER_KINDS = {}
# kind → the module that registers it, imported when a saved tokenizer of that kind is read.
_KIND_MODULES = {
    "wordpiece": "nlpzoo.tasks.text.tokenizer",
    "byte_pair": "nlpzoo.tasks.text.byte_pair_tokenizer",
    "sentencepiece": "nlpzoo.tasks.text.sentence_piece_tokenizer",
}


def register_tokenizer(cls):
    """Class decorator: lets `tokenizer_from_assets` rebuild tokenizers of `cls.kind`."""
    if not getattr(cls, "kind", None):
        raise TypeError(f"{cls.__name__} needs a `kind` to be registered")
    TOKENIZER_KINDS[cls.kind] = cls
    return cls


class PackTemplate(NamedTuple):
    """Where a family puts its special tokens around one or two segments.

    A single text is `cls a sep`; a pair is `cls a sep (sep × (separators - 1)) b sep`,
    the first part with segment id 0 and the second (from `b` on) with
    `second_segment_id`. BERT, ALBERT and ELECTRA: one separator and segment
    id 1 (`[CLS] a [SEP] b [SEP]`); RoBERTa and XLM-R: two separators and
    segment id 0 (`<s> a </s></s> b </s>`).

    >>> PackTemplate().special_tokens(pair=True), PackTemplate(2, 0).special_tokens(pair=True)
    (3, 4)
    """

    separators: int = 1
    second_segment_id: int = 1

    def special_tokens(self, pair):
        """How many special tokens a text (or a pair) gets."""
        return 2 + (self.separators if pair else 0)


def regex_split(texts, pattern):
    """[B] strings → ragged [B, (pieces)]: the matches of `pattern` and the text between them.

    As `tensorflow_text.regex_split` with `pattern` kept, which ends a text at its first NUL
    character: the split is found on the text with NUL as U+0001 (same length and, for
    the patterns here, the same class) and the pieces are cut from the text itself.

    Examples:
    >>> regex_split(["a\\x00b c"], " ").to_list()
    [[b'a\\x00b', b' ', b'c']]
    """
    texts = tf.convert_to_tensor(texts, tf.string)
    safe = tf.strings.regex_replace(texts, r"\x00", "\x01")
    pieces, begins, ends = tf_text.regex_split_with_offsets(safe, pattern, pattern)
    cut = tf.strings.substr(tf.gather(texts, pieces.value_rowids()), begins.flat_values,
                            ends.flat_values - begins.flat_values)
    return pieces.with_flat_values(cut)


def regex_literal(text):
    r"""An RE2 pattern that matches `text` literally.

    >>> print(regex_literal("<mask>"))
    \x{3c}mask\x{3e}
    """
    return "".join(c if c.isalnum() and c.isascii() else f"\\x{{{ord(c):x}}}" for c in text)


def longest_first_lengths(lengths, budget):
    """How many tokens of each of 1 or 2 segments to keep so that they fit in `budget`,
    as Hugging Face `tokenizers` truncates "longest_first": the shorter segment keeps at
    most half the budget (rounded down), the longer one the rest; on a tie the second
    counts as the longer, so an odd token goes to it. (`tensorflow_text`'s
    `ShrinkLongestTrimmer` differs on odd budgets: it gives the odd token to the second
    segment even when the first is longer.)

    Args:
        lengths: one integer [B] tensor per segment.
        budget: the most tokens the segments may hold together.

    Returns:
        One int64 [B] tensor per segment.

    Examples:
    >>> [n.numpy().tolist() for n in longest_first_lengths([[9, 2, 5, 9], [9, 9, 1, 8]], 7)]
    [[3, 2, 5, 4], [4, 5, 1, 3]]
    """
    if len(lengths) not in (1, 2):
        raise ValueError(f"1 or 2 segments can be packed, got {len(lengths)}")
    lengths = [tf.cast(length, tf.int64) for length in lengths]
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    first, second = lengths
    first_is_longer = first > second
    kept_shorter = tf.minimum(tf.minimum(first, second), budget // 2)
    kept_longer = tf.minimum(tf.maximum(first, second), budget - kept_shorter)
    return [tf.where(first_is_longer, kept_longer, kept_shorter),
            tf.where(first_is_longer, kept_shorter, kept_longer)]


class SubwordTokenizer(tf.Module):
    """The interface every tokenizer of the project implements (see the module docstring).

    Subclasses set `kind`, call `__init__` with their vocabulary and special
    tokens, and implement `tokenize`, `get_config`, `save_assets` and the
    class method `from_assets`; they override `word_pieces` when a word of
    running text is written differently from the word alone (a prefix space).

    Args:
        vocabulary: the token strings in id order.
        pad, unk, cls, sep, mask: the special tokens' strings (`mask` may be
            absent from the vocabulary: `mask_id` is then `unk_id`).
        template: the `PackTemplate` of the family.
        lowercase: whether the tokenizer lower-cases text.
        split_tokens: the strings cut out of the raw text whole, each its own id
            (`split_special_tokens`); default: the special tokens in the vocabulary.

    Examples:
    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat"])
    >>> isinstance(tokenizer, SubwordTokenizer), tokenizer.encode("The cat", "cat")
    (True, [2, 4, 5, 3, 5, 3])
    """

    kind = None
    # The text before a piece after which that piece begins a word (a regex the whole
    # text before matches): WordPiece's words start after whitespace, punctuation or a
    # symbol and at the start (BERT's basic tokenizer splits there).
    word_start_context = r"(?s)(|.*[\s\p{P}\p{S}])"

    def __init__(self, vocabulary, *, pad, unk, cls, sep, mask, template=PackTemplate(),
                 lowercase=False, split_tokens=None):
        super().__init__()
        self.vocabulary = list(vocabulary)
        self.template = PackTemplate(*template)
        self.lowercase = bool(lowercase)
        index = {}
        for token_id, token in enumerate(self.vocabulary):
            index.setdefault(token, token_id)
        missing = [token for token in (pad, unk, cls, sep) if token not in index]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        self.special_tokens = {"pad": pad, "unk": unk, "cls": cls, "sep": sep, "mask": mask}
        self.pad_id = index[pad]
        self.unk_id = index[unk]
        self.cls_id = index[cls]
        self.sep_id = index[sep]
        self.mask_id = index.get(mask, self.unk_id)
        if split_tokens is None:
            split_tokens = [token for token in self.special_tokens.values() if token in index]
        missing = [token for token in split_tokens if token not in index]
        if missing:
            raise ValueError(f"the split tokens {missing} are not in the vocabulary")
        self.split_tokens = sorted(set(split_tokens), key=lambda token: (index[token], token))
        # Longest first: RE2 takes the first alternative that matches, transformers the longest.
        self._split_pattern = "|".join(
            regex_literal(token) for token in sorted(self.split_tokens, key=len, reverse=True))
        self._split_ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.split_tokens, tf.string),
                tf.constant([index[token] for token in self.split_tokens], tf.int32)),
            default_value=-1)

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def tokenize(self, texts):
        """[B] strings → int32 RaggedTensor [B, (words), (pieces)]."""
        raise NotImplementedError

    def split_special_tokens(self, texts):
        """[B] strings → (parts [B, (P)] strings, special ids [B, (P)] int32, -1 for text).

        The `split_tokens` (by default the special tokens) typed in the text ("[MASK]",
        "<mask>") are cut out whole, as transformers does before normalising: they
        become their own ids, not pieces.

        >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
        >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
        >>> parts, ids = tokenizer.split_special_tokens(tf.constant(["a [MASK]b"]))
        >>> parts.to_list(), ids.to_list()
        ([[b'a ', b'[MASK]', b'b']], [[-1, 4, -1]])
        """
        parts = regex_split(texts, self._split_pattern)
        return parts, parts.with_flat_values(self._split_ids.lookup(parts.flat_values))

    def tokenize_around_special_tokens(self, texts, tokenize_text):
        """`tokenize` for schemes whose special tokens may be typed in the text.

        `tokenize_text` ([N] strings → int32 [N, (words), (pieces)]) tokenizes the
        text between special tokens; each special token is a word of its own id.
        """
        texts = tf.convert_to_tensor(texts, tf.string)
        parts, special_ids = self.split_special_tokens(texts)
        flat_ids = special_ids.flat_values
        is_special = flat_ids >= 0
        words = tokenize_text(tf.where(is_special, tf.constant(""), parts.flat_values))
        special_words = tf.RaggedTensor.from_row_lengths(
            tf.RaggedTensor.from_row_lengths(tf.boolean_mask(flat_ids, is_special),
                                             tf.ones_like(tf.boolean_mask(flat_ids, is_special),
                                                          tf.int64)),
            tf.cast(is_special, tf.int64))
        words = tf.concat([tf.cast(words, tf.int32), special_words], axis=1)  # [P, W, pieces]
        return tf.RaggedTensor.from_row_splits(words, parts.row_splits).merge_dims(1, 2)

    def tokenize_flat(self, texts):
        """[B] strings → int32 RaggedTensor [B, (pieces)]."""
        return merge_inner_rows(self.tokenize(texts))

    def word_pieces(self, words):
        """[N] words → int32 RaggedTensor [N, (pieces)]; a word with no piece (only
        characters the tokenizer drops) is the unknown token, so every word has one."""
        pieces = self.pieces_of_words(words)
        empty = tf.equal(pieces.row_lengths(), 0)
        unk = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(empty, tf.int32))], self.unk_id),
            tf.cast(empty, tf.int64), validate=False)
        return concat_rows([pieces, unk])

    def pieces_of_words(self, words):
        """[N] pre-split words → int32 [N, (pieces)], each read as a word of running text
        (possibly none: `word_pieces` gives those the unknown token). The pieces of the word
        alone here; a scheme that writes a word of running text differently (after a space)
        overrides this."""
        return self.tokenize_flat(words)

    def word_start_pieces(self):
        """bool numpy [V]: True for the pieces that begin a word of running text (and the
        special tokens); False for those that only continue one (WordPiece's `##` pieces,
        byte-level BPE's pieces without "Ġ", SentencePiece's without "▁"). Fill-mask
        proposes only these for a mask that starts a word (`word_start_context`);
        whole-word masking and pretraining's cuts start words at them."""
        raise NotImplementedError

    def piece_text(self, token):
        """The text `token` (a vocabulary string) writes in place of a mask, or spells
        inside a word, without its word-start mark or continuation prefix (the text
        around it keeps its own spaces): "##able" → "able", "Ġparis" → "paris",
        "▁paris" → "paris"."""
        return token

    def piece_lengths(self):
        """int32 [vocabulary_size]: how many characters each piece spells inside a word
        (`piece_text`), or `NO_FIXED_LENGTH`, a length no word has, for one that spells
        no fixed text (the special tokens, a byte-level piece that is part of a
        character). A word's pieces give each piece its characters when their lengths
        add up to the word's (question answering's character offsets).

        >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
        >>> tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cafe", "##s"]
        >>> WordPieceTokenizer(tokens).piece_lengths()[4:].tolist()
        [4, 1]
        """
        if getattr(self, "_piece_lengths", None) is None:
            special = set(self.special_tokens.values()) | set(self.split_tokens)
            texts = [None if token in special else self.piece_text(token)
                     for token in self.vocabulary]
            # U+FFFD: bytes that are not whole UTF-8 characters (byte-level BPE).
            self._piece_lengths = np.asarray(
                [NO_FIXED_LENGTH if text is None or "\ufffd" in text else len(text)
                 for text in texts], np.int32)
        return self._piece_lengths

    def pack(self, segments, max_length):
        """Packs 1 or 2 ragged [B, (pieces)] segments in the family's `template`.

        Truncates longest-first so that the packed length is at most
        `max_length`. Returns ragged int32 `token_ids` and `segment_ids` [B, (len)].
        """
        pair = len(segments) == 2
        budget = max_length - self.template.special_tokens(pair)
        if budget < len(segments):
            raise ValueError(f"max_length={max_length} leaves no room for text")
        kept = longest_first_lengths([segment.row_lengths() for segment in segments], budget)
        batch = segments[0].nrows()
        tokens, segment_ids = [ones_per_row(self.cls_id, batch)], [ones_per_row(0, batch)]
        for index, (segment, length) in enumerate(zip(segments, kept)):
            segment_id = 0 if index == 0 else self.template.second_segment_id
            if index == 1:
                for _ in range(self.template.separators - 1):
                    tokens.append(ones_per_row(self.sep_id, batch))
                    segment_ids.append(ones_per_row(0, batch))
            segment = row_prefix(tf.cast(segment, tf.int32), length)
            tokens += [segment, ones_per_row(self.sep_id, batch)]
            segment_ids += [
                segment.with_flat_values(tf.fill(tf.shape(segment.flat_values), segment_id)),
                ones_per_row(segment_id, batch)]
        return concat_rows(tokens), concat_rows(segment_ids)

    def encode(self, text, text_pair=None, max_length=None):
        """The ids of one text (or pair) with the special tokens, as a list of ints.

        `max_length` (default: no limit) truncates longest-first as `pack` does.
        """
        texts = [text] if text_pair is None else [text, text_pair]
        pieces = self.tokenize_flat(tf.constant(texts))
        segments = [pieces[index:index + 1] for index in range(len(texts))]
        if max_length is None:
            max_length = int(tf.reduce_sum(pieces.row_lengths())) + 8
        token_ids, _ = self.pack(segments, max_length)
        return token_ids.to_list()[0]

    def get_config(self):
        """The JSON-able settings that, with `save_assets`' files, rebuild this tokenizer."""
        raise NotImplementedError

    def save_assets(self, directory):
        """Writes the files `from_assets` reads (the vocabulary, merges, a model) into `directory`."""
        raise NotImplementedError

    @classmethod
    def from_assets(cls, config, directory):
        """The tokenizer of `get_config()`'s `config` and the files in `directory`."""
        raise NotImplementedError


TOKENIZER_CONFIG_FILE = "tokenizer_config.json"


def tokenizer_config(tokenizer):
    """`tokenizer.get_config()` with its `kind`, what `tokenizer_from_assets` reads."""
    return {"kind": tokenizer.kind, **tokenizer.get_config()}


def tokenizer_from_assets(config, directory):
    """Rebuilds a tokenizer of any registered kind from `tokenizer_config` and its assets.

    Raises:
        ValueError: the kind is not one this version knows.

    Examples:
    >>> import tempfile
    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cat"])
    >>> directory = tempfile.mkdtemp()
    >>> tokenizer.save_assets(directory)
    >>> tokenizer_from_assets(tokenizer_config(tokenizer), directory).encode("cat")
    [2, 4, 3]
    """
    config = dict(config)
    kind = config.pop("kind", "wordpiece")
    if kind not in TOKENIZER_KINDS and kind in _KIND_MODULES:
        importlib.import_module(_KIND_MODULES[kind])
    if kind not in TOKENIZER_KINDS:
        raise ValueError(f"{os.fspath(directory)}: unknown tokenizer kind {kind!r}; this "
                         f"version knows {', '.join(sorted(TOKENIZER_KINDS))}")
    return TOKENIZER_KINDS[kind].from_assets(config, directory)

