import os

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.text.text_readers import read_examples
from nlpzoo.tasks.text.corpus import read_corpus
from nlpzoo.tasks.text.tokenizer import (
    RESERVED_TOKENS,
    WordPieceTokenizer,
    build_vocabulary,
    normalize_uncased,
    read_vocabulary,
    write_vocabulary,
)
from tests.helpers.paths import TREC, shared_data_path

VOCAB = list(RESERVED_TOKENS) + ["the", "cafe", "is", "open", "##s", "naive", ",", "!", "un", "##known"]


def test_lowercase_strips_accents_and_splits_punctuation():
    tokenizer = WordPieceTokenizer(VOCAB)
    ids = tokenizer.tokenize(["Café opens, NAÏVE!"]).to_list()
    index = {t: i for i, t in enumerate(VOCAB)}
    assert ids == [[[index["cafe"]], [index["open"], index["##s"]], [index[","]],
                    [index["naive"]], [index["!"]]]]


def test_unknown_words_become_unk():
    tokenizer = WordPieceTokenizer(VOCAB)
    assert tokenizer.tokenize_flat(["zebra unknown"]).to_list() == [
        [tokenizer.unk_id, VOCAB.index("un"), VOCAB.index("##known")]]


def test_pack_pair_truncates_longest_first():
    tokenizer = WordPieceTokenizer(VOCAB)
    a = tokenizer.tokenize_flat(["the cafe is open the cafe is open"])
    b = tokenizer.tokenize_flat(["open"])
    token_ids, segment_ids = tokenizer.pack([a, b], max_length=8)
    ids = token_ids.to_list()[0]
    # 8 = [CLS] + 4 of a + [SEP] + 1 of b + [SEP]: only the longer segment was cut.
    assert ids == [tokenizer.cls_id] + [VOCAB.index(w) for w in ("the", "cafe", "is", "open")] + [
        tokenizer.sep_id, VOCAB.index("open"), tokenizer.sep_id]
    assert segment_ids.to_list()[0] == [0, 0, 0, 0, 0, 0, 1, 1]


def test_pack_single_segment():
    tokenizer = WordPieceTokenizer(VOCAB)
    a = tokenizer.tokenize_flat(["the cafe is open", "open"])
    token_ids, segment_ids = tokenizer.pack([a], max_length=4)
    assert token_ids.to_list() == [[2, 5, 6, 3], [2, 8, 3]]
    assert segment_ids.to_list() == [[0] * 4, [0] * 3]


def test_vocabulary_file_round_trip_and_errors(tmp_path):
    path = str(tmp_path / "vocab.txt")
    write_vocabulary(VOCAB, path)
    assert read_vocabulary(path) == VOCAB
    (tmp_path / "bad.txt").write_text("hello\nworld\n")
    with pytest.raises(ValueError, match="bad.txt.*special tokens"):
        read_vocabulary(str(tmp_path / "bad.txt"))
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        read_vocabulary(str(tmp_path / "missing.txt"))


def test_normalize_uncased_lowers_each_character_and_is_linear_in_the_longest_text():
    import sys

    import tensorflow_text as tf_text

    def one_by_one(texts):  # the definition: each character lower-cased alone
        characters = tf.strings.unicode_split(texts, "UTF-8")
        lowered = tf.strings.reduce_join(tf.strings.lower(characters, encoding="utf-8"), -1)
        return tf.strings.regex_replace(tf_text.normalize_utf8(lowered, "NFD"), r"\p{Mn}", "")

    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    texts = [every[k:k + 1000] for k in range(0, len(every), 1000)]
    texts += ["ΟΔΟΣ ΣΑΣ", "aΣ", "Σ", "ς Σ σ", "İstanbul ǅ ﬁ ẞ", "a\x00B"]
    assert normalize_uncased(tf.constant(texts)).numpy().tolist() == \
        one_by_one(tf.constant(texts)).numpy().tolist()
    # 4,000 words beside one of 1,000,000 characters: no [texts x longest] tensor.
    many = tf.constant(["Abc"] * 4000 + ["Xy" * 500_000])
    assert normalize_uncased(many)[-1].numpy() == b"xy" * 500_000


def test_build_vocabulary_covers_frequent_words():
    texts = ["the cat sat on the mat", "the dog sat on the log"] * 20
    tokens = build_vocabulary(texts, vocab_size=200, min_frequency=2)
    assert tokens[:5] == list(RESERVED_TOKENS)
    for word in ("the", "sat", "on"):
        assert word in tokens
    tokenizer = WordPieceTokenizer(tokens)
    ids = tokenizer.tokenize_flat(["the cat sat"]).to_list()[0]
    assert tokenizer.unk_id not in ids


def test_tokenizer_runs_inside_tf_function():
    tokenizer = WordPieceTokenizer(VOCAB)

    @tf.function
    def f(texts):
        return tokenizer.tokenize_flat(texts).to_tensor()

    np.testing.assert_array_equal(f(tf.constant(["the cafe"])).numpy(), [[5, 6]])


