"""Byte-level BPE (GPT-2, RoBERTa, ModernBERT) in TensorFlow ops, as `transformers` splits text.

`ByteLevelBpeTokenizer` is the `SubwordTokenizer` of byte-level BPE vocabularies. Text
goes through the steps of Hugging Face `tokenizers`, each in graph ops (usable in
`tf.data` maps and SavedModels):

1. added tokens (`<s>`, `</s>`, `<mask>`, ...) typed in the text are cut out and map to
   their ids; a token with `lstrip` (RoBERTa's `<mask>`) takes the whitespace before it,
   one with `rstrip` the whitespace after it;
2. the rest is normalised if the tokenizer says so (lower case, NFC/NFKC/NFD/NFKD), and
   gets a space in front with `add_prefix_space` (unless it starts with one);
3. `split_words` cuts it into words with GPT-2's pattern (`pretokenize` below);
4. each word's UTF-8 bytes become the 256 printable stand-ins of GPT-2 (" " → "Ġ") and
   are merged by the BPE merge rules, lowest rank first: KerasHub's in-graph merge loop
   (`keras_hub.tokenizers.BytePairTokenizer`, with its cache of merged words).

KerasHub's own word splitting is not used: it emulates the pattern's look-ahead
(`\\s+(?!\\S)`) by inserting the Devanagari digit "६" and deleting every "६"
afterwards (so a "६" in the text vanishes), treats only a few Unicode spaces as
whitespace, and always adds the prefix space. `split_words` reaches the same words as
`tokenizers` on every code point (a test compares them), including the Unicode 16
letters and digits that TensorFlow's RE2 (Unicode 15) does not know yet.

Readers: `ByteLevelBpeTokenizer.from_hf_directory(path)` takes a Hugging Face tokenizer
directory, either `tokenizer.json` (what transformers 5.x saves) or the legacy
`vocab.json` + `merges.txt` (+ `special_tokens_map.json`, `tokenizer_config.json`,
`added_tokens.json`).
"""

import functools
import json
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from nlpzoo.tasks.io.atomic_files import write_text_atomically
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.io.json_text import expect_type, read_json_file
from nlpzoo.tasks.text.ragged_rows import merge_inner_rows
from nlpzoo.tasks.text.tokenizer_json import read_tokenizer_json
from nlpzoo.tasks.text.subword_tokenizer import (
    PackTemplate, SubwordTokenizer, regex_literal, regex_split, register_tokenizer)

# Unicode's White_Space characters: what `\s` matches in `tokenizers`' regular
# expressions (Oniguruma) and what its added tokens' lstrip/rstrip remove. RE2's `\s`
# is ASCII only.
WHITESPACE = (r"\t-\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
              r"\x{205f}\x{3000}")
# Letters and digits of Unicode 16 that TensorFlow's RE2 (Unicode 15) lacks in \p{L} and
# \p{N}; `tokenizers` 0.23 counts them (measured on every code point).
_NEW_LETTERS = (
    r"\x{1c89}-\x{1c8a}\x{a7cb}-\x{a7cd}\x{a7da}-\x{a7dc}\x{105c0}-\x{105f3}"
    r"\x{10d4a}-\x{10d65}\x{10d6f}-\x{10d85}\x{10ec2}-\x{10ec4}\x{11380}-\x{11389}"
    r"\x{1138b}\x{1138e}\x{11390}-\x{113b5}\x{113b7}\x{113d1}\x{113d3}\x{11bc0}-\x{11be0}"
    r"\x{13460}-\x{143fa}\x{16100}-\x{1611d}\x{16d40}-\x{16d6c}\x{18cff}\x{1e5d0}-\x{1e5ed}"
    r"\x{1e5f0}\x{2ebf0}-\x{2ee5d}")
_NEW_DIGITS = (r"\x{10d40}-\x{10d49}\x{116d0}-\x{116e3}\x{11bf0}-\x{11bf9}\x{16130}-\x{16139}"
               r"\x{16d70}-\x{16d79}\x{1ccf0}-\x{1ccf9}\x{1e5f1}-\x{1e5fa}")
LETTERS = r"\p{L}" + _NEW_LETTERS
DIGITS = r"\p{N}" + _NEW_DIGITS
# GPT-2's pattern, `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
# with whitespace one character at a time: `split_words` joins the runs back (RE2 has
# no look-ahead).
_PIECES = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{LETTERS}]+| ?[{DIGITS}]+"
           rf"| ?[^{WHITESPACE}{LETTERS}{DIGITS}]+|[{WHITESPACE}]")
