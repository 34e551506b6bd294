"""Text clean-up as BERT does it: one definition for readers, `tf.data`,
`tools/predict.py` and exported SavedModels.

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
"Bank", as in BERT. How a text is then split into words, with character
offsets, is `tasks.text.word_splitting`. Python (`clean_text`) and TensorFlow
(`clean_texts`) give the same results; a test keeps them so.
"""

import functools
import itertools
import sys
import unicodedata

import tensorflow as tf

# Every character Python's str.isspace() accepts: str.split() splits at each of them.
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_REMOVED_CONTROL_RANGES = ((0x00, 0x08), (0x0E, 0x1B), (0x7F, 0x84), (0x86, 0x9F))
REPLACEMENT_CHARACTER = "\ufffd"


@functools.cache
def category_ranges(prefix):
    """`((low, high), ...)`: the code points whose Unicode category starts with `prefix`,
    as Python's `unicodedata` (not RE2's `\\p{..}`, whose Unicode version differs) has them.

    Examples:
    >>> category_ranges("Cf")[:3]
    ((173, 173), (1536, 1541), (1564, 1564))
    """
    ranges = []
    for category, low, high in _category_runs():
        if category.startswith(prefix):
            if ranges and ranges[-1][1] == low - 1:
                ranges[-1] = (ranges[-1][0], high)
            else:
                ranges.append((low, high))
    return tuple(ranges)


@functools.cache
def _category_runs():
    """`((category, low, high), ...)`: every code point, in runs of one Unicode category.

    One pass over the code points for every prefix asked for (each process that splits
    text pays it once: about 0.3 s, where a Python loop per prefix took 0.4 s each).
    """
    runs, low = [], 0
    categories = map(unicodedata.category, map(chr, range(sys.maxunicode + 1)))
    for category, run in itertools.groupby(categories):
        high = low + sum(1 for _ in run) - 1
        runs.append((category, low, high))
        low = high + 1
    return tuple(runs)


def ranges_class(ranges):
    """An RE2 character class of `(low, high)` code point ranges.

    Examples:
    >>> ranges_class([(0x41, 0x5A), (0xAD, 0xAD)])
    '[\\\\x{41}-\\\\x{5a}\\\\x{ad}-\\\\x{ad}]'
    """
    return "[" + "".join(f"\\x{{{low:x}}}-\\x{{{high:x}}}" for low, high in ranges) + "]"


@functools.cache
def removed_pattern():
    """`is_removed_character` as an RE2 character class: the graph's clean-up (`clean_texts`)
    and word splitting drop exactly what Python's does (a test checks every code point).

    Examples:
    >>> removed_pattern()[:24]
    '[\\\\x{0}-\\\\x{8}\\\\x{e}-\\\\x{1b}'
    """
    return ranges_class(_REMOVED_CONTROL_RANGES + ((0xFFFD, 0xFFFD),) + category_ranges("Cf"))


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


def clean_texts(texts):
    """[...] UTF-8 strings → the same without removed characters (TensorFlow).

    Invalid UTF-8 becomes U+FFFD first, and is then removed like it.

    Examples:
    >>> clean_texts(tf.constant(["Black\\u200bburn\\x07", b"a\\xffb"])).numpy().tolist()
    [b'Blackburn', b'ab']
    """
    valid = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace",
                                         replacement_char=0xFFFD)
    return tf.strings.regex_replace(valid, removed_pattern(), "")
