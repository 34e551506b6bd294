"""Raw text → model features, the same in `tf.data` and in an exported model.

A `TextPreprocessor` holds what turns raw text into a model's inputs: the
WordPiece vocabulary, whether it is uncased (lower-casing and accent
stripping) and the longest packed sequence. It packs one text, or a text
pair, as `[CLS] a [SEP] (b [SEP])`; `tasks.words.preprocessor.WordPreprocessor`
does the same for pre-split words (tagging, span NER). Both have one
transform, `encode` (ragged rows, for `tf.data` pipelines, which then group
by length), and `call` = `encode` + padding to the bucket length of the
batch (for exported models and direct use), so training and serving cannot
drift. Task models carry their preprocessor (see
`EncoderTaskModel.attach_metadata`), so a `.keras` file is enough to tokenize,
predict and export (`tools/predict.py --model`, `tools/export.py`).

The vocabulary is a Keras *asset*: `save_assets` writes it as a text file into
the `.keras` archive and `load_assets` reads it back, after `from_config` has
built the layer from its small JSON config (`lowercase`, `max_seq_length`).
The layer has no weights and takes no part in the model's computation.

Any `SubwordTokenizer` may stand in for the WordPiece vocabulary (byte-level
BPE, SentencePiece): the preprocessor then keeps that tokenizer, its config
under `tokenizer` and its files as the assets (`tokenizer_from_assets`).
"""

import os

import keras
import tensorflow as tf

from nlpzoo.tasks.text.batching import bucket_length
from nlpzoo.tasks.text.ragged_rows import split_rows
from nlpzoo.tasks.text.subword_tokenizer import (
    SubwordTokenizer,
    tokenizer_config,
    tokenizer_from_assets,
)
from nlpzoo.tasks.text.tokenizer import PAD, UNK, CLS, SEP, WordPieceTokenizer, read_vocabulary

VOCABULARY_FILE = "vocabulary.txt"