_NORMALIZERS = {"NFC", "NFD", "NFKC", "NFKD"}


def split_words(texts):
    """[B] strings → ragged [B, (words)] strings: GPT-2's byte-level pre-tokenization.

    The pattern's last alternatives, `\\s+(?!\\S)|\\s+`, take a run of whitespace whole,
    except that before a word the run leaves its last character: a space to start the
    word (" word"), any other whitespace as a word of its own.

    Examples:
    >>> [w.decode() for w in split_words(["I'm  here,\\tnow 42 ६ "]).to_list()[0]]
    ['I', "'m", ' ', ' here', ',', '\\t', 'now', ' 42', ' ६', ' ']
    """
    pieces = regex_split(texts, _PIECES)
    values = pieces.flat_values
    rows = pieces.value_rowids()
    spaces = tf.strings.regex_full_match(values, f"[{WHITESPACE}]")
    false = tf.zeros([1], tf.bool)
    same_row_before = tf.concat([false, tf.equal(rows[1:], rows[:-1])], 0)
    same_row_after = tf.concat([tf.equal(rows[1:], rows[:-1]), false], 0)
    space_before = same_row_before & tf.concat([false, spaces[:-1]], 0)
    space_after = same_row_after & tf.concat([spaces[1:], false], 0)
    # The next piece is a word that does not start with a space: the run keeps its last.
    word_after = same_row_after & ~space_after & tf.concat(
        [tf.logical_not(tf.strings.regex_full_match(values[1:], " .*")), false], 0)
    starts = ~spaces | ~space_before | (~space_after & word_after)
    groups = tf.cumsum(tf.cast(starts, tf.int64)) - 1
    words = tf.strings.unsorted_segment_join(values, groups, tf.reduce_sum(
        tf.cast(starts, tf.int64)))
    lengths = tf.math.unsorted_segment_sum(tf.cast(starts, tf.int64), rows, pieces.nrows())
    return tf.RaggedTensor.from_row_lengths(words, lengths, validate=False)


