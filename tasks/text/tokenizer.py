"""WordPiece tokenization with tensorflow-text, usable inside tf.data and SavedModels."""

import collections
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from nlpzoo.tasks.io.atomic_files import write_text_atomically
from nlpzoo.tasks.io.errors import DataFormatError, MissingDataFileError
from nlpzoo.tasks.text.line_reader import read_lines
from nlpzoo.tasks.io.progress import Progress
from nlpzoo.tasks.text.subword_tokenizer import SubwordTokenizer, register_tokenizer
from nlpzoo.tasks.text.text_cleaning import clean_texts

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
RESERVED_TOKENS = (PAD, UNK, CLS, SEP, MASK)


def read_vocabulary(path):
    """Reads a `vocab.txt` (one token per line, id = line number), validated: UTF-8
    text, not empty, no token listed twice, BERT's special tokens present.

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: (a ValueError) it cannot be read or is not such a vocabulary; the
            message names the file (and the line of a repeated token, of invalid UTF-8 or of
            a line over `tasks.text.line_reader.MAX_LINE_BYTES`).

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> _ = open(path, "w").write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nthe\\nthe\\n")
    >>> read_vocabulary(path)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: ...:6: the token 'the' is listed twice (first on line 5): a vocabulary lists each token once
    """
    try:  # streamed, with the line limit: a 5 GB line is refused at 1 MiB, not held
        tokens = [line for _, line in read_lines(path)]
    except MissingDataFileError:
        raise FileNotFoundError(f"{path}: cannot read the vocabulary: no such file") from None
    except DataFormatError as error:  # not UTF-8, or a line longer than any token
        line, _, problem = str(error).removeprefix(f"{path}:").partition(": ")
        if not line.isdigit():
            raise
        raise DataFormatError(f"{path}:{line}: not a vocabulary: {problem}") from None
    while tokens and not tokens[-1]:
        tokens.pop()
    if not tokens:
        raise DataFormatError(f"{path}: the vocabulary is empty; expected one token per line")
    first_line = {}
    for number, token in enumerate(tokens, 1):
        if token in first_line:
            raise DataFormatError(f"{path}:{number}: the token {token!r} is listed twice "
                                  f"(first on line {first_line[token]}): a vocabulary lists "
                                  "each token once")
        first_line[token] = number
    missing = [token for token in (PAD, UNK, CLS, SEP) if token not in first_line]
    if missing:
        raise DataFormatError(f"{path}: the vocabulary lacks the special tokens {missing}")
    return tokens


def write_vocabulary(tokens, path):
    """Writes `tokens` one per line, atomically."""
    write_text_atomically(path, [f"{token}\n" for token in tokens])


UNUSED_TOKEN = "[unused{}]"  # BERT's placeholders, filling a vocabulary up to its size
JOINER = "##"
# The learner keeps a vocabulary within this fraction above the request, then drops its
# rarest tokens: fewer learning passes than an exact threshold would need.
_SLACK = 0.05


def build_vocabulary(texts, vocab_size=8000, lowercase=True, min_frequency=2, batch_size=4096,
                     progress=None, reserved_tokens=RESERVED_TOKENS):
    """Learns a WordPiece vocabulary of exactly `vocab_size` tokens from strings.

    Texts are cleaned, normalised and split into words as `WordPieceTokenizer`
    sees them (`tasks.text.text_cleaning.clean_texts`, the uncased normalisation,
    then BERT's whitespace and punctuation splitting) and counted batch by
    batch. tensorflow-text's WordPiece learner then picks the pieces at a
    frequency threshold found by binary search: the highest threshold whose
    vocabulary is not smaller than the request. The size is then made exact:

    - every character of the text, alone and as a `##` continuation, is kept
      (any word of the text tokenizes without `[UNK]`), with the reserved tokens;
    - the rarest other pieces are dropped while the vocabulary is too large;
    - when even `min_frequency` gives too few pieces (a small text),
      BERT's placeholders `[unused0]`, `[unused1]`, ... fill it up (at the end).

    The reserved tokens come first, so `[PAD]` has id 0.

    Args:
        texts: the training text, one string per example (any iterable).
        vocab_size: the number of tokens returned.
        lowercase: lower-case and strip accents first (uncased vocabulary).
        min_frequency: pieces seen fewer times are not learned (characters always are).
        batch_size: strings tokenized at once.
        progress: called as `progress(texts_read, words_read)` after each batch.
            Whatever it is, the counting and each learning pass are reported on
            standard error when reporting is on (`tasks.io.progress.set_enabled`).
        reserved_tokens: the tokens given the first ids.

    Returns:
        The list of `vocab_size` tokens.

    Raises:
        ValueError: no text, or `vocab_size` below the minimum (the reserved
            tokens and every character alone and after `##`), which the message gives.

    Examples:
    >>> tokens = build_vocabulary(["the cat sat", "the cat ran"] * 5, vocab_size=40)
    >>> len(tokens), tokens[:5], "cat" in tokens, tokens[-1]
    (40, ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], True, '[unused14]')
    >>> build_vocabulary(["the cat sat"], vocab_size=16)
    Traceback (most recent call last):
    ...
    ValueError: vocab_size=16 is below the minimum of 17 for this text: 5 reserved tokens
    and 6 characters, each alone and after ##
    """
    counts = _count_words(texts, lowercase, batch_size, progress)
    reserved_tokens = list(dict.fromkeys(reserved_tokens))
    characters = sorted({character for word in counts for character in word})
    required = list(dict.fromkeys(
        reserved_tokens + characters + [JOINER + character for character in characters]))
    if vocab_size < len(required):
        raise ValueError(
            f"vocab_size={vocab_size} is below the minimum of {len(required)} for this text: "
            f"{len(reserved_tokens)} reserved tokens and {len(characters)} characters, each "
            f"alone and after {JOINER}")
    learned = _learn_at_least(counts, vocab_size, reserved_tokens, min_frequency)
    return _exact_size(learned, required, vocab_size)


