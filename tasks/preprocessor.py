"""The text side of a trained model, saved inside its `.keras` file.

A `TextPreprocessor` holds what turns raw text into a model's inputs: the
WordPiece vocabulary, whether it is uncased (lower-casing and accent
stripping) and the longest packed sequence. Task models carry one (see
`EncoderTaskModel.attach_metadata`), so a `.keras` file is enough to tokenize,
predict and export (`tools/predict.py --model`, `tools/export.py`).

The vocabulary is a Keras *asset*: `save_assets` writes it as a text file into
the `.keras` archive and `load_assets` reads it back, after `from_config` has
built the layer from its small JSON config (`lowercase`, `max_seq_length`).
The layer has no weights and takes no part in the model's computation.
"""

import os

import keras

from tasks.tokenizer import PAD, UNK, CLS, SEP, WordPieceTokenizer, read_vocabulary

VOCABULARY_FILE = "vocabulary.txt"


@keras.saving.register_keras_serializable(package="nlpzoo")
class TextPreprocessor(keras.layers.Layer):
    """Vocabulary, lower-casing and `max_seq_length` of a model, saved with it.

    Args:
        vocabulary: the WordPiece tokens in id order, or the path of a
            `vocab.txt`; None when it comes later from `load_assets` (that is
            how `.keras` files restore it).
        lowercase: lower-case and strip accents before WordPiece.
        max_seq_length: the longest packed `[CLS] … [SEP]` sequence.

    Examples:
    >>> preprocessor = TextPreprocessor(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cafe", "open"], max_seq_length=16)
    >>> preprocessor.tokenizer().tokenize(["Café open"]).to_list()
    [[[4], [5]]]
    >>> sorted(preprocessor.get_config())[:3]
    ['dtype', 'lowercase', 'max_seq_length']
    """

    def __init__(self, vocabulary=None, lowercase=True, max_seq_length=128, **kwargs):
        super().__init__(**kwargs)
        if int(max_seq_length) < 4:
            raise ValueError(f"max_seq_length must be >= 4, got {max_seq_length}")
        self.lowercase = bool(lowercase)
        self.max_seq_length = int(max_seq_length)
        self._vocabulary = None
        self._tokenizer = None
        if vocabulary is not None:
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

    def tokenizer(self):
        """The `WordPieceTokenizer` of this vocabulary (built once, then reused)."""
        if self._vocabulary is None:
            raise ValueError(f"{self.name}: no vocabulary was set or loaded")
        if self._tokenizer is None:
            self._tokenizer = WordPieceTokenizer(list(self._vocabulary),
                                                 lowercase=self.lowercase)
        return self._tokenizer

    def call(self, inputs):
        raise NotImplementedError(
            "TextPreprocessor is not called in a model: use tokenizer(), or "
            "tasks.serving for the in-graph preprocessing of an exported model")

    def save_assets(self, dir_path):
        if self._vocabulary is None:
            raise ValueError(f"{self.name}: no vocabulary to save")
        with open(os.path.join(dir_path, VOCABULARY_FILE), "w", encoding="utf-8") as f:
            f.write("".join(f"{token}\n" for token in self._vocabulary))

    def load_assets(self, dir_path):
        self.set_vocabulary(os.path.join(dir_path, VOCABULARY_FILE))

    def get_config(self):
        config = super().get_config()
        config.update({"lowercase": self.lowercase, "max_seq_length": self.max_seq_length})
        return config
