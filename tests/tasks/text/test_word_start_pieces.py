"""`SubwordTokenizer.word_start_pieces`, `word_start_context` and `piece_text` for every kind
of tokenizer, checked against each tokenizer's own segmentation of real text (which the
tokenizer tests check against transformers): inside a word only continuation pieces
follow its first, and a word after whitespace begins with a word-start piece."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.pretraining.corpus_datasets import continuation_pieces
from nlpzoo.tasks.text.masking import word_start_flags
from nlpzoo.zoo.checkpoints import load_tokenizer
from tests.helpers.paths import ROOT

TOKENIZERS = {
    "wordpiece": "bert_uncased_wordpiece",
    "byte_pair": "roberta_bpe/legacy",
    "sentencepiece_xlmr": "xlm_roberta_spm/legacy",
    "sentencepiece_albert": "albert_spm/legacy",
}
TEXTS = [
    "The capital of France is Paris, and unbelievably (so) it is big.",
    "She was unable to read the books' titles: 1,234 pages!",
    "Naïve café owners weren't reading; they're writing.",
]


@pytest.fixture(scope="module", params=sorted(TOKENIZERS))
def tokenizer(request):
    return load_tokenizer(os.path.join(ROOT, "tests", "fixtures", "tokenizers",
                                       TOKENIZERS[request.param]))


def test_flags_are_the_markers_of_each_kind(tokenizer):
    starts = tokenizer.word_start_pieces()
    assert starts.dtype == bool and starts.shape == (tokenizer.vocabulary_size,)
    marker = {"wordpiece": None, "byte_pair": "\u0120", "sentencepiece": "\u2581"}[tokenizer.kind]
    reserved = set(tokenizer.special_tokens.values()) | set(tokenizer.split_tokens)
    for token, flag in zip(tokenizer.vocabulary, starts):
        if token in reserved:
            assert flag, token
        elif marker is None:
            assert flag == (not (token.startswith("##") and len(token) > 2)), token
        else:
            assert flag == token.startswith(marker), token
    np.testing.assert_array_equal(continuation_pieces(tokenizer), ~starts)


def test_flags_agree_with_the_tokenizers_own_words(tokenizer):
    starts = tokenizer.word_start_pieces()
    # The unknown token may stand inside a SentencePiece word; as a special token it is
    # never a continuation.
    inner = starts.copy()
    inner[tokenizer.unk_id] = False
    words = tokenizer.tokenize(tf.constant(TEXTS))
    checked = 0
    for text, text_words in zip(TEXTS, words.to_list()):
        for pieces in text_words:
            # Every piece after a word's first continues it.
            assert not any(inner[piece] for piece in pieces[1:]), (text, pieces)
            checked += len(pieces) - 1
        flat = [piece for pieces in text_words for piece in pieces]
        first = word_start_flags(tf.ragged.constant([text_words])).to_list()[0]
        # The pieces flagged as word starts are first pieces of the tokenizer's words.
        assert all(first[i] for i, piece in enumerate(flat) if inner[piece]), text
    assert checked > 5


def test_whitespace_context_means_a_word_start_piece(tokenizer):
    """After whitespace each scheme's next word starts with a word-start piece."""
    starts = tokenizer.word_start_pieces()
    for text in TEXTS:
        for match in re.finditer(r"(?<= )\w+", text):
            before, word = text[:match.start()], match.group()
            pieces = tokenizer.tokenize_flat(tf.constant([before + word])).to_list()[0]
            alone = tokenizer.tokenize_flat(tf.constant([before])).to_list()[0]
            added = pieces[len(alone):] if pieces[:len(alone)] == alone else None
            if added:
                assert starts[added[0]], (before, word, added)
            assert re.fullmatch(r"(?s).*\s", before)  # what every kind's context accepts


def test_piece_text_drops_the_marks(tokenizer):
    words = tokenizer.word_pieces(tf.constant(["reading", "paris"])).to_list()
    texts = ["".join(tokenizer.piece_text(tokenizer.vocabulary[i]) for i in pieces)
             for pieces in words]
    assert texts == ["reading", "paris"]


# The text before a mask → whether the mask starts a word, by kind: WordPiece splits at
# punctuation; byte-level BPE marks a word by the space before it (none at the start of a
# text without add_prefix_space); SentencePiece marks every word after whitespace and the first.
CONTEXTS = ["", "is ", "un", "(", "is\n"]
EXPECTED_CONTEXTS = {"wordpiece": [True, True, False, True, True],
                     "byte_pair": [False, True, False, False, True],
                     "sentencepiece": [True, True, False, False, True]}


def test_word_start_context(tokenizer):
    matches = tf.strings.regex_full_match(tf.constant(CONTEXTS), tokenizer.word_start_context)
    assert matches.numpy().tolist() == EXPECTED_CONTEXTS[tokenizer.kind]