def _count_words(texts, lowercase, batch_size, progress):
    """`{word: count}` of the texts, split as the tokenizer splits them."""
    from tensorflow_text.python.ops.bert_tokenizer import BasicTokenizer

    splitter = BasicTokenizer(lower_case=False)
    counts = collections.Counter()
    texts_read = words_read = 0
    reporter = Progress("counting words", unit="texts")

    def count(batch):
        nonlocal texts_read, words_read
        batch = clean_texts(tf.constant(batch))
        if lowercase:
            batch = normalize_uncased(batch)
        words = splitter.tokenize(batch).flat_values.numpy()
        counts.update(words)
        texts_read += len(batch)
        words_read += len(words)
        if progress is not None:
            progress(texts_read, words_read)
        reporter.update(texts_read, f"{words_read:,} words counted")

    batch = []
    for text in texts:
        batch.append(text)
        if len(batch) == batch_size:
            count(batch)
            batch = []
    if batch:
        count(batch)
    reporter.finish()
    if not counts:
        raise ValueError("no text to learn a vocabulary from")
    return {word.decode("utf-8"): n for word, n in counts.items()}


def _learn_at_least(counts, vocab_size, reserved_tokens, min_frequency):
    """The learner's vocabulary at the highest frequency threshold (>= min_frequency)
    that gives at least `vocab_size` tokens, or at `min_frequency` when none does."""
    # Imported here: the learner module is slow to import and only needed here.
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    params = learner.Params(
        upper_thresh=None, lower_thresh=min_frequency, num_iterations=4,
        max_input_tokens=int(5e6), max_token_length=50, max_unique_chars=1000,
        vocab_size=vocab_size, slack_ratio=_SLACK, include_joiner_token=True, joiner=JOINER,
        reserved_tokens=reserved_tokens)
    word_counts = list(counts.items())
    upper, lower = learner.get_search_threshs(word_counts, None, min_frequency)
    words = learner.get_input_words(word_counts, reserved_tokens, params.max_token_length)
    allowed = learner.get_allowed_chars(words, params.max_unique_chars)
    words = learner.filter_input_words(words, allowed, params.max_input_tokens)
    # Each pass runs the learner over every distinct word: the slow part on a large corpus.
    passes = Progress("learning WordPiece", unit="passes")

    def learn(threshold):
        vocabulary = learner.learn_with_thresh(words, threshold, params)
        passes.advance(detail=f"last: frequency >= {threshold} gave {len(vocabulary):,} tokens")
        return vocabulary

    with passes:
        return _search_threshold(learn, lower, upper, vocab_size)


def _search_threshold(learn, lower, upper, vocab_size):
    """`_learn_at_least`'s binary search; `learn(threshold)` runs one learning pass."""
    best = learn(lower)
    if len(best) <= vocab_size:
        return best  # the most the text gives
    # Vocabulary size falls as the threshold rises; best: the largest threshold seen so far
    # whose vocabulary is not too small.
    low, high = lower + 1, max(upper, lower + 1)
    while low <= high and len(best) > vocab_size * (1 + _SLACK):
        threshold = (low + high) // 2
        vocabulary = learn(threshold)
        if len(vocabulary) >= vocab_size:
            best, low = vocabulary, threshold + 1
        else:
            high = threshold - 1
    return best


def _exact_size(learned, required, vocab_size):
    """`learned` cut or filled to `vocab_size`: `required` tokens kept, the rarest
    others dropped (the learner lists them by falling count), placeholders added."""
    required_set = set(required)
    budget = vocab_size - len(required)
    optional = [token for token in learned if token not in required_set][:budget]
    kept = set(optional) | required_set
    tokens = [token for token in dict.fromkeys(learned) if token in kept]
    present = set(tokens)
    tokens += [token for token in required if token not in present]
    present = set(tokens)
    index = 0
    while len(tokens) < vocab_size:
        placeholder = UNUSED_TOKEN.format(index)
        if placeholder not in present:
            tokens.append(placeholder)
        index += 1
    return tokens


