import numpy as np
import pytest

from nlpzoo.tasks.text.batching import GROUPING_STEP
from nlpzoo.tasks.classification import ClassificationExample, make_dataset
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer

VOCAB = list(RESERVED_TOKENS) + "a b c d e f g h".split()


def _examples(lengths, pair=False):
    return [ClassificationExample(text=" ".join("abcdefgh"[i % 8] for i in range(n)),
                                  text_pair="h g" if pair else None, label=str(n % 2))
            for n in lengths]


def test_eval_batches_keep_order_and_pad_to_buckets():
    tokenizer = WordPieceTokenizer(VOCAB)
    examples = _examples([3, 20, 5, 40, 2])
    dataset = make_dataset(examples, tokenizer, ["0", "1"], max_seq_length=48, batch_size=2)
    batches = list(dataset)
    assert [b[0]["token_ids"].shape[1] for b in batches] == [32, 48, 16]
    labels = np.concatenate([b[1].numpy() for b in batches])
    np.testing.assert_array_equal(labels, [1, 0, 1, 0, 0])
    first = {k: v.numpy()[0] for k, v in batches[0][0].items()}
    assert list(first["token_ids"][:6]) == [2, 5, 6, 7, 3, 0]  # [CLS] a b c [SEP] [PAD]
    assert first["padding_mask"].sum() == 5
    assert dataset.cardinality().numpy() == 3


def test_training_batches_have_bucket_lengths_only():
    tokenizer = WordPieceTokenizer(VOCAB)
    examples = _examples(list(range(1, 60)) * 3)
    dataset = make_dataset(examples, tokenizer, ["0", "1"], max_seq_length=64,
                           batch_size=8, training=True, seed=0)
    seen, mixed, groups = 0, 0, {}
    for features, labels in dataset:
        length = features["token_ids"].shape[1]
        assert length in (16, 32, 64)
        real = features["padding_mask"].numpy().sum(1)
        assert real.max() <= length and (length == 16 or real.max() > length // 2)
        # Grouped in steps of 8 tokens: lengths 1-8, 9-16, ... share a batch only in the
        # pool of the groups' remainders.
        mixed += len(set((real - 1) // GROUPING_STEP)) > 1
        for group in (real - 1) // GROUPING_STEP:
            groups[group] = groups.get(group, 0) + 1
        seen += len(labels)
    assert seen == len(examples)
    assert mixed <= -(-sum(size % 8 for size in groups.values()) // 8)


def test_pairs_get_segment_ids():
    tokenizer = WordPieceTokenizer(VOCAB)
    dataset = make_dataset(_examples([2], pair=True), tokenizer, ["0", "1"], batch_size=1)
    features, _ = next(iter(dataset))
    assert list(features["token_ids"].numpy()[0, :7]) == [2, 5, 6, 3, 12, 11, 3]
    assert list(features["segment_ids"].numpy()[0, :7]) == [0, 0, 0, 0, 1, 1, 1]


def test_unseen_label_names_the_line():
    tokenizer = WordPieceTokenizer(VOCAB)
    examples = [ClassificationExample("a", "X", source="eval.label", line=7)]
    with pytest.raises(ValueError, match=r"eval.label:7: label 'X' was not seen in training"):
        make_dataset(examples, tokenizer, ["A", "B"])


def test_mixed_single_and_pair_is_an_error():
    tokenizer = WordPieceTokenizer(VOCAB)
    examples = _examples([2]) + _examples([3], pair=True)
    with pytest.raises(ValueError, match="mixes single texts and text pairs"):
        make_dataset(examples, tokenizer, ["0", "1"])
