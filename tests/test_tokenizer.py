import numpy as np
import pytest
import tensorflow as tf

from tasks.tokenizer import (
    RESERVED_TOKENS,
    WordPieceTokenizer,
    build_vocabulary,
    read_vocabulary,
    write_vocabulary,
)

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