def normalize_uncased(texts):
    """Uncased BERT normalisation: per-character lower case, NFD, no accents.

    Characters are lower-cased one by one (no word-final sigma rule, "ß" and
    ligatures kept), then combining marks (Unicode category Mn) are removed
    after NFD, which is what `BertTokenizerFast` does for uncased
    vocabularies.

    The text is lower-cased whole once every capital sigma is a small one:
    the final-sigma rule is the only one of the root locale that looks at
    the characters around, so this is the lower case of each character
    (a test checks every code point; U+0000, which would end the text there,
    is dropped first, as lower-casing it alone does). Splitting into
    characters and joining them back (`tf.strings.reduce_join`) took memory
    in [texts × the longest text]: 4 GB for 4,000 words beside a
    100,000-character one.

    Examples:
    >>> normalize_uncased(tf.constant(["Café Straße ΟΔΟΣ"])).numpy()[0].decode()
    'cafe straße οδοσ'
    """
    texts = tf.strings.regex_replace(tf.strings.regex_replace(texts, "\\x00", ""),
                                     "\u03a3", "\u03c3")
    lowered = tf.strings.lower(texts, encoding="utf-8")
    decomposed = tf_text.normalize_utf8(lowered, "NFD")
    return tf.strings.regex_replace(decomposed, r"\p{Mn}", "")


@register_tokenizer
class WordPieceTokenizer(SubwordTokenizer):
    """BERT's basic + WordPiece tokenizer over a fixed vocabulary (a `SubwordTokenizer`).

    `lowercase=True` lower-cases, NFD-normalises and strips accents, as BERT's
    uncased checkpoints expect ("Café" → "cafe"); punctuation and CJK
    characters are split off; out-of-vocabulary words become `[UNK]`. Texts
    are packed as `[CLS] a [SEP] (b [SEP])`.

    Args:
        vocabulary: a list of tokens or the path of a `vocab.txt`.
        lowercase: lower-case and strip accents.

    Examples:
    >>> tokenizer = WordPieceTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "is", "open", "##s"])
    >>> tokenizer.tokenize(["Café opens"]).to_list()
    [[[5], [7, 8]]]
    >>> tokenizer.encode("Café opens", "is")
    [2, 5, 7, 8, 3, 6, 3]
    """

    kind = "wordpiece"
    ASSET_FILE = "vocabulary.txt"

    def __init__(self, vocabulary, lowercase=True):
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = read_vocabulary(vocabulary)
        super().__init__(vocabulary, pad=PAD, unk=UNK, cls=CLS, sep=SEP, mask=MASK,
                         lowercase=lowercase)
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

    def tokenize(self, texts):
        """[batch] strings → int32 RaggedTensor [batch, words, wordpieces].

        Special tokens typed in the text ("[MASK]") are their own ids, as in
        transformers. The rest is cleaned first (`tasks.text.text_cleaning.clean_texts`:
        control and format characters removed, as BERT does) and every Unicode space
        separator (U+3000 ideographic space, no-break space, ...) is a space.
        """
        return self.tokenize_around_special_tokens(texts, self._tokenize_text)

    def _tokenize_text(self, texts):
        texts = tf.strings.regex_replace(clean_texts(texts), r"\p{Zs}", " ")
        if self.lowercase:
            texts = normalize_uncased(texts)
        return tf.cast(self._tokenizer.tokenize(texts), tf.int32)

    def word_pieces(self, words):
        """[N] words → int32 RaggedTensor [N, (pieces)]; a word with no piece (only a
        character the clean-up removes) is `[UNK]`, so every word has a token.

        >>> WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s"]).word_pieces(
        ...     ["opens", "\\x07"]).to_list()
        [[4, 5], [1]]
        """
        return super().word_pieces(words)

    def word_start_pieces(self):
        """Every piece but the `##` ones (a bare "##" is a word).

        >>> WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##able", "##"]
        ...                    ).word_start_pieces().tolist()
        [True, True, True, True, True, False, True]
        """
        return np.array([not (token.startswith(JOINER) and len(token) > len(JOINER))
                         for token in self.vocabulary], bool)

    def piece_text(self, token):
        """>>> WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"]).piece_text("##able")
        'able'
        """
        return token[len(JOINER):] if token.startswith(JOINER) and len(token) > len(JOINER) \
            else token

    def get_config(self):
        return {"lowercase": self.lowercase}

    def save_assets(self, directory):
        write_vocabulary(self.vocabulary, os.path.join(directory, self.ASSET_FILE))

    @classmethod
    def from_assets(cls, config, directory):
        return cls(os.path.join(directory, cls.ASSET_FILE), lowercase=config.get("lowercase", True))
