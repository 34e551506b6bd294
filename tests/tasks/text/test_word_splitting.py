"""The words of a raw text: BERT's basic tokenizer by hand-checked cases, a character loop
as the definition, offsets into the text as given, and the graph equal to Python."""

import os
import sys
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.text.text_cleaning import (
    PYTHON_WHITESPACE,
    is_removed_character,
    removed_pattern,
)
from nlpzoo.tasks.text.word_splitting import (
    alone_pattern,
    is_word_alone,
    split_texts,
    split_texts_with_offsets,
    split_words,
)
from nlpzoo.tasks.words.conll import read_column_file
from tests.helpers.paths import CONLL


def _words(text):
    return [word for word, _, _ in split_words(text)]


# What transformers' BertTokenizer.basic_tokenizer (do_lower_case=False) gives, worked out
# by hand from its rules: clean-up, spaces around CJK ideographs, whitespace split, then
# punctuation split.
BERT_CASES = [
    ("He flew to Paris, France, on Monday.",
     ["He", "flew", "to", "Paris", ",", "France", ",", "on", "Monday", "."]),
    ("U.S.-based don't", ["U", ".", "S", ".", "-", "based", "don", "'", "t"]),
    ("$3.50, 10,000 (approx.)", ["$", "3", ".", "50", ",", "10", ",", "000", "(", "approx",
                                 ".", ")"]),
    ("x^2+y=z <b>|~`", ["x", "^", "2", "+", "y", "=", "z", "<", "b", ">", "|", "~", "`"]),
    ("mail@example.com #1", ["mail", "@", "example", ".", "com", "#", "1"]),
    ("¿Qué?¡Sí! «Bonjour» — fin…", ["¿", "Qué", "?", "¡", "Sí", "!", "«", "Bonjour", "»", "—",
                                     "fin", "…"]),
    ("中文字符", ["中", "文", "字", "符"]),
    ("日本語のテキスト。東京", ["日", "本", "語", "のテキスト", "。", "東", "京"]),
    ("한국어 텍스트입니다.", ["한국어", "텍스트입니다", "."]),
    ("naïve café Zürich e\u0301", ["naïve", "café", "Zürich", "e\u0301"]),
    ("I ❤\ufe0f NY 🙂! 👍🏽", ["I", "❤\ufe0f", "NY", "🙂", "!", "👍🏽"]),
    ("tab\tand\u00a0nbsp\u3000ideographic", ["tab", "and", "nbsp", "ideographic"]),
    ("Ba\u00adnk\x07 of\u200b Rome\ufeff", ["Bank", "of", "Rome"]),  # removed, not split
    ("£5 ± 2° C", ["£5", "±", "2°", "C"]),  # symbols (S*) beyond ASCII are no punctuation
    ("\U00020000\U0002F800x", ["\U00020000", "\U0002F800", "x"]),  # extensions, compatibility
    ("", []),
    (" \t\u00a0 ", []),
    ("\x07\u200b", []),
]


@pytest.mark.parametrize("text, expected", BERT_CASES)
def test_words_are_those_of_bert_basic_tokenizer(text, expected):
    assert _words(text) == expected


def test_the_issue_sentence_gives_paris_at_11_to_16():
    text = "He flew to Paris, France, on Monday."
    words = split_words(text)
    assert words[3] == ("Paris", 11, 16) and words[5] == ("France", 18, 24)
    assert words[-1] == (".", 35, 36)


def _one_by_one(text):
    """The definition, one character at a time (slow on a long line)."""
    words, kept = [], []

    def close():
        if kept:
            words.append(("".join(c for _, c in kept), kept[0][0], kept[-1][0] + 1))
        kept.clear()

    for index, character in enumerate(text):
        if character.isspace():
            close()
        elif is_removed_character(character):
            continue
        elif unicodedata.category(character).startswith("P") or character in "$+<=>^`|~" \
                or 0x4E00 <= ord(character) <= 0x9FFF:
            close()
            words.append((character, index, index + 1))
        else:
            kept.append((index, character))
    close()
    return words


PIECES = ["EU", "Café", "1996-08-22", "ß", "e\u0301", "x", "Paris,", "U.S.", "(a)", "--", "...",
          "\u4e2d\u6587", "\u3042\u30a2", "\ud55c", "🙂", "👍🏽", "\u00ad", "\x07", "\u200b",
          "\ufeff", "\ufffd", "\x00", "\x1c", " ", "\t", "\u00a0", "\u3000", "\u2028", "\x85",
          "\u3002", "\u00bf", "$", "«", "—", "'s", "\\"]


def _random_texts(seed, count):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(PIECES, rng.integers(0, 15))) for _ in range(count)]


def test_split_words_is_the_character_loop():
    for text in _random_texts(0, 1000):
        assert split_words(text) == _one_by_one(text), repr(text)


