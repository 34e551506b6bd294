"""Text clean-up as BERT does it, and words with character offsets: one definition
for readers, `tf.data`, `tools/predict.py` and exported SavedModels.

BERT's tokenizer drops control and format characters before it splits text
into words, so that a bell (U+0007), a zero-width space (U+200B), a soft
hyphen (U+00AD) or a byte-order mark (U+FEFF) never becomes a word or a
piece of one. The characters removed here (`is_removed_character`):

- control characters (Unicode category Cc) that Python's `str.split()` does
  not treat as whitespace: U+0000–U+0008, U+000E–U+001B, U+007F–U+0084,
  U+0086–U+009F (tab, newlines, U+000B, U+000C, U+001C–U+001F and U+0085
  stay whitespace, so they still separate words);
- format characters (category Cf): zero-width space and joiners,
  byte-order mark, soft hyphen, bidirectional marks, ...;
- U+FFFD, the replacement character, which is what undecodable bytes become.

A character is removed, not replaced by a space: "Ba\\u00adnk" is the word
"Bank", as in BERT. Words are then what `str.split()` finds. Python
(`clean_text`, `words_with_offsets`) and TensorFlow (`clean_texts`,
`split_words_with_offsets`) give the same results; a test keeps them so.
"""

import re
import unicodedata

import tensorflow as tf

from nlpzoo.tasks.text.ragged_rows import value_rowids

# Every character Python's str.isspace() accepts: str.split() splits at each of them.
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_REMOVED_CONTROL_RANGES = ((0x00, 0x08), (0x0E, 0x1B), (0x7F, 0x84), (0x86, 0x9F))
REPLACEMENT_CHARACTER = "\ufffd"

_WHITESPACE_CLASS = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE) + "]"
_REMOVED_PATTERN = (
    "[" + "".join(f"\\x{{{low:x}}}-\\x{{{high:x}}}" for low, high in _REMOVED_CONTROL_RANGES)
    + "\\x{fffd}\\p{Cf}]"
)
_WHITESPACE_CODEPOINTS = tuple(sorted(ord(c) for c in PYTHON_WHITESPACE))
# A run of non-whitespace: `\s` of a str pattern is exactly `str.isspace()` (a test checks).
_RUN = re.compile(r"\S+")


def is_removed_character(character):
    """Whether the clean-up drops `character` (see the module docstring).

    Examples:
    >>> [is_removed_character(c) for c in "a\\x07\\u200b\\t\\ufeff\\ufffd"]
    [False, True, True, False, True, True]
    """
    code = ord(character)
    if any(low <= code <= high for low, high in _REMOVED_CONTROL_RANGES):
        return True
    return character == REPLACEMENT_CHARACTER or unicodedata.category(character) == "Cf"


def clean_text(text):
    """`text` without the characters BERT's clean-up removes (Python).

    Examples:
    >>> clean_text("\\ufeffPeter\\x07 Black\\u200bburn\\tvisited")
    'Peter Blackburn\\tvisited'
    """
    return "".join(c for c in text if not is_removed_character(c))


def words_with_offsets(text):
    """The words of `text` with their character offsets: `[(word, start, end), ...]`.

    Words are the whitespace-separated runs of `text` (as `str.split()`
    finds them) with removed characters taken out; a run of nothing but
    removed characters is no word. `start` and `end` index `text` as given:
    `text[start:end]` is the word's surface form from its first kept
    character to its last (removed characters inside it included).

    Examples:
    >>> words_with_offsets(" Ba\\u00adnk  of\\x07 \\u200b Rome")
    [('Bank', 1, 6), ('of', 8, 10), ('Rome', 14, 18)]
    """
    words = []
    for match in _RUN.finditer(text):
        run, start = match.group(), match.start()
        if run.isprintable() and REPLACEMENT_CHARACTER not in run:  # nothing to remove
            words.append((run, start, match.end()))
            continue
        kept = [(index, c) for index, c in enumerate(run) if not is_removed_character(c)]
        if kept:
            words.append(("".join(c for _, c in kept), start + kept[0][0],
                          start + kept[-1][0] + 1))
    return words


