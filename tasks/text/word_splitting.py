"""The words of a raw text, as BERT's basic tokenizer splits it, with character offsets.

One definition for `tools/predict.py`'s plain-text input, `model.predict` on raw
strings and the exported SavedModel (`split_words` in Python, `split_texts` in
TensorFlow; a test keeps them equal):

1. the clean-up of `tasks.text.text_cleaning` drops control and format
   characters and U+FFFD (`is_removed_character`); a removed character
   separates nothing: "Ba\\u00adnk" is the word "Bank";
2. whitespace separates words (every character of `str.isspace()`: spaces,
   tabs, no-break spaces, ideographic spaces, ...);
3. each punctuation character is a word of its own: Unicode categories P*
   and the ASCII symbols BERT treats as punctuation (`$`, `+`, `<`, `=`,
   `>`, `^`, `` ` ``, `|`, `~`: code points 33–47, 58–64, 91–96, 123–126);
4. each CJK ideograph is a word of its own (the CJK Unified Ideographs blocks
   and their extensions A–E, and the compatibility ideographs, as BERT's
   `_is_chinese_char`); kana, hangul and other scripts stay in their words.

So "He flew to Paris, France." is `He flew to Paris , France .`. Each word
keeps its character offsets into the text as given (code points, end
exclusive): `text[start:end] == word` for every word without a removed
character inside it (such a word is cleaned, its offsets still span it).
Accents, combining marks and emoji stay in their words; nothing is lower-cased
or normalised here (the tokenizer does that).

Where this differs from BERT's `BasicTokenizer`: BERT also counts U+2028 and
U+2029 (line and paragraph separators) as part of a word, here they separate
words, as `str.split()` does.
"""

import functools
import re
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

from nlpzoo.tasks.text.text_cleaning import (
    PYTHON_WHITESPACE,
    category_ranges,
    is_removed_character,
    ranges_class,
    removed_pattern,
)

# The ASCII symbols BERT counts as punctuation though Unicode does not (all of
# 33-47, 58-64, 91-96 and 123-126, categories P* and S*).
ASCII_PUNCTUATION_RANGES = ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E))
# CJK ideographs: Unified Ideographs, Extension A, Extensions B-E, Compatibility
# Ideographs and their Supplement (Hangul and kana are not among them).
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


# A run of non-whitespace: `\s` of a str pattern is exactly `str.isspace()`.
_RUN = re.compile(r"\S+")
# A printable ASCII run's words: letters and digits, or one punctuation character.
_ASCII_PUNCTUATION = "".join(re.escape(chr(low)) + "-" + re.escape(chr(high))
                             for low, high in ASCII_PUNCTUATION_RANGES)
_ASCII_WORD = re.compile(f"[^{_ASCII_PUNCTUATION}]+|[{_ASCII_PUNCTUATION}]")
WHITESPACE_PATTERN = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE) + "]+"


@functools.cache
def alone_pattern():
    """`is_word_alone` as an RE2 character class, for the graph.

    Punctuation is listed from Python's `unicodedata` (not RE2's `\\p{P}`, whose
    Unicode version differs), so that the graph splits exactly as `split_words`.

    Examples:
    >>> alone_pattern()[:40]
    '[\\\\x{21}-\\\\x{2f}\\\\x{3a}-\\\\x{40}\\\\x{5b}-\\\\x{60}'
    """
    return ranges_class(ASCII_PUNCTUATION_RANGES + CJK_RANGES + category_ranges("P"))


@functools.lru_cache(maxsize=65536)
def is_word_alone(character):
    """Whether `character` is always a word of its own: punctuation or a CJK ideograph.

    Examples:
    >>> [is_word_alone(c) for c in ",$-\\u00bf\\u3002\\u4e2d\\u3042a\\u00e9"]
    [True, True, True, True, True, True, False, False, False]
    """
    code = ord(character)
    if any(low <= code <= high for low, high in ASCII_PUNCTUATION_RANGES + CJK_RANGES):
        return True
    return unicodedata.category(character).startswith("P")