@register_tokenizer
class ByteLevelBpeTokenizer(SubwordTokenizer):
    """Byte-level BPE over a vocabulary and merge rules (a `SubwordTokenizer`).

    Texts are packed RoBERTa's way by default, `<s> a </s>` and `<s> a </s></s> b </s>`,
    all with segment id 0. `tokenize` gives the words of running text as GPT-2's pattern
    splits them; `word_pieces` gives each pre-split word as a word of running text, after
    a space ("Ġword"), as `transformers` does with `is_split_into_words=True`.

    Args:
        vocabulary: {token: id} of the BPE model (ids from 0 without gaps, with the added
            tokens); or a list of tokens in id order.
        merges: the merge rules in rank order, "a b" strings or (a, b) pairs.
        added_tokens: the tokens cut out of the text before BPE, as dicts with `content`
            and optionally `lstrip`, `rstrip` (default False); or plain strings. The
            special tokens are added to them when absent.
        add_prefix_space: put a space before a text that does not start with one.
        lowercase: lower-case the text (a `Lowercase` normaliser).
        normalization: "NFC", "NFKC", "NFD" or "NFKD" Unicode normalisation, or None.
        pad, unk, cls, sep, mask: the special tokens.
        template: the `PackTemplate` (RoBERTa's: two separators, segment id 0).

    Examples:
    >>> merges = ["Ġ c", "a t", "Ġc at", "Ġ s", "Ġs at"]
    >>> tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "c", "a", "t", "s", "Ġ",
    ...           "Ġc", "at", "Ġcat", "Ġs", "Ġsat"]
    >>> tokenizer = ByteLevelBpeTokenizer(tokens, merges, [{"content": "<mask>", "lstrip": True}])
    >>> tokenizer.tokenize(["cat  sat", "a cat <mask>"]).to_list()
    [[[5, 11], [9], [14]], [[6], [12], [4]]]
    >>> tokenizer.word_pieces(["cat", "sat"]).to_list(), tokenizer.encode("cat", "sat")
    ([[12], [14]], [0, 5, 11, 2, 2, 8, 11, 2])
    """

    kind = "byte_pair"
    VOCABULARY_FILE = "vocab.json"
    MERGES_FILE = "merges.txt"
    ADDED_TOKENS_FILE = "added_tokens.json"

    def __init__(self, vocabulary, merges, added_tokens=None, *, add_prefix_space=False,
                 lowercase=False, normalization=None, pad="<pad>", unk="<unk>", cls="<s>",
                 sep="</s>", mask="<mask>", template=PackTemplate(2, 0)):
        if isinstance(vocabulary, dict):
            vocabulary = _tokens_in_id_order(vocabulary, "the vocabulary")
        super().__init__(vocabulary, pad=pad, unk=unk, cls=cls, sep=sep, mask=mask,
                         template=template, lowercase=lowercase)
        if normalization is not None and normalization not in _NORMALIZERS:
            raise ValueError(f"normalization={normalization!r} is not one of "
                             f"{sorted(_NORMALIZERS)} or None")
        self.normalization = normalization
        self.add_prefix_space = bool(add_prefix_space)
        self.merges = [merge if isinstance(merge, str) else " ".join(merge) for merge in merges]
        self.added_tokens = _added_tokens(added_tokens, self.special_tokens, self.vocabulary)
        index = {token: token_id for token_id, token in reversed(list(enumerate(self.vocabulary)))}
        added = {token["content"] for token in self.added_tokens}
        # The BPE model's vocabulary: every token but the added ones (KerasHub's checks).
        model_vocabulary = {token: token_id for token, token_id in index.items()
                            if token not in added}
        from keras_hub.tokenizers import BytePairTokenizer

        for rank, merge in enumerate(self.merges):
            parts = merge.split(" ")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"merge rule {rank + 1} ({merge!r}) is not two tokens "
                                 "separated by one space")
            if merge.replace(" ", "") not in index:
                raise ValueError(f"merge rule {rank + 1} ({merge!r}) makes "
                                 f"{merge.replace(' ', '')!r}, which is not in the vocabulary")
        self._bpe = BytePairTokenizer(model_vocabulary, self.merges, unsplittable_tokens=[],
                                      dtype="int32")
        # Traced once: called eagerly, KerasHub's merge loop is traced anew on every call
        # with an unseen word (seconds each).
        self._merge_words = tf.function(self._merge, input_signature=[
            tf.TensorSpec([None], tf.string)])
        if self.added_tokens:
            alternatives = []
            for token in sorted(self.added_tokens, key=lambda t: -len(t["content"])):
                pattern = regex_literal(token["content"])
                if token.get("lstrip"):
                    pattern = f"[{WHITESPACE}]*" + pattern
                if token.get("rstrip"):
                    pattern += f"[{WHITESPACE}]*"
                alternatives.append(pattern)
            self._added_pattern = "|".join(alternatives)
            contents = [token["content"] for token in self.added_tokens]
            self._added_ids = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(contents), tf.constant([index[c] for c in contents], tf.int32)),
                default_value=-1)
        else:
            self._added_pattern = None

    # -- tokenization --------------------------------------------------------------------

    def tokenize(self, texts):
        """[B] strings → int32 RaggedTensor [B, (words), (pieces)]; an added token is a
        word of its own."""
        return self._tokenize(texts, self.add_prefix_space)

    def word_pieces(self, words):
        """[N] words → int32 RaggedTensor [N, (pieces)], each word after a space (unless it
        starts with one), as `transformers` with `is_split_into_words=True`; an empty word
        is the unknown token, so every word has one.

        >>> tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "Ġ", "Ġa"]
        >>> ByteLevelBpeTokenizer(tokens, ["Ġ a"]).word_pieces(["a", "", " a"]).to_list()
        [[7], [3], [7]]
        """
        return super().word_pieces(words)

    def pieces_of_words(self, words):
        """Each word's pieces after a space (unless it starts with one)."""
        return merge_inner_rows(self._tokenize(words, True))

    def _tokenize(self, texts, add_prefix_space):
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank != 1:
            texts = tf.reshape(texts, [-1])
        if self._added_pattern is None:
            return self._plain_words(texts, add_prefix_space)
        segments = regex_split(texts, self._added_pattern)
        flat = segments.flat_values
        added = tf.strings.regex_full_match(flat, self._added_pattern)
        # An added token's id: its text, or its text less the whitespace lstrip/rstrip took.
        token_id = self._added_ids.lookup(flat)
        stripped = tf.strings.regex_replace(flat, f"^[{WHITESPACE}]+|[{WHITESPACE}]+$", "")
        token_id = tf.where(token_id >= 0, token_id, self._added_ids.lookup(stripped))
        added = added & (token_id >= 0)
        plain = self._plain_words(tf.where(added, "", flat), add_prefix_space, keep=~added)
        special = tf.RaggedTensor.from_row_lengths(
            tf.RaggedTensor.from_row_lengths(tf.boolean_mask(token_id, added),
                                             tf.ones_like(tf.boolean_mask(token_id, added),
                                                          tf.int64), validate=False),
            tf.cast(added, tf.int64), validate=False)
        words = tf.concat([plain, special], axis=1)  # a segment has one or the other
        return tf.RaggedTensor.from_row_splits(
            words.values, tf.gather(words.row_splits, segments.row_splits), validate=False)

    def _plain_words(self, texts, add_prefix_space, keep=None):
        """[S] texts without added tokens → ragged [S, (words), (pieces)]; texts where
        `keep` is False give no word."""
        if self.normalization:
            texts = tf_text.normalize_utf8(texts, self.normalization)
        if self.lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
        if add_prefix_space:
            prefixed = tf.strings.join([" ", texts])
            starts_with_space = tf.strings.regex_full_match(texts, "(?s) .*")
            texts = tf.where(starts_with_space, texts, prefixed)
            if keep is not None:
                texts = tf.where(keep, texts, "")
        words = split_words(texts)
        return words.with_values(self._merge_words(words.values))

    def _merge(self, words):
        """[N] words → int32 ragged [N, (pieces)]: KerasHub's cached BPE merge loop."""
        bpe = self._bpe
        cached = bpe.cache.lookup(words)
        unseen = tf.equal(cached, "") & tf.not_equal(words, "")

        def merge_unseen():
            bpe._bpe_merge_and_update_cache_tf(tf.boolean_mask(words, unseen))
            return bpe.cache.lookup(words)

        merged = tf.cond(tf.reduce_any(unseen), merge_unseen, lambda: cached)
        pieces = tf.strings.split(merged, sep=" ")
        ids = tf.cast(bpe.token_to_id_map.lookup(pieces.flat_values), tf.int32)
        ids = tf.where(ids < 0, self.unk_id, ids)  # a byte the vocabulary lacks
        return pieces.with_flat_values(ids)

    # -- word starts ---------------------------------------------------------------------

    @property
    def word_start_context(self):
        """A piece begins a word after whitespace (which a `<mask>` with lstrip takes in),
        and at the start of a text only with `add_prefix_space`."""
        return f"(?s)({'|' if self.add_prefix_space else ''}.*[{WHITESPACE}])"

    def word_start_pieces(self):
        """The pieces that begin with a space ("Ġ"), and the added tokens.

        >>> tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "Ġ", "Ġa"]
        >>> ByteLevelBpeTokenizer(tokens, ["Ġ a"]).word_start_pieces().tolist()
        [True, True, True, True, True, False, True, True]
        """
        added = {token["content"] for token in self.added_tokens}
        return np.array([token.startswith(_SPACE) or token in added
                         for token in self.vocabulary], bool)

    def piece_text(self, token):
        """The piece's UTF-8 text (GPT-2's byte stand-ins decoded), less its leading space.

        >>> tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "Ġ", "Ġa"]
        >>> ByteLevelBpeTokenizer(tokens, ["Ġ a"]).piece_text("ĠcafÃ©")
        'café'
        """
        if token in {added["content"] for added in self.added_tokens}:
            return token
        decoder = _byte_decoder()
        if not all(character in decoder for character in token):
            return token
        text = bytes(decoder[character] for character in token).decode("utf-8", "replace")
        return text[1:] if text.startswith(" ") else text

    # -- serialization -------------------------------------------------------------------

    def get_config(self):
        return {"add_prefix_space": self.add_prefix_space, "lowercase": self.lowercase,
                "normalization": self.normalization,
                "special_tokens": dict(self.special_tokens),
                "template": list(self.template)}

    def save_assets(self, directory):
        vocabulary = {token: token_id for token_id, token in enumerate(self.vocabulary)}
        write_text_atomically(os.path.join(directory, self.VOCABULARY_FILE),
                              [json.dumps(vocabulary, ensure_ascii=False)])
        write_text_atomically(os.path.join(directory, self.MERGES_FILE),
                              ["#version: 0.2\n"] + [f"{merge}\n" for merge in self.merges])
        write_text_atomically(os.path.join(directory, self.ADDED_TOKENS_FILE),
                              [json.dumps([dict(token) for token in self.added_tokens],
                                          ensure_ascii=False, indent=1)])

    @classmethod
    def from_assets(cls, config, directory):
        config = dict(config)
        special = config.pop("special_tokens", {})
        added_path = os.path.join(directory, cls.ADDED_TOKENS_FILE)
        added = read_json_file(added_path) if os.path.exists(added_path) else None
        return cls(read_vocab_json(os.path.join(directory, cls.VOCABULARY_FILE)),
                   read_merges(os.path.join(directory, cls.MERGES_FILE)), added,
                   **special, **config)

    @classmethod
    def from_hf_directory(cls, directory):
        """The tokenizer of a Hugging Face tokenizer directory (see `read_hf_directory`).

        >>> import tempfile
        >>> tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "c", "a", "t", "Ġ", "Ġc", "at"]
        >>> directory = tempfile.mkdtemp()
        >>> ByteLevelBpeTokenizer(tokens, ["Ġ c", "a t"]).save_assets(directory)
        >>> ByteLevelBpeTokenizer.from_hf_directory(directory).encode("cat <mask>")
        [0, 5, 10, 8, 4, 2]
        """
        return cls(**read_hf_directory(directory))


