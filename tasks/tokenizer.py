"""WordPiece tokenization with tensorflow-text, usable inside tf.data and SavedModels."""

import collections
import os

import tensorflow as tf
import tensorflow_text as tf_text

from tasks.atomic_files import write_text_atomically
from tasks.text_cleaning import clean_texts

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
RESERVED_TOKENS = (PAD, UNK, CLS, SEP, MASK)


def read_vocabulary(path):
    """Reads a `vocab.txt` (one token per line, id = line number)."""
    try:
        with open(path, encoding="utf-8") as f:
            tokens = [line.rstrip("\r\n") for line in f]
    except OSError as error:
        raise FileNotFoundError(f"{path}: cannot read the vocabulary: {error.strerror}")
    while tokens and not tokens[-1]:
        tokens.pop()
    missing = [token for token in (PAD, UNK, CLS, SEP) if token not in tokens]
    if missing:
        raise ValueError(f"{path}: the vocabulary lacks the special tokens {missing}")
    return tokens


def write_vocabulary(tokens, path):
    """Writes `tokens` one per line, atomically."""
    write_text_atomically(path, [f"{token}\n" for token in tokens])


def build_vocabulary(texts, vocab_size=8000, lowercase=True, min_frequency=2, batch_size=4096,
                     progress=None):
    """Learns a WordPiece vocabulary from an iterable of strings.

    Words are split as `WordPieceTokenizer` splits them (the same uncased
    normalisation, then BERT's whitespace and punctuation splitting) and
    counted batch by batch; tensorflow-text's WordPiece learner then picks the
    pieces. The reserved tokens `[PAD] [UNK] [CLS] [SEP] [MASK]` come first,
    so `[PAD]` has id 0.

    Args:
        texts: the training text, one string per example (any iterable).
        vocab_size: the target size (small corpora give fewer tokens).
        lowercase: lower-case and strip accents first (uncased vocabulary).
        min_frequency: words seen fewer times are not learned whole.
        batch_size: strings tokenized at once.
        progress: called as `progress(texts_read, words_read)` after each batch.

    Returns:
        The list of tokens.

    Examples:
    >>> tokens = build_vocabulary(["the cat sat", "the cat ran"] * 5, vocab_size=40)
    >>> tokens[:5], "cat" in tokens
    (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], True)
    """
    # Imported here: the learner module is slow to import and only needed here.
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from tensorflow_text.python.ops.bert_tokenizer import BasicTokenizer

    splitter = BasicTokenizer(lower_case=False)
    counts = collections.Counter()
    texts_read = words_read = 0

    def count(batch):
        nonlocal texts_read, words_read
        batch = tf.constant(batch)
        if lowercase:
            batch = normalize_uncased(batch)
        words = splitter.tokenize(batch).flat_values.numpy()
        counts.update(words)
        texts_read += len(batch)
        words_read += len(words)
        if progress is not None:
            progress(texts_read, words_read)

    batch = []
    for text in texts:
        batch.append(text)
        if len(batch) == batch_size:
            count(batch)
            batch = []
    if batch:
        count(batch)
    if not counts:
        raise ValueError("no text to learn a vocabulary from")
    word_counts = [(word.decode("utf-8"), n) for word, n in counts.items()]
    return learner.learn(word_counts, vocab_size, list(RESERVED_TOKENS),
                         lower_thresh=min_frequency)


def normalize_uncased(texts):
    """Uncased BERT normalisation: per-character lower case, NFD, no accents.

    Characters are lower-cased one by one (no word-final sigma rule, "ß" and
    ligatures kept), then combining marks (Unicode category Mn) are removed
    after NFD, which is what `BertTokenizerFast` does for uncased
    vocabularies.

    Examples:
    >>> normalize_uncased(tf.constant(["Café Straße"])).numpy()[0].decode()
    'cafe straße'
    """
    characters = tf.strings.unicode_split(texts, "UTF-8")
    lowered = tf.strings.reduce_join(tf.strings.lower(characters, encoding="utf-8"), axis=-1)
    decomposed = tf_text.normalize_utf8(lowered, "NFD")
    return tf.strings.regex_replace(decomposed, r"\p{Mn}", "")


class WordPieceTokenizer(tf.Module):
    """BERT's basic + WordPiece tokenizer over a fixed vocabulary.

    `lowercase=True` lower-cases, NFD-normalises and strips accents, as BERT's
    uncased checkpoints expect ("Café" → "cafe"); punctuation and CJK
    characters are split off; out-of-vocabulary words become `[UNK]`.

    Args:
        vocabulary: a list of tokens or the path of a `vocab.txt`.
        lowercase: lower-case and strip accents.

    Examples:
    >>> tokenizer = WordPieceTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "is", "open", "##s"])
    >>> tokenizer.tokenize(["Café opens"]).to_list()
    [[[5], [7, 8]]]
    """

    def __init__(self, vocabulary, lowercase=True):
        super().__init__()
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = read_vocabulary(vocabulary)
        self.vocabulary = list(vocabulary)
        self.lowercase = bool(lowercase)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.vocabulary),
                tf.range(len(self.vocabulary), dtype=tf.int64),
            ),
            default_value=-1,
        )
        # Lower-casing is done in `normalize_uncased`, as Hugging Face does it; the
        # tokenizer's own (full Unicode case folding) would turn "ß" into "ss".
        self._tokenizer = tf_text.BertTokenizer(
            self._table,
            token_out_type=tf.int64,
            unknown_token=UNK,
            lower_case=False,
        )
        index = {token: i for i, token in enumerate(self.vocabulary)}
        self.pad_id = index[PAD]
        self.unk_id = index[UNK]
        self.cls_id = index[CLS]
        self.sep_id = index[SEP]
        self.mask_id = index.get(MASK, self.unk_id)

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def tokenize(self, texts):
        """[batch] strings → int32 RaggedTensor [batch, words, wordpieces].

        Texts are cleaned first (`tasks.text_cleaning.clean_texts`: control
        and format characters removed, as BERT does).
        """
        texts = clean_texts(tf.convert_to_tensor(texts, tf.string))
        if self.lowercase:
            texts = normalize_uncased(texts)
        return tf.cast(self._tokenizer.tokenize(texts), tf.int32)

    def tokenize_flat(self, texts):
        """[batch] strings → int32 RaggedTensor [batch, wordpieces]."""
        return self.tokenize(texts).merge_dims(-2, -1)

    def pack(self, segments, max_length):
        """Packs 1 or 2 ragged [batch, wordpieces] segments as `[CLS] a [SEP] b [SEP]`.

        Truncates longest-first so that the packed length is at most
        `max_length`. Returns ragged `token_ids` and `segment_ids` [batch, len].
        """
        budget = max_length - 1 - len(segments)
        if budget < len(segments):
            raise ValueError(f"max_length={max_length} leaves no room for text")
        if len(segments) == 1:
            # ShrinkLongestTrimmer fails on a single segment (a while-loop shape
            # error in tensorflow-text 2.21); for one segment both trim the same.
            trimmer = tf_text.WaterfallTrimmer(budget, axis=-1)
        else:
            trimmer = tf_text.ShrinkLongestTrimmer(budget, axis=-1)
        trimmed = trimmer.trim(segments)
        token_ids, segment_ids = tf_text.combine_segments(
            trimmed, start_of_sequence_id=self.cls_id, end_of_segment_id=self.sep_id
        )
        return tf.cast(token_ids, tf.int32), tf.cast(segment_ids, tf.int32)
