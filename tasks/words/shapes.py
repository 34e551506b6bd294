"""Word shapes: the capitalisation an uncased encoder never sees, as one small id per word.

An uncased checkpoint (all-MiniLM-L6-v2, `bert-base-uncased`) lower-cases
its input, so "Apple" and "apple", "US" and "us" reach it as the same
subwords; for named entities capitalisation is one of the strongest cues
(the casing features of BiLSTM-CRF taggers). A word's shape is computed on
the word as written:

| shape | id (not first / first word) | e.g. |
|---|---|---|
| lower: letters, none upper case (or letters without case) | 1 / 7 | `apple`, `東京` |
| title: an upper-case letter, then none | 2 / 8 | `Apple`, `A`, `O'neil` |
| upper: two or more upper-case letters, no lower-case | 3 / 9 | `US`, `NATO`, `U.S.` |
| mixed: any other mix of cases | 4 / 10 | `iPhone`, `McDonald` |
| numeric: digits, no letter | 5 / 11 | `1996`, `3-2` |
| other: neither letters nor digits | 6 / 12 | `,`, `--` |

The first word of a sequence gets its own ids (7–12), because a capital
there says little; 0 is padding. `word_shape_ids` computes them in the graph
(`tf.data`, exported models); `word_shape` is the same rule in Python.
Word-level models take them as the input `word_shapes` and concatenate a
learned embedding of them to each word's vector (`concat_word_shape_embedding`):
the tagger and span NER with `--casing_features`.
"""

import unicodedata

import keras
import tensorflow as tf
from absl import flags

SHAPES = ("lower", "title", "upper", "mixed", "numeric", "other")
NUM_WORD_SHAPES = 1 + 2 * len(SHAPES)  # padding, then each shape not first / first
CASING_INPUT = "word_shapes"  # the feature and model input name
CASING_DIM = 16  # width of the shape embedding that `--casing_features` adds
CASING_FLAG = "casing_features"


def word_shape(word, first=False):
    """The shape id of one word (see the module docstring).

    Examples:
    >>> [word_shape(w) for w in ["apple", "Apple", "US", "iPhone", "1996", ","]]
    [1, 2, 3, 4, 5, 6]
    >>> word_shape("Apple", first=True)
    8
    """
    categories = [unicodedata.category(c) for c in word]
    upper = sum(c == "Lu" for c in categories)
    lower = any(c == "Ll" for c in categories)
    letter = any(c.startswith("L") for c in categories)
    if not letter:
        shape = "numeric" if any(c == "Nd" for c in categories) else "other"
    elif upper == 0:
        shape = "lower"
    elif categories[0] == "Lu" and upper == 1:
        shape = "title"
    elif upper >= 2 and not lower:
        shape = "upper"
    else:
        shape = "mixed"
    return 1 + SHAPES.index(shape) + (len(SHAPES) if first else 0)


def word_shape_ids(words):
    """String RaggedTensor [B, (words)] → int32 shape ids [B, (words)] (see the module docstring).

    Examples:
    >>> ids = word_shape_ids(tf.ragged.constant([["Apple", "buys", "NATO", "iPhones"], ["3"]]))
    >>> ids.to_list()
    [[8, 1, 3, 4], [11]]
    """
    flat = words.flat_values

    def matches(pattern):
        return tf.strings.regex_full_match(flat, pattern)

    letter = matches(r".*\pL.*")
    any_upper = matches(r".*\p{Lu}.*")
    shape = tf.where(
        letter,
        tf.where(~any_upper, 1,
                 tf.where(matches(r"\p{Lu}\P{Lu}*"), 2,
                          tf.where(matches(r"\P{Ll}*\p{Lu}\P{Ll}*\p{Lu}\P{Ll}*"), 3, 4))),
        tf.where(matches(r".*\p{Nd}.*"), 5, 6))
    position = tf.ragged.range(words.row_lengths()).flat_values
    first = tf.cast(tf.equal(position, 0), tf.int32) * len(SHAPES)
    return words.with_flat_values(tf.cast(shape, tf.int32) + first)


def concat_word_shape_embedding(words, word_shapes, casing_dim):
    """Each word's vector and a learned `casing_dim`-wide embedding of its shape (functional).

    Args:
        words: [B, W, H] word vectors (a Keras tensor).
        word_shapes: [B, W] int32 shape ids (a Keras tensor).
        casing_dim: width of the embedding.

    Returns:
        [B, W, H + casing_dim].

    Examples:
    >>> words = keras.Input((None, 8)); shapes = keras.Input((None,), dtype="int32")
    >>> concat_word_shape_embedding(words, shapes, 4).shape
    (None, None, 12)
    """
    embedding = keras.layers.Embedding(
        NUM_WORD_SHAPES, int(casing_dim),
        embeddings_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
        name="word_shape_embedding")
    return keras.layers.Concatenate(name="words_and_shapes")([words, embedding(word_shapes)])


def casing_features_for(casing_features, lowercase):
    """Whether a word task uses casing features: as asked, or (None) when its text is uncased.

    Examples:
    >>> casing_features_for(None, lowercase=True), casing_features_for(None, lowercase=False)
    (True, False)
    >>> casing_features_for(False, lowercase=True)
    False
    """
    return bool(lowercase) if casing_features is None else bool(casing_features)


class CasingFeaturesOption:
    """What a word task with a `casing_features` option (tagging, span NER) decides from it.

    Mixed into a `tasks.task.Task` whose options have `casing_features`
    (True, False, or None: on for uncased text): the preprocessor's
    `word_shapes`, the option resolved for the text's casing, and the head's
    `casing_dim`.
    """

    def preprocessor_options(self):
        return {"word_shapes": bool(self.options.casing_features)}

    def for_text_casing(self, lowercase):
        return self.with_options(
            casing_features=casing_features_for(self.options.casing_features, lowercase))

    def casing_dim(self):
        """The head's `casing_dim`: `CASING_DIM` with casing features, else 0."""
        return CASING_DIM if self.options.casing_features else 0


def define_casing_flag(flag_values):
    """Defines `--casing_features` in `flag_values`, once for every task that takes it.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_casing_flag(values); define_casing_flag(values)
    >>> _ = values(["train", "--casing_features"])
    >>> values.casing_features
    True

    Not given, it is None: on for an uncased encoder (`casing_features_for`).
    """
    if CASING_FLAG in flag_values:
        return
    flags.DEFINE_boolean(
        CASING_FLAG, None, "Tagging and span NER: give the head each word's capitalisation "
        "as written (lower, Title, UPPER, mixed, numeric, other; the first word apart): what "
        "an uncased encoder cannot see. Default: on when the vocabulary is uncased "
        "(lower-cases its input), off for a cased one. Kept with the model: predict and "
        "export use it too.",
        flag_values=flag_values)