def test_offsets_index_the_text_as_given():
    for text in _random_texts(1, 1000):
        for word, start, end in split_words(text):
            if any(is_removed_character(c) for c in text[start:end]):
                # a removed character inside a word: cleaned, the offsets span it
                assert "".join(c for c in text[start:end] if not is_removed_character(c)) == word
            else:
                assert text[start:end] == word, repr(text)


def test_is_word_alone_is_bert_punctuation_and_cjk():
    ascii_symbols = [chr(c) for c in range(0x21, 0x7F) if not chr(c).isalnum()]
    assert all(is_word_alone(c) for c in ascii_symbols)  # all 32 ASCII symbols
    assert not any(is_word_alone(c) for c in "aZ09é\u3042\uac00£°±€™🙂")
    assert all(is_word_alone(c) for c in "\u4e00\u9fff\u3400\uf900\U0002a6df\u3001\u300c")


def test_whitespace_is_python_str_isspace():
    assert set(PYTHON_WHITESPACE) == {chr(c) for c in range(0x110000) if chr(c).isspace()}
    rng = np.random.default_rng(2)
    pieces = ["EU", "Café", "ß", "x"] + list(PYTHON_WHITESPACE)
    texts = ["".join(rng.choice(pieces, 12)) for _ in range(50)]
    words = split_texts(tf.constant(texts)).to_list()
    assert [[w.decode() for w in row] for row in words] == [text.split() for text in texts]


@pytest.mark.parametrize("pattern, python", [(alone_pattern, is_word_alone),
                                             (removed_pattern, is_removed_character)])
def test_the_graph_patterns_are_the_python_tests_on_every_code_point(pattern, python):
    # RE2's \p{P} and \p{Cf} follow another Unicode version than Python's unicodedata
    # (U+11B00-11B09, U+13439-1343F differed): the patterns list Python's code points.
    characters = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    graph = tf.strings.regex_full_match(tf.constant(characters), pattern()).numpy()
    expected = np.array([python(c) for c in characters])
    different = [hex(ord(c)) for c, g, p in zip(characters, graph, expected) if g != p]
    assert different == []


def _conll_texts():
    """CoNLL sample sentences as raw text: joined with spaces, and detokenized (no space
    before `,` `.` `)` `'s`, none after `(`), so punctuation sticks to words."""
    texts = []
    for sentence in read_column_file(os.path.join(CONLL, "train.txt")):
        joined = " ".join(sentence.words)
        texts.append(joined)
        for before, after in ((" ,", ","), (" .", "."), (" )", ")"), ("( ", "("), (" 's", "'s"),
                              (" :", ":")):
            joined = joined.replace(before, after)
        texts.append(joined)
    return texts


def _graph_equals_python(texts):
    words, starts, ends = split_texts_with_offsets(tf.constant(texts))
    for text, row_words, row_starts, row_ends in zip(texts, words.to_list(), starts.to_list(),
                                                     ends.to_list()):
        served = [(w.decode(), s, e) for w, s, e in zip(row_words, row_starts, row_ends)]
        assert served == split_words(text), repr(text)


def test_graph_equals_python_on_a_varied_corpus():
    texts = _conll_texts() + _random_texts(3, 1000) + [text for text, _ in BERT_CASES] + [
        "", " ", "   \t\n", "\u3000\u00a0", "!!!???...", "«»", "(((a)))", "a" * 500,
        "Zürich\ufeff  \U0001F600 peter\u00a0\u00a0Black\u00adburn\x07  Caf\u0065\u0301",
        " ".join(["word,"] * 1000)]
    assert len(texts) > 1000
    _graph_equals_python(texts)
    _graph_equals_python([""])  # a batch of one empty text
    _graph_equals_python(["He flew to Paris, France, on Monday."])


def test_graph_reads_invalid_utf8_as_replacement_characters():
    words, starts, ends = split_texts_with_offsets(tf.constant([b"a\xffb, c\xe9", b"\xff"]))
    # U+FFFD is removed: "a\ufffdb" is the word "ab" (characters 0-3), "c\ufffd" is "c".
    assert words.to_list() == [[b"ab", b",", b"c"], []]
    assert starts.to_list() == [[0, 3, 5], []] and ends.to_list() == [[3, 4, 6], []]
    assert split_words("a\ufffdb, c\ufffd") == [("ab", 0, 3), (",", 3, 4), ("c", 5, 6)]


def test_split_texts_works_inside_a_tf_function_on_any_batch():
    function = tf.function(split_texts_with_offsets,
                           input_signature=[tf.TensorSpec([None], tf.string)])
    for texts in (["Paris, France.", "", "東京"], [], ["x"]):
        words, starts, ends = function(tf.constant(texts, tf.string))
        assert [[w.decode() for w in row] for row in words.to_list()] == [_words(t) for t in texts]
        assert starts.to_list() == [[s for _, s, _ in split_words(t)] for t in texts]
        assert ends.to_list() == [[e for _, _, e in split_words(t)] for t in texts]