@keras.saving.register_keras_serializable(package="nlpzoo")
class TextPreprocessor(keras.layers.Layer):
    """Vocabulary, lower-casing and `max_seq_length` of a model, saved with it.

    Args:
        vocabulary: the WordPiece tokens in id order, the path of a
            `vocab.txt`, or a `SubwordTokenizer` of any kind (its vocabulary,
            casing and template); None when it comes later from `load_assets`
            (that is how `.keras` files restore it).
        lowercase: lower-case and strip accents before WordPiece.
        max_seq_length: the longest packed `[CLS] … [SEP]` sequence.
        tokenizer: the `tokenizer_config` of a tokenizer that is not
            WordPiece, when `load_assets` restores it (saved configs carry it).

    Examples:
    >>> preprocessor = TextPreprocessor(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cafe", "open"], max_seq_length=16)
    >>> preprocessor.tokenizer().tokenize(["Café open"]).to_list()
    [[[4], [5]]]
    >>> features = preprocessor(tf.constant(["Café open", "open"]))
    >>> features["token_ids"].numpy().tolist()[0]
    [2, 4, 5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    >>> sorted(preprocessor.get_config())[:3]
    ['dtype', 'lowercase', 'max_seq_length']
    """

    def __init__(self, vocabulary=None, lowercase=True, max_seq_length=128, tokenizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        if int(max_seq_length) < 4:
            raise ValueError(f"max_seq_length must be >= 4, got {max_seq_length}")
        self.lowercase = bool(lowercase)
        self.max_seq_length = int(max_seq_length)
        self._vocabulary = None
        self._tokenizer = None
        # Set for a tokenizer that is not WordPiece: `load_assets` rebuilds it from this.
        self._tokenizer_config = dict(tokenizer) if tokenizer else None
        if isinstance(vocabulary, SubwordTokenizer):
            self.set_tokenizer(vocabulary)
        elif vocabulary is not None:
            self.set_vocabulary(vocabulary)
        self.built = True  # nothing to build: no weights

    @property
    def vocabulary(self):
        """The tokens in id order (a tuple), or None before one is set or loaded."""
        return self._vocabulary

    def set_vocabulary(self, vocabulary):
        """Sets the tokens (a list, or the path of a `vocab.txt`)."""
        if isinstance(vocabulary, (str, os.PathLike)):
            tokens = read_vocabulary(vocabulary)
        else:
            tokens = [str(token) for token in vocabulary]
            missing = [token for token in (PAD, UNK, CLS, SEP) if token not in tokens]
            if missing:
                raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        # A tuple of strings: Keras does not wrap it, and saving skips it quickly.
        self._vocabulary = tuple(tokens)
        self._tokenizer = None
        self._tokenizer_config = None

    def set_tokenizer(self, tokenizer):
        """Uses `tokenizer` (any `SubwordTokenizer`): its vocabulary, casing and template."""
        if isinstance(tokenizer, WordPieceTokenizer):
            self.set_vocabulary(tokenizer.vocabulary)
        else:
            self._vocabulary = tuple(tokenizer.vocabulary)
            self._tokenizer_config = tokenizer_config(tokenizer)
        self.lowercase = tokenizer.lowercase
        self._tokenizer = tokenizer

    def tokenizer(self):
        """The tokenizer: given, or the `WordPieceTokenizer` of the vocabulary (built once)."""
        if self._vocabulary is None:
            raise ValueError(f"{self.name}: no vocabulary was set or loaded")
        if self._tokenizer is None:
            # Outside any graph being traced (a tf.data map, a serving function): the
            # lookup table is a resource that must outlive that graph.
            with tf.init_scope():
                self._tokenizer = WordPieceTokenizer(list(self._vocabulary),
                                                     lowercase=self.lowercase)
        return self._tokenizer

    @property
    def padding_values(self):
        """Padding value of each feature that is not padded with 0."""
        return {"token_ids": self.tokenizer().pad_id}

    def encode(self, text, text_pair=None):
        """[B] strings (and [B] second texts) → ragged int32 features [B, (tokens)].

        `token_ids`, `segment_ids`, `padding_mask`: `[CLS] a [SEP] (b [SEP])`,
        truncated longest-first to `max_seq_length`.
        """
        tokenizer = self.tokenizer()
        if text_pair is None:
            segments = [tokenizer.tokenize_flat(text)]
        else:  # one tokenizer graph for both texts: half the ops to trace
            both = tokenizer.tokenize_flat(tf.concat([text, text_pair], axis=0))
            segments = split_rows(both, tf.shape(text)[0])
        token_ids, segment_ids = tokenizer.pack(segments, self.max_seq_length)
        return {"token_ids": token_ids, "segment_ids": segment_ids,
                "padding_mask": tf.ones_like(token_ids)}

    def pad(self, features):
        """Ragged [B, (n)] features → dense [B, bucket length], the bucket of the longest row.

        Every feature is padded to the same length (word-level ones too), as
        the training pipeline does.
        """
        longest = tf.reduce_max(tf.concat(
            [tf.cast(features["token_ids"].row_lengths(), tf.int32), [1]], 0))
        length = bucket_length(longest, self.max_seq_length)
        padded = {}
        for name, value in features.items():
            value = value.to_tensor(self.padding_values.get(name, 0))
            padded[name] = tf.pad(value, [[0, 0], [0, length - tf.shape(value)[1]]],
                                  constant_values=self.padding_values.get(name, 0))
        return padded

    def call(self, text, text_pair=None):
        """Dense features of raw texts, padded as `pad` does."""
        return self.pad(self.encode(text, text_pair))

    def save_assets(self, dir_path):
        if self._vocabulary is None:
            raise ValueError(f"{self.name}: no vocabulary to save")
        if self._tokenizer_config is not None:
            self.tokenizer().save_assets(dir_path)
            return
        with open(os.path.join(dir_path, VOCABULARY_FILE), "w", encoding="utf-8") as f:
            f.write("".join(f"{token}\n" for token in self._vocabulary))

    def load_assets(self, dir_path):
        if self._tokenizer_config is None:
            self.set_vocabulary(os.path.join(dir_path, VOCABULARY_FILE))
            return
        with tf.init_scope():  # its lookup tables must outlive any graph being traced
            self.set_tokenizer(tokenizer_from_assets(self._tokenizer_config, dir_path))

    def get_config(self):
        config = super().get_config()
        config.update({"lowercase": self.lowercase, "max_seq_length": self.max_seq_length})
        if self._tokenizer_config is not None:  # WordPiece models keep their old config
            config["tokenizer"] = dict(self._tokenizer_config)
        return config


def as_preprocessor(preprocessor, max_seq_length=None, preprocessor_class=TextPreprocessor):
    """`preprocessor` as a `preprocessor_class`, or one made from a `SubwordTokenizer`.

    The dataset functions take either: a preprocessor carries its own
    `max_seq_length`; a tokenizer needs one (128 when None).
    """
    if isinstance(preprocessor, preprocessor_class):
        return preprocessor
    if isinstance(preprocessor, TextPreprocessor):
        return preprocessor_class(preprocessor.tokenizer(),
                                  max_seq_length=max_seq_length or preprocessor.max_seq_length)
    if isinstance(preprocessor, SubwordTokenizer):
        return preprocessor_class(preprocessor, max_seq_length=max_seq_length or 128)
    raise TypeError(f"expected a {preprocessor_class.__name__} or a SubwordTokenizer, "
                    f"got {type(preprocessor).__name__}")