_SPACE = "\u0120"  # "Ġ": GPT-2's stand-in for the space byte, a word's first piece's mark


@functools.lru_cache(maxsize=1)
def _byte_decoder():
    """GPT-2's printable stand-in character → the byte it stands for (its `bytes_to_unicode`
    inverted): printable Latin-1 bytes stand for themselves, the others for 256 + n."""
    kept = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
            + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    others = [byte for byte in range(256) if byte not in kept]
    return {**{chr(byte): byte for byte in kept},
            **{chr(256 + n): byte for n, byte in enumerate(others)}}


def _tokens_in_id_order(vocabulary, where):
    tokens = [None] * len(vocabulary)
    for token, token_id in vocabulary.items():
        if not isinstance(token_id, int) or not 0 <= token_id < len(tokens):
            raise ValueError(f"{where}: the id {token_id!r} of {token!r} is not in "
                             f"0..{len(tokens) - 1} (ids run from 0 without gaps)")
        if tokens[token_id] is not None:
            raise ValueError(f"{where}: {tokens[token_id]!r} and {token!r} have the same id "
                             f"{token_id}")
        tokens[token_id] = token
    return tokens


def _added_tokens(added_tokens, special_tokens, vocabulary):
    """The added tokens as dicts (content, lstrip, rstrip), the special ones included."""
    tokens = []
    for token in added_tokens or ():
        if isinstance(token, str):
            token = {"content": token}
        tokens.append({"content": token["content"], "lstrip": bool(token.get("lstrip")),
                       "rstrip": bool(token.get("rstrip"))})
    present = {token["content"] for token in tokens}
    known = set(vocabulary)
    for token in special_tokens.values():
        if token not in present and token in known:
            tokens.append({"content": token, "lstrip": False, "rstrip": False})
            present.add(token)
    missing = [token["content"] for token in tokens if token["content"] not in known]
    if missing:
        raise ValueError(f"the added tokens {missing} are not in the vocabulary")
    return [token for token in tokens if token["content"]]


