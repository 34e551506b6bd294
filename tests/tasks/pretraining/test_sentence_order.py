"""Sentence-order prediction (ALBERT): the pair maker, its packing and pipeline, the SOP head."""

import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.pretraining import make_sop_pairs
from nlpzoo.tasks.pretraining.corpus_datasets import masked_datasets, pack_corpus
from nlpzoo.tasks.pretraining.model import Pretrainer
from nlpzoo.tasks.pretraining.packing import pack_sentence_pairs
from nlpzoo.tasks.pretraining.pipeline import make_pretraining_dataset
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from nlpzoo.zoo.checkpoints.heads import head_tensors, load_pretraining_heads

CLS, SEP, PAD = 2, 3, 0


def _hand_made_corpus():
    """Documents of segments; every segment's ids are unique in the corpus, so a segment
    names its document and position. One document has one segment, one is empty."""
    lengths = [[2, 1, 3, 2], [1], [3, 3], [], [1, 2, 1, 2, 3]]
    documents, next_id = [], 10
    for document in lengths:
        segments = []
        for length in document:
            segments.append(list(range(next_id, next_id + length)))
            next_id += length
        documents.append(segments)
    return documents


def _consecutive_pairs(documents):
    """Brute force: every (document, position, a, b) with b right after a in one document."""
    return [(d, i, tuple(doc[i]), tuple(doc[i + 1]))
            for d, doc in enumerate(documents) for i in range(len(doc) - 1)]


@pytest.mark.parametrize("seed", range(5))
def test_sop_pairs_are_the_consecutive_pairs_in_or_out_of_order(seed):
    documents = _hand_made_corpus()
    pairs = make_sop_pairs(documents, np.random.default_rng(seed))
    expected = _consecutive_pairs(documents)
    # One pair per consecutive pair, in document order, none across documents.
    assert len(pairs) == len(expected) == 3 + 0 + 1 + 0 + 4
    for (first, second, label), (_, _, a, b) in zip(pairs, expected):
        assert label in (0, 1)
        assert (tuple(first), tuple(second)) == ((a, b) if label == 1 else (b, a))
    # A swapped pair is never a consecutive pair in order (no palindromic pairs here).
    in_order = {(a, b) for _, _, a, b in expected}
    for first, second, label in pairs:
        assert ((tuple(first), tuple(second)) in in_order) == (label == 1)


def test_sop_labels_are_balanced_and_follow_the_probability():
    documents = [[[5 * d + s] for s in range(5)] for d in range(40)]  # 160 pairs
    labels = np.array([label for seed in range(50)
                       for _, _, label in make_sop_pairs(documents, np.random.default_rng(seed))])
    assert labels.size == 50 * 160
    # Binomial(8000, 0.5): standard deviation 0.0056.
    assert abs(labels.mean() - 0.5) < 0.02
    skewed = [label for _, _, label in make_sop_pairs(documents * 20, np.random.default_rng(0),
                                                      in_order_probability=0.8)]
    assert abs(np.mean(skewed) - 0.8) < 0.03


def test_documents_of_one_segment_give_no_pairs_and_alone_are_refused():
    assert make_sop_pairs([[[5]], [[6], [7]]], np.random.default_rng(0)) in (
        [([6], [7], 1)], [([7], [6], 0)])
    with pytest.raises(ValueError, match="at least two segments"):
        make_sop_pairs([[[5]], [[6, 7]], []], np.random.default_rng(0))


def test_packed_sop_pairs_are_two_consecutive_segments_of_one_document():
    rng = np.random.default_rng(3)
    # Document d holds the ids 100 d, 100 d + 1, ... in order: a pair in its order reads
    # as one increasing run, a swapped pair restarts lower after its [SEP].
    documents = []
    for d in range(12):
        ids = np.arange(100 * d + 5, 100 * d + 5 + rng.integers(2, 60), dtype=np.int32)
        cuts = np.sort(rng.choice(np.arange(1, len(ids)), size=min(3, len(ids) - 1),
                                  replace=False))
        documents.append(np.split(ids, cuts))
    out = pack_sentence_pairs(documents, 24, cls_id=CLS, sep_id=SEP, pad_id=PAD,
                              continuation=np.zeros(1300, bool), rng=rng,
                              short_sequence_probability=0.0, objective="mlm_sop")
    assert set(out) == {"token_ids", "segment_ids", "sentence_order"}
    assert out["token_ids"].shape[1] == 24 and len(out["sentence_order"]) > 20
    for row, segment_ids, in_order in zip(out["token_ids"], out["segment_ids"],
                                          out["sentence_order"]):
        seps = np.flatnonzero(row == SEP)
        assert row[0] == CLS and len(seps) == 2 and np.all(row[seps[1] + 1:] == PAD)
        a, b = row[1:seps[0]], row[seps[0] + 1:seps[1]]
        assert np.all(segment_ids[:seps[0] + 1] == 0)
        assert np.all(segment_ids[seps[0] + 1:seps[1] + 1] == 1)
        assert a[0] // 100 == b[0] // 100  # one document, always
        first, second = (a, b) if in_order else (b, a)
        run = np.concatenate([first, second])
        assert np.array_equal(run, np.arange(run[0], run[0] + len(run)))  # consecutive


def _tokenizer():
    return WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                              + [f"w{i}" for i in range(40)] + ["."])