def _check_exact_vocabulary(texts, vocab_size):
    tokens = build_vocabulary(texts, vocab_size)
    assert len(tokens) == vocab_size and len(set(tokens)) == vocab_size
    assert tokens[:5] == list(RESERVED_TOKENS)
    # Every character of the text is covered alone and as a continuation: no [UNK] at all.
    tokenizer = WordPieceTokenizer(tokens)
    ids = tokenizer.tokenize_flat(texts).flat_values.numpy()
    assert tokenizer.unk_id not in ids
    placeholders = [token for token in tokens if token.startswith("[unused")]
    assert placeholders == [f"[unused{i}]" for i in range(len(placeholders))]
    if placeholders:  # only when the text gives no more pieces: they come last
        assert tokens[-len(placeholders):] == placeholders
    return tokens


@pytest.fixture(scope="module")
def trec_texts():
    return [example.text for example in read_examples(os.path.join(TREC, "train.label"))]


@pytest.mark.parametrize("vocab_size", [150, 400, 1500])
def test_build_vocabulary_gives_exactly_the_size_asked_for(trec_texts, vocab_size):
    _check_exact_vocabulary(trec_texts, vocab_size)


@pytest.mark.slow
@pytest.mark.parametrize("vocab_size", [1000, 2000, 8000])
def test_build_vocabulary_is_exact_on_wikitext(vocab_size):
    path = shared_data_path("wikitext2", "valid.txt")
    _check_exact_vocabulary([line for document in read_corpus(path) for line in document],
                            vocab_size)


def test_build_vocabulary_drops_rarest_pieces_and_fills_small_texts():
    texts = ["the cat sat on the mat", "the dog sat on the log"] * 20
    large = build_vocabulary(texts, vocab_size=200)
    learned = [token for token in large if not token.startswith("[unused")]
    assert len(large) == 200 and large[len(learned):] == [
        f"[unused{i}]" for i in range(200 - len(learned))]
    minimum = 5 + 2 * len(set("thecatsonmdgl"))
    smallest = build_vocabulary(texts, vocab_size=minimum)
    assert len(smallest) == minimum and "the" not in smallest
    assert set(smallest) == set(RESERVED_TOKENS) | set("thecasonmdgl") | {
        "##" + c for c in "thecasonmdgl"}
    one_more = build_vocabulary(texts, vocab_size=minimum + 1)
    # The one piece kept is a learned piece of several characters.
    [extra] = set(one_more) - set(smallest)
    assert len(extra.lstrip("#")) > 1 and extra.lstrip("#") in " ".join(texts)
    with pytest.raises(ValueError, match=f"below the minimum of {minimum} for this text"):
        build_vocabulary(texts, vocab_size=minimum - 1)


def test_build_vocabulary_learns_from_cleaned_text():
    texts = ["Black\u200bburn visited\x07 London\ufeff"] * 10
    tokens = build_vocabulary(texts, vocab_size=60)
    assert not any(c in token for token in tokens for c in "\u200b\x07\ufeff")
    assert "blackburn" in tokens
    extra = build_vocabulary(texts, vocab_size=60, reserved_tokens=[*RESERVED_TOKENS, "[X]"])
    assert extra[:6] == [*RESERVED_TOKENS, "[X]"] and len(extra) == 60


def _hf_longest_first(n1, n2, budget):
    """Hugging Face `tokenizers`' longest-first truncation of a pair (`truncate_encodings`,
    checked against transformers 5.24 on every pair of lengths 1..11 and budgets 2..13)."""
    if n1 + n2 <= budget:
        return n1, n2
    swap = n1 > n2
    short, long = (n2, n1) if swap else (n1, n2)
    long = short if short > budget else max(short, budget - short)
    if short + long > budget:
        short, long = budget // 2, budget // 2 + budget % 2
    kept = (long, short) if swap else (short, long)
    return min(kept[0], n1), min(kept[1], n2)


@pytest.mark.parametrize("segments", [1, 2])
def test_pack_equals_tensorflow_text_trimmer_and_combine_segments(segments):
    """The flat-op packing against the reference it replaced (tensorflow_text's trimmers;
    for pairs, Hugging Face's longest-first, which gives an odd token to the longer
    segment): every pair of lengths 0..9 (ties included) with budgets that cut one, both
    or neither segment."""
    import tensorflow_text as tf_text

    tokenizer = WordPieceTokenizer(VOCAB)
    lengths = [(a, b) for a in range(10) for b in range(10)]
    columns = [tf.ragged.constant([list(range(10, 10 + pair[k])) for pair in lengths], tf.int32,
                                  ragged_rank=1) for k in range(segments)]
    for max_length in (3 + segments, 6, 9, 25):
        budget = max_length - 1 - segments
        if segments == 1:
            trimmed = tf_text.WaterfallTrimmer(budget, axis=-1).trim(columns)
        else:
            kept = [_hf_longest_first(a, b, budget) for a, b in lengths]
            trimmed = [tf.ragged.constant([list(range(10, 10 + keep[k])) for keep in kept],
                                          tf.int32, ragged_rank=1) for k in range(2)]
        expected = tf_text.combine_segments(trimmed, tokenizer.cls_id, tokenizer.sep_id)
        packed = tf.function(lambda *c: tokenizer.pack(list(c), max_length),
                             autograph=False)(*columns)
        for ours, theirs in zip(packed, expected):
            assert ours.dtype == tf.int32
            assert ours.to_list() == tf.cast(theirs, tf.int32).to_list()