def split_clean_words(text):
    """`[word, ...]`: `words_with_offsets` without the offsets.

    Examples:
    >>> split_clean_words("EU\\u00a0rejects\\x07 \\ufeff German")
    ['EU', 'rejects', 'German']
    """
    return [word for word, _, _ in words_with_offsets(text)]


def clean_texts(texts):
    """[...] UTF-8 strings → the same without removed characters (TensorFlow).

    Invalid UTF-8 becomes U+FFFD first, and is then removed like it.

    Examples:
    >>> clean_texts(tf.constant(["Black\\u200bburn\\x07", b"a\\xffb"])).numpy().tolist()
    [b'Blackburn', b'ab']
    """
    valid = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace",
                                         replacement_char=0xFFFD)
    return tf.strings.regex_replace(valid, _REMOVED_PATTERN, "")


def split_words_with_offsets(texts):
    """[B] strings → `(words, starts, ends)`, ragged [B, (words)], as `words_with_offsets`.

    `words` holds the cleaned words (string), `starts` and `ends` (int32)
    their character offsets into each text as given (in Unicode code points;
    invalid UTF-8 counts as one U+FFFD per bad byte sequence).

    Examples:
    >>> words, starts, ends = split_words_with_offsets(
    ...     tf.constant([" Ba\\u00adnk  of\\x07 \\u200b Rome", ""]))
    >>> words.to_list(), starts.to_list(), ends.to_list()
    ([[b'Bank', b'of', b'Rome'], []], [[1, 8, 14], []], [[6, 10, 18], []])
    """
    texts = tf.convert_to_tensor(texts, tf.string)
    characters = tf.strings.unicode_split(texts, "UTF-8", errors="replace",
                                          replacement_char=0xFFFD)  # [B, (C)]
    flat = characters.flat_values
    codes = tf.strings.unicode_decode(flat, "UTF-8").flat_values  # one code point each
    rows = value_rowids(characters)
    positions = tf.cast(tf.range(tf.size(flat, out_type=tf.int64))
                        - tf.gather(characters.row_starts(), rows), tf.int32)
    is_space = tf.reduce_any(
        tf.equal(codes[:, None], tf.constant(_WHITESPACE_CODEPOINTS, tf.int32)[None, :]), axis=1)
    is_kept = tf.logical_and(tf.logical_not(is_space),
                             tf.logical_not(tf.strings.regex_full_match(flat, _REMOVED_PATTERN)))
    # A run (a would-be word) starts at a non-space character after a space or a row start.
    previous_is_space = tf.concat([[True], is_space], axis=0)[:-1]
    run_starts = tf.logical_and(tf.logical_not(is_space),
                                tf.logical_or(previous_is_space, tf.equal(positions, 0)))
    run_ids = tf.cumsum(tf.cast(run_starts, tf.int32))
    kept_runs = tf.boolean_mask(run_ids, is_kept)
    # Renumber the runs that keep a character 0, 1, 2, ... (kept_runs is sorted).
    new_word = tf.not_equal(kept_runs, tf.concat([[0], kept_runs], axis=0)[:-1])  # ids >= 1
    word_ids = tf.cumsum(tf.cast(new_word, tf.int32)) - 1
    num_words = tf.reduce_sum(tf.cast(new_word, tf.int32))
    kept_positions = tf.boolean_mask(positions, is_kept)
    words = tf.strings.unsorted_segment_join(tf.boolean_mask(flat, is_kept), word_ids,
                                             num_words)
    starts = tf.math.unsorted_segment_min(kept_positions, word_ids, num_words)
    ends = tf.math.unsorted_segment_max(kept_positions, word_ids, num_words) + 1
    word_rows = tf.math.unsorted_segment_min(tf.boolean_mask(rows, is_kept), word_ids,
                                             num_words)
    nrows = characters.nrows()
    return tuple(tf.RaggedTensor.from_value_rowids(values, word_rows, nrows=nrows)
                 for values in (words, starts, ends))


def split_words(texts):
    """[B] strings → cleaned words, string RaggedTensor [B, (words)].

    Examples:
    >>> split_words(tf.constant(["  EU\\u00a0rejects\\tGerman\\ufeff ", ""])).to_list()
    [[b'EU', b'rejects', b'German'], []]
    """
    return split_words_with_offsets(texts)[0]
