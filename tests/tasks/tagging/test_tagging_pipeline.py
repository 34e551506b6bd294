import numpy as np
import pytest

from nlpzoo.tasks.tagging import TaggedSentence
from nlpzoo.tasks.tagging.pipeline import continuation_ids, make_dataset
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer

VOCAB = list(RESERVED_TOKENS) + ["john", "lives", "in", "new", "york", "##s", "."]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def _batches(sentences, **options):
    tokenizer = WordPieceTokenizer(VOCAB)
    dataset = make_dataset(sentences, tokenizer, LABELS, batch_size=8, **options)
    return [({k: v.numpy() for k, v in f.items()}, l.numpy()) for f, l in dataset]


def test_first_subword_alignment():
    sentence = TaggedSentence(("John", "lives", "in", "New", "Yorks", "."),
                              ("B-PER", "O", "O", "B-LOC", "I-LOC", "O"))
    [(features, labels)] = _batches([sentence], max_seq_length=16)
    ids = features["token_ids"][0]
    #             [CLS] john lives in new york ##s . [SEP]
    assert list(ids[:9]) == [2, 5, 6, 7, 8, 9, 10, 11, 3]
    assert ids.shape == (16,)
    starts = features["word_starts"][0]
    assert list(starts[:6]) == [1, 2, 3, 4, 5, 7]
    assert list(features["word_mask"][0]) == [1] * 6 + [0] * 10
    assert list(labels[0][:7]) == [3, 0, 0, 1, 2, 0, -1]
    # Each word's first subword is the word's own first piece.
    for start, word in zip(starts[:6], ["john", "lives", "in", "new", "york", "."]):
        assert VOCAB[ids[start]] == word


def test_label_all_subwords_continues_b_as_i():
    sentence = TaggedSentence(("Yorks", "lives"), ("B-LOC", "O"))
    [(features, labels)] = _batches([sentence], max_seq_length=16, training=True,
                                    label_all_subwords=True)
    assert list(features["word_starts"][0][:3]) == [1, 2, 3]
    assert list(labels[0][:4]) == [1, 2, 0, -1]
    assert continuation_ids(LABELS).tolist() == [0, 2, 2, 4, 4]


def test_truncation_keeps_whole_words_only():
    sentence = TaggedSentence(("New", "Yorks", "."), ("B-LOC", "I-LOC", "O"))
    # budget 3 subwords: "new york ##s" fits, "." does not.
    [(features, labels)] = _batches([sentence], max_seq_length=5)
    assert features["word_mask"][0].sum() == 2
    assert list(labels[0][:3]) == [1, 2, -1]


def test_word_without_pieces_becomes_unk():
    sentence = TaggedSentence(("\u200b", "John"), ("O", "B-PER"))
    [(features, labels)] = _batches([sentence], max_seq_length=16)
    assert list(features["token_ids"][0][:4]) == [2, 1, 5, 3]
    assert list(features["word_starts"][0][:2]) == [1, 2]


def test_unknown_tag_names_file_and_line():
    sentence = TaggedSentence(("John",), ("B-ORG",), source="dev.txt", line=12)
    with pytest.raises(ValueError, match=r"dev.txt:12: tag 'B-ORG' was not seen in training"):
        _batches([sentence])


def test_order_is_kept_and_buckets_are_static():
    sentences = [TaggedSentence(("john",) * n, ("B-PER",) + ("I-PER",) * (n - 1))
                 for n in (3, 40, 5, 20)]
    batches = _batches(sentences, max_seq_length=64)
    [(features, labels)] = batches
    assert features["token_ids"].shape[1] == 64
    np.testing.assert_array_equal(features["word_mask"].sum(1), [3, 40, 5, 20])