# -- Hugging Face files ----------------------------------------------------------------



def read_vocab_json(path):
    """The {token: id} of a `vocab.json`, validated (ids from 0 without gaps).

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: not JSON, or not a {token: id} object; the message names the file.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> _ = open(path, "w").write('{"a": 0, "b": 2}')
    >>> read_vocab_json(path)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: ...: the id 2 of 'b' is not in 0..1 (ids run from 0 without gaps)
    """
    vocabulary = read_json_file(path)
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise DataFormatError(f"{path}: expected a non-empty JSON object {{token: id}}")
    try:
        _tokens_in_id_order(vocabulary, path)
    except ValueError as error:
        raise DataFormatError(str(error)) from None
    return vocabulary


def read_merges(path):
    """The merge rules of a `merges.txt` ("a b" per line; a `#version` line skipped).

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: not UTF-8, or a line that is not two tokens; the message names the
            file and line.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> _ = open(path, "w").write("#version: 0.2\\nĠ t\\nh e r e\\n")
    >>> read_merges(path)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: ...:3: expected a merge rule, two tokens separated by one space; found 'h e r e'
    """
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().split("\n")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except UnicodeDecodeError as error:
        raise DataFormatError(f"{path}: not UTF-8 text: {error}") from None
    merges = []
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise DataFormatError(f"{path}:{number}: expected a merge rule, two tokens "
                                  f"separated by one space; found {line[:80]!r}")
        merges.append(line)
    return merges