def split_words(text):
    """The words of a raw `text` with their character offsets: `[(word, start, end), ...]`.

    See the module docstring for the rules; `text[start:end] == word` unless
    a removed character (control, format) sits inside the word.

    Examples:
    >>> split_words("He flew to Paris, France, on Monday.")[3:]
    [('Paris', 11, 16), (',', 16, 17), ('France', 18, 24), (',', 24, 25), ('on', 26, 28), ('Monday', 29, 35), ('.', 35, 36)]
    >>> split_words("Ba\\u00adnk\\x07 \\u4e1c\\u4eac\\u00a0caf\\u00e9!")
    [('Bank', 0, 5), ('东', 7, 8), ('京', 8, 9), ('café', 10, 14), ('!', 14, 15)]
    """
    words = []
    for run, start in _whitespace_runs(text):
        if run.isascii() and run.isprintable():  # the common case: no character to remove,
            words.extend((match.group(), start + match.start(), start + match.end())
                         for match in _ASCII_WORD.finditer(run))  # no ideograph
            continue
        kept = []  # (offset, character) of the word being read

        def close():
            if kept:
                words.append(("".join(c for _, c in kept), kept[0][0], kept[-1][0] + 1))
                kept.clear()

        for index, character in enumerate(run, start):
            if is_removed_character(character):
                continue
            if is_word_alone(character):
                close()
                words.append((character, index, index + 1))
            else:
                kept.append((index, character))
        close()
    return words


def _whitespace_runs(text):
    """`(run, start)` of each maximal run of non-whitespace characters of `text`."""
    return ((match.group(), match.start()) for match in _RUN.finditer(text))


def split_texts_with_offsets(texts):
    """[B] strings → `(words, starts, ends)`, ragged [B, (words)], as `split_words`.

    `words` holds the cleaned words (string), `starts` and `ends` (int32)
    their character offsets into each text as given (code points; invalid
    UTF-8 counts as one U+FFFD per bad byte sequence). Made of
    `tensorflow_text.regex_split_with_offsets` with patterns built from the
    tables `split_words` reads.

    Examples:
    >>> words, starts, ends = split_texts_with_offsets(
    ...     tf.constant(["Paris, Fran\\u00e7e\\x07.", " \\u200b ", ""]))
    >>> words.to_list(), starts.to_list(), ends.to_list()
    ([[b'Paris', b',', b'Fran\\xc3\\xa7e', b'.'], [], []], [[0, 5, 7, 14], [], []], [[5, 6, 13, 15], [], []])
    """
    texts = tf.strings.unicode_transcode(tf.convert_to_tensor(texts, tf.string), "UTF-8",
                                         "UTF-8", errors="replace", replacement_char=0xFFFD)
    pieces, begins, ends = tf_text.regex_split_with_offsets(
        texts, WHITESPACE_PATTERN + "|" + alone_pattern(), alone_pattern())
    # A piece's removed characters: dropped from the word, and from its ends' offsets.
    removed = removed_pattern()
    words = tf.strings.regex_replace(pieces.flat_values, removed, "")
    leading = tf.strings.length(pieces.flat_values) - tf.strings.length(
        tf.strings.regex_replace(pieces.flat_values, "^" + removed + "+", ""))
    trailing = tf.strings.length(pieces.flat_values) - tf.strings.length(
        tf.strings.regex_replace(pieces.flat_values, removed + "+$", ""))
    rows = pieces.value_rowids()
    starts = _character_offsets(texts, rows, begins.flat_values + tf.cast(leading, tf.int64))
    ends = _character_offsets(texts, rows, ends.flat_values - tf.cast(trailing, tf.int64))
    kept = tf.not_equal(words, "")
    return tuple(tf.RaggedTensor.from_value_rowids(tf.boolean_mask(values, kept),
                                                   tf.boolean_mask(rows, kept),
                                                   nrows=pieces.nrows())
                 for values in (words, starts, ends))


def _character_offsets(texts, rows, byte_offsets):
    """Byte offsets into `texts[rows]` (valid UTF-8) → character offsets (int32).

    One sorted search over the whole batch: the texts laid end to end, each
    character placed by its byte offset in that concatenation."""
    _, character_bytes = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")  # [B, (C)]
    text_bytes = tf.cast(tf.strings.length(texts), tf.int64)
    text_base = tf.cumsum(text_bytes, exclusive=True)
    character_positions = character_bytes.flat_values + tf.gather(
        text_base, character_bytes.value_rowids())
    found = tf.searchsorted(character_positions, byte_offsets + tf.gather(text_base, rows),
                            side="left")
    return tf.cast(tf.cast(found, tf.int64) - tf.gather(character_bytes.row_starts(), rows),
                   tf.int32)


def split_texts(texts):
    """[B] strings → their words, string RaggedTensor [B, (words)] (`split_texts_with_offsets`).

    Examples:
    >>> split_texts(tf.constant(["  EU\\u00a0rejects\\tGerman's call\\ufeff ", ""])).to_list()
    [[b'EU', b'rejects', b'German', b"'", b's', b'call'], []]
    """
    return split_texts_with_offsets(texts)[0]