def _sop_documents(count=6, lines=8):
    return [[" ".join(f"w{(d * 7 + line * 3 + k) % 40}" for k in range(6)) + " ."
             for line in range(lines)] for d in range(count)]


def test_sop_dataset_features_and_a_clear_error_without_labels():
    tokenizer = _tokenizer()
    # One document is enough for SOP (NSP needs two).
    train, held_out = pack_corpus(_sop_documents(1, 40), tokenizer, "mlm_sop", 20, seed=0,
                                  short_sequence_probability=0.0, eval_fraction=0.25)
    assert set(train) == {"token_ids", "segment_ids", "sentence_order"}
    with pytest.raises(ValueError, match="two documents"):
        pack_corpus(_sop_documents(1, 40), tokenizer, "mlm_nsp", 20, seed=0)
    train_dataset, eval_dataset = masked_datasets(
        train, held_out, tokenizer, objective="mlm_sop", batch_size=4, max_predictions=3,
        seed=0)
    x, y = next(iter(eval_dataset))
    assert sorted(x) == ["mask_positions", "padding_mask", "segment_ids", "token_ids"]
    assert sorted(y) == ["mlm_labels", "sentence_order"]
    np.testing.assert_array_equal(y["sentence_order"], held_out["sentence_order"][:4])
    np.testing.assert_array_equal(x["segment_ids"], held_out["segment_ids"][:4])
    x, y = next(iter(train_dataset))
    assert y["sentence_order"].shape == (4,) and set(np.asarray(y["sentence_order"])) <= {0, 1}
    with pytest.raises(ValueError, match="sentence_order"):
        make_pretraining_dataset({k: train[k] for k in ("token_ids", "segment_ids")},
                                 objective="mlm_sop", continuation=np.zeros(46, bool),
                                 special_ids=(0, 1, 2, 3, 4), mask_id=4, batch_size=2,
                                 max_predictions=2)


def _albert_shaped_encoder(vocabulary_size):
    return Encoder(vocabulary_size=vocabulary_size, num_layers=2, num_heads=2, hidden_dim=16,
                   intermediate_dim=32, embedding_dim=8, share_layers=True, dropout=0.0,
                   attention_dropout=0.0, max_sequence_length=32)


def test_sop_loss_and_accuracy_are_the_two_way_cross_entropy_of_the_pooled_output():
    tokenizer = _tokenizer()
    train, held_out = pack_corpus(_sop_documents(), tokenizer, "mlm_sop", 20, seed=1,
                                  short_sequence_probability=0.0, eval_fraction=0.2)
    _, eval_dataset = masked_datasets(train, held_out, tokenizer, objective="mlm_sop",
                                      batch_size=len(held_out["token_ids"]), max_predictions=3,
                                      seed=0)
    model = Pretrainer(_albert_shaped_encoder(tokenizer.vocabulary_size), objective="mlm_sop")
    model.compile(optimizer="sgd")
    x, y = next(iter(eval_dataset))
    logits = np.asarray(model.predict_on_batch(x)["sop_logits"], np.float64)
    pooled = np.asarray(model.encoder(
        {k: x[k] for k in Encoder.INPUTS})["pooled_output"], np.float64)
    kernel, bias = (np.asarray(w, np.float64) for w in model.get_layer("sop_head").weights)
    np.testing.assert_allclose(logits, pooled @ kernel + bias, atol=1e-5)
    labels = np.asarray(y["sentence_order"])
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    result = model.evaluate(eval_dataset, return_dict=True, verbose=0)
    assert set(result) == {"loss", "mlm_loss", "mlm_accuracy", "sop_loss", "sop_accuracy"}
    assert result["sop_loss"] == pytest.approx(
        -log_softmax[np.arange(len(labels)), labels].mean(), rel=1e-4)
    assert result["sop_accuracy"] == pytest.approx(
        np.mean(logits.argmax(-1) == labels), abs=1e-6)
    assert result["loss"] == pytest.approx(result["mlm_loss"] + result["sop_loss"], rel=1e-5)


def test_sop_head_is_kept_as_albert_names_it_and_is_not_taken_for_an_nsp_head(tmp_path):
    model = Pretrainer(_albert_shaped_encoder(46), objective="mlm_sop")
    tensors = head_tensors(model)
    assert {"sop_classifier.classifier.weight", "sop_classifier.classifier.bias"} <= set(tensors)
    assert not any(name.startswith("cls.seq_relationship") for name in tensors)
    kernel, bias = (np.asarray(w) for w in model.get_layer("sop_head").weights)
    # Hugging Face's ALBERT: [2, H] with label 0 = in order; ours [H, 2], label 1 = in order.
    np.testing.assert_array_equal(tensors["sop_classifier.classifier.weight"], kernel.T[::-1])
    np.testing.assert_array_equal(tensors["sop_classifier.classifier.bias"], bias[::-1])
    again = Pretrainer(_albert_shaped_encoder(46), objective="mlm_sop")
    assert load_pretraining_heads(again, str(tmp_path), tensors) == ("mlm_head", "sop_head")
    for mine, theirs in zip(again.get_layer("sop_head").weights,
                            model.get_layer("sop_head").weights):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    nsp = Pretrainer(_albert_shaped_encoder(46), objective="mlm_nsp")
    assert load_pretraining_heads(nsp, str(tmp_path), tensors) == ("mlm_head",)