_SPECIAL_NAMES = {"pad_token": "pad", "unk_token": "unk", "cls_token": "cls",
                  "sep_token": "sep", "mask_token": "mask"}


def read_hf_directory(directory):
    """The arguments of `ByteLevelBpeTokenizer` for a Hugging Face tokenizer directory.

    Reads `tokenizer.json` when there is one (a `BPE` model, a `ByteLevel`
    pre-tokenizer, optionally a `Lowercase`/NFC-like normaliser and a `RobertaProcessing`,
    `BertProcessing` or `TemplateProcessing` post-processor), else `vocab.json` +
    `merges.txt`; `tokenizer_config.json` and `special_tokens_map.json` name the special
    tokens, and `tokenizer_config.json`'s `add_prefix_space` wins over the file's (as in
    `transformers`).

    Raises:
        FileNotFoundError: neither layout is there.
        DataFormatError: a file is malformed or not a byte-level BPE; the message names it.
    """
    directory = os.fspath(directory)
    config_path = os.path.join(directory, "tokenizer_config.json")
    config = read_json_file(config_path, dict) if os.path.exists(config_path) else {}
    special_path = os.path.join(directory, "special_tokens_map.json")
    special_map = read_json_file(special_path, dict) if os.path.exists(special_path) else {}
    arguments = {}
    added = []
    json_path = os.path.join(directory, "tokenizer.json")
    if os.path.exists(json_path):
        arguments, added = _read_tokenizer_json(json_path)
    else:
        vocab_path = os.path.join(directory, "vocab.json")
        merges_path = os.path.join(directory, "merges.txt")
        if not os.path.exists(vocab_path) or not os.path.exists(merges_path):
            raise FileNotFoundError(f"{directory}: no tokenizer.json, nor vocab.json and "
                                    "merges.txt: not a byte-level BPE tokenizer directory")
        vocabulary = read_vocab_json(vocab_path)
        arguments = {"vocabulary": vocabulary, "merges": read_merges(merges_path)}
        added_path = os.path.join(directory, "added_tokens.json")
        if os.path.exists(added_path):
            extra = read_json_file(added_path)
            if isinstance(extra, dict):  # transformers' {token: id}
                vocabulary = dict(vocabulary)
                vocabulary.update(extra)
                arguments["vocabulary"] = vocabulary
                added += [{"content": token} for token in extra]
            elif isinstance(extra, list):  # ours
                added += extra
            else:
                raise DataFormatError(f"{added_path}: expected a JSON object or list")
    if "add_prefix_space" in config:
        arguments["add_prefix_space"] = bool(config["add_prefix_space"])
    for source in (special_map, config):  # tokenizer_config.json wins
        for key, name in _SPECIAL_NAMES.items():
            token = source.get(key)
            if isinstance(token, dict):
                token = token.get("content")
                # legacy files: a special token with lstrip/rstrip is added that way
                added.append({"content": token, **{flag: source[key].get(flag, False)
                                                   for flag in ("lstrip", "rstrip")}})
            if isinstance(token, str):
                arguments[name] = token
    decoder = expect_type(config.get("added_tokens_decoder") or {}, dict, config_path,
                          "added_tokens_decoder")
    for token in decoder.values():
        if isinstance(token, dict) and "content" in token:
            added.append(token)
    arguments["added_tokens"] = _unique_added(added)
    return arguments


def _unique_added(tokens):
    """The added tokens, each once (the last mention of a token wins)."""
    unique = {}
    for token in tokens:
        if token.get("content"):
            unique[token["content"]] = {"content": token["content"],
                                        "lstrip": bool(token.get("lstrip")),
                                        "rstrip": bool(token.get("rstrip"))}
    return list(unique.values())


def _read_tokenizer_json(path):
    """`read_hf_directory`'s arguments from a `tokenizer.json`, and its added tokens."""
    spec = read_tokenizer_json(path)

    def fail(problem):
        raise DataFormatError(f"{path}: {problem}")

    model = spec["model"]
    if model.get("type") != "BPE":
        fail(f"the model is {model.get('type')!r}, not a byte-level BPE ('BPE')")
    for option in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(option):
            fail(f"the BPE model's {option}={model[option]!r} is not byte-level BPE")
    vocabulary, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocabulary, dict) or not isinstance(merges, list):
        fail("the BPE model needs a 'vocab' object and a 'merges' list")
    added = spec.get("added_tokens") or []
    if not isinstance(added, list):
        fail("'added_tokens' is not a list")
    vocabulary = dict(vocabulary)
    for token in added:
        if not isinstance(token, dict) or "content" not in token or "id" not in token:
            fail(f"an added token is not an object with 'content' and 'id': {token!r}")
        vocabulary.setdefault(token["content"], token["id"])
    try:
        _tokens_in_id_order(vocabulary, path)
    except ValueError as error:
        fail(str(error).removeprefix(f"{path}: "))
    rules = []
    for rank, merge in enumerate(merges, 1):
        if isinstance(merge, list) and len(merge) == 2:
            merge = " ".join(merge)
        if not isinstance(merge, str) or len(merge.split(" ")) != 2:
            fail(f"merge rule {rank} ({merge!r}) is not two tokens")
        rules.append(merge)
    arguments = {"vocabulary": vocabulary, "merges": rules}
    byte_level = _find(spec.get("pre_tokenizer"), "ByteLevel")
    if byte_level is None:
        fail("no ByteLevel pre-tokenizer: not a byte-level BPE")
    if byte_level.get("use_regex") is False:
        fail("a ByteLevel pre-tokenizer without its regex (use_regex=false) is not supported")
    arguments["add_prefix_space"] = bool(byte_level.get("add_prefix_space"))
    normalizer = spec.get("normalizer")
    for step in _steps(normalizer):
        kind = step.get("type")
        if kind == "Lowercase":
            arguments["lowercase"] = True
        elif kind in _NORMALIZERS:
            arguments["normalization"] = kind
        else:
            fail(f"the normalizer {kind!r} is not supported (Lowercase, NFC, NFD, NFKC, NFKD)")
    processor = spec.get("post_processor")
    for step in _steps(processor):
        kind = step.get("type")
        if kind in ("RobertaProcessing", "BertProcessing"):
            arguments["cls"], arguments["sep"] = step["cls"][0], step["sep"][0]
            arguments["template"] = PackTemplate(2, 0) if kind == "RobertaProcessing" else \
                PackTemplate(1, 1)
        elif kind == "TemplateProcessing":
            arguments.update(_template(step, fail))
    return arguments, added


def _steps(component):
    if not component:
        return []
    if component.get("type") == "Sequence":
        inner = component.get("normalizers") or component.get("pretokenizers") or \
            component.get("processors") or []
        return [step for part in inner for step in _steps(part)]
    return [component]


def _find(component, kind):
    return next((step for step in _steps(component) if step.get("type") == kind), None)


def _template(step, fail):
    """cls, sep and the `PackTemplate` of a `TemplateProcessing` post-processor whose pair
    template is `cls $A sep (sep ...) $B sep`."""
    pair = step.get("pair") or []
    specials = [item.get("SpecialToken", {}).get("id") if isinstance(item, dict) else None
                for item in pair]
    sequences = [i for i, item in enumerate(pair) if isinstance(item, dict) and "Sequence" in item]
    if (len(sequences) != 2 or sequences[0] != 1 or sequences[1] != len(pair) - 2
            or specials[0] is None or len(set(specials[2:sequences[1]] + specials[-1:])) != 1
            or specials[-1] is None or sequences[1] < 3):
        fail("the TemplateProcessing pair template is not 'cls $A sep (sep ...) $B sep'")
    first, second = sequences
    return {"cls": specials[0], "sep": specials[-1],
            "template": PackTemplate(second - first - 1,
                                     pair[second]["Sequence"].get("type_id", 0))}
