"""Prediction batched by length (tasks/words/length_sorting.py): the same outputs as input order.

The order helpers against a plain sort, and every task's `write_predictions` (which now predicts
longest first) against prediction in input order on tiny untrained models:
sentences of very different lengths in shuffled order (the longest cut into
windows), duplicates, batch sizes that do not divide the count, one example.
A recording wrapper checks that the batches really were sorted and dense.
"""

import itertools
import json

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.text.batching import bucket_length
from nlpzoo.tasks.classification.predictions import softmax_probabilities
from nlpzoo.tasks.text.text_readers import ClassificationExample
from nlpzoo.tasks.classification.task import ClassificationTask
from nlpzoo.tasks.words.length_sorting import (
    batch_order,
    padded_lengths,
    padded_size,
    predict_encoded_in_length_order,
    restore_order,
)
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.span_ner.evaluation import (
    decode_all,
    span_probabilities,
)
from nlpzoo.tasks.span_ner.task import SpanNERTask
from nlpzoo.tasks.tagging.evaluation import predict_tags
from nlpzoo.tasks.tagging.task import TaggingTask
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS
from nlpzoo.tasks.words.preprocessor import WordPreprocessor

FILLER = [f"w{i}" for i in range(20)]
VOCABULARY = list(RESERVED_TOKENS) + ["peter", "blackburn", "##s"] + FILLER
MAX_SEQ_LENGTH = 24  # buckets 16 and 24: the 45-word line is cut into windows
TAGS = ["O", "B-PER", "I-PER"]
SPAN_LABELS = ["NONE", "PER"]
CLASSES = ["a", "b", "c"]
# (input, batch size): 8 lines (14 windows) in batches of 5 (not dividing the count).
CASES = [("mixed", 5)]
# One line, more batch sizes, all in one batch too (slow: each batch shape traces the model
# anew; the suite runs past its 20 minutes with them).
SLOW_CASES = [("one", 5), ("mixed", 3), ("mixed", 64)]


def _cases(*model):
    """`CASES` and the slow `SLOW_CASES` for one model (its parameters first)."""
    return [(*model, *case) for case in CASES] + [
        pytest.param(*model, *case, marks=pytest.mark.slow) for case in SLOW_CASES]


def _line(rng, num_words):
    words = [str(rng.choice(FILLER)) + ("s" if rng.random() < 0.4 else "")
             for _ in range(num_words)]
    if num_words >= 3:
        start = int(rng.integers(0, num_words - 1))
        words[start:start + 2] = ["Peter", "Blackburn"]
    return " ".join(words)


def _lines(case):
    rng = np.random.default_rng(7)
    if case == "one":
        return [_line(rng, 9)]
    lines = [_line(rng, n) for n in (1, 3, 6, 12, 33)]
    lines += [lines[1], lines[4], lines[1]]  # duplicates, one of them long
    return [lines[i] for i in rng.permutation(len(lines))]


def _write_lines(tmp_path, lines):
    path = tmp_path / "input.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _records(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


class _Recording:
    """A model that records the shape and real token counts of every batch it predicts."""

    def __init__(self, model):
        self.model = model
        self.batches = []  # (rows, padded width, real tokens of each row)

    def predict_on_batch(self, features):
        mask = np.asarray(features["padding_mask"])
        self.batches.append((mask.shape[0], mask.shape[1], mask.sum(axis=1).tolist()))
        return self.model.predict_on_batch(features)

    def check_sorted_and_dense(self, batch_size, count):
        """Full batches but the last, longest first, each padded to its longest rounded up
        to a multiple of 8."""
        rows = [rows for rows, _, _ in self.batches]
        assert sum(rows) == count and all(r == batch_size for r in rows[:-1])
        full = [max(tokens) for rows, _, tokens in self.batches if rows == batch_size]
        assert full == sorted(full, reverse=True)
        for _, width, tokens in self.batches:
            assert width == min(-(-max(tokens) // 8) * 8, MAX_SEQ_LENGTH)

    def padded_tokens(self):
        return sum(rows * width for rows, width, _ in self.batches)


def _encoder(seed=0):
    keras.utils.set_random_seed(seed)
    return Encoder(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=16,
                   intermediate_dim=32, max_sequence_length=32)


@pytest.fixture(scope="module")
def models():
    return {
        "crf": TaggingTask().build_model(_encoder(1), labels=TAGS, head="crf",
                                         tag_scheme="IOB2"),
        "softmax": TaggingTask().build_model(_encoder(2), labels=TAGS, head="softmax"),
        "span_ner": SpanNERTask().build_model(_encoder(3), labels=SPAN_LABELS, max_span_width=2,
                                              span_hidden_dim=8, width_embedding_dim=4),
        "classifier": ClassificationTask().build_model(_encoder(4), labels=CLASSES),
    }


WORDS = WordPreprocessor(VOCABULARY, max_seq_length=MAX_SEQ_LENGTH)
TEXTS = TextPreprocessor(VOCABULARY, max_seq_length=MAX_SEQ_LENGTH)


# ---------------------------------------------------------------------------------------------
# The order
# ---------------------------------------------------------------------------------------------


def test_padded_lengths_are_the_pipeline_buckets():
    for max_length in (16, 24, 100, 128):
        lengths = np.arange(1, max_length + 1)
        assert padded_lengths(lengths, max_length).tolist() == \
            [int(bucket_length(int(n), max_length)) for n in lengths]
    assert padded_lengths([5, 17]).tolist() == [5, 17]


@pytest.mark.parametrize("seed", range(40))
def test_batch_order_pads_least_of_all_orders(seed):
    """Against every permutation: no way of batching the examples pads less."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 33, int(rng.integers(1, 7))).tolist()
    lengths += lengths[:int(rng.integers(0, 2))]  # sometimes a tie
    batch_size = int(rng.integers(1, 5))
    max_length = [None, 32][seed % 2]  # real lengths, or buckets 16 and 32
    order = batch_order(lengths, batch_size, max_length)
    assert sorted(order.tolist()) == list(range(len(lengths)))
    best = min(padded_size([lengths[i] for i in permutation], batch_size, max_length)
               for permutation in itertools.permutations(range(len(lengths))))
    assert padded_size([lengths[i] for i in order], batch_size, max_length) == best


@pytest.mark.parametrize("batch_size", [1, 7, 64, 500])
def test_batch_order_is_full_batches_longest_first_then_the_short_one(batch_size):
    rng = np.random.default_rng(batch_size)
    lengths = np.minimum(rng.geometric(0.05, 300), 128)  # mostly short, a long tail
    ordered = lengths[batch_order(lengths, batch_size, 128)]
    batches = [ordered[i:i + batch_size] for i in range(0, len(ordered), batch_size)]
    assert all(len(batch) == batch_size for batch in batches[:-1])
    full = [batch for batch in batches if len(batch) == batch_size]
    assert [b.max() for b in full] == sorted((b.max() for b in full), reverse=True)
    for batch in full:  # consecutive lengths: no batch overlaps another's range
        assert sum((lengths > batch.min()) & (lengths < batch.max())) <= max(batch_size - 2, 0)
    assert padded_size(ordered, batch_size, 128) <= padded_size(lengths, batch_size, 128)


def test_the_short_batch_goes_where_it_saves_most():
    # 100 in batches of 64, one long one: sorted longest first it would pad 64 rows to 128.
    lengths = [10] * 99 + [100]
    order = batch_order(lengths, 64, 128)
    assert 99 in order[64:].tolist()
    assert padded_size([lengths[i] for i in order], 64, 128) == 64 * 16 + 36 * 128
    # Two long ones and a batch of 2: both long ones share the short batch.
    lengths = [100, 3, 3, 3, 3, 100]
    assert sorted(batch_order(lengths, 4).tolist()[-2:]) == [0, 5]


@pytest.mark.parametrize("seed", range(5))
def test_restore_order_inverts_the_sort(seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 5, 30).tolist()  # duplicates too
    order = rng.permutation(30)
    assert restore_order([values[i] for i in order], order) == values


def test_bad_orders_and_counts_are_refused():
    with pytest.raises(ValueError, match="permutation"):
        restore_order(["a", "b"], [0, 0])
    with pytest.raises(ValueError, match="3 outputs for 2 examples"):
        restore_order(["a", "b", "c"], [1, 0])
    with pytest.raises(ValueError, match="one length per example"):
        batch_order([[1, 2]], 2)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        batch_order([1, 2], 0)
    features = {"token_ids": [np.ones(2, np.int32)] * 3}
    with pytest.raises(ValueError, match="gave 2 outputs for 3 examples"):
        predict_encoded_in_length_order(features, lambda batch: [0, 0], 3, {}, 8,
                                        progress=False)


def test_encoded_batches_pad_to_multiples_or_buckets_with_each_features_padding():
    rng = np.random.default_rng(3)
    lengths = rng.integers(3, MAX_SEQ_LENGTH + 1, size=23)
    features = {"token_ids": [np.arange(1, n + 1, dtype=np.int32) for n in lengths],
                "word_starts": [np.arange(1, n - 1, dtype=np.int32) for n in lengths]}
    for pad_to_buckets in (False, True):
        seen = []

        def rows(batch):
            seen.append(batch)
            return [(ids[ids > 0].tolist(), starts.tolist())
                    for ids, starts in zip(batch["token_ids"], batch["word_starts"])]

        outputs = predict_encoded_in_length_order(
            features, rows, 5, {"word_starts": -1}, MAX_SEQ_LENGTH,
            pad_to_buckets=pad_to_buckets, progress=False)
        # Input order, every example whole, each feature padded with its own value.
        for (ids, starts), n in zip(outputs, lengths):
            assert ids == list(range(1, n + 1))
            assert starts[:n - 2] == list(range(1, n - 1)) and set(starts[n - 2:]) <= {-1}
        for batch in seen:
            longest = int((batch["token_ids"] > 0).sum(axis=1).max())
            width = batch["token_ids"].shape[1]
            assert batch["word_starts"].shape[1] == width
            if pad_to_buckets:
                assert width == int(bucket_length(longest, MAX_SEQ_LENGTH))
            else:
                assert width == min(-(-longest // 8) * 8, MAX_SEQ_LENGTH)
        assert sum(len(batch["token_ids"]) for batch in seen) == len(lengths)
    assert predict_encoded_in_length_order({}, rows, 5, {}, MAX_SEQ_LENGTH) == []
    with pytest.raises(ValueError, match="one row per example"):
        predict_encoded_in_length_order({"token_ids": [np.ones(3)], "word_starts": []}, rows, 5,
                                        {}, MAX_SEQ_LENGTH)


# ---------------------------------------------------------------------------------------------
# write_predictions gives what prediction in input order gives
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("head, case, batch_size",
                         _cases("crf") + [pytest.param("softmax", "mixed", 5, marks=pytest.mark.slow)])
def test_tagging_predictions_are_those_of_input_order(models, head, case, batch_size, tmp_path):
    lines = _lines(case)
    task = TaggingTask(tag_scheme="IOB2")
    model = _Recording(models[head])
    sentences = task.read_prediction_input(_write_lines(tmp_path, lines), "text")
    output = str(tmp_path / "output.jsonl")
    task.write_predictions(model, WORDS, sentences, TAGS, output, batch_size=batch_size)

    windows = task.prediction_examples(sentences, WORDS)
    model.check_sorted_and_dense(batch_size, len(windows))
    in_order = _Recording(models[head])
    expected = predict_tags(in_order, task.make_dataset(windows, WORDS, TAGS,
                                                        batch_size=batch_size), windows, TAGS)
    records = _records(output)
    assert [r["text"] for r in records] == lines
    assert [r["tags"] for r in records] == expected
    assert all(len(r["tags"]) == len(r["words"]) for r in records)
    if case == "mixed":
        assert len(windows) > len(sentences)  # the 33-word lines are windowed
        assert any(r["entities"] for r in records)  # an untrained model still finds some
        if batch_size < len(windows):
            assert model.padded_tokens() < in_order.padded_tokens()


@pytest.mark.parametrize("case, batch_size", _cases())
def test_span_ner_predictions_are_those_of_input_order(models, case, batch_size, tmp_path,
                                                       monkeypatch):
    lines = _lines(case)
    task = SpanNERTask(max_span_width=2)
    model = _Recording(models["span_ner"])
    sentences = task.read_prediction_input(_write_lines(tmp_path, lines), "text")
    decoded = []  # what write_predictions decodes: the merged span probabilities

    def decode(probabilities, *args):
        decoded.append(probabilities)
        return decode_all(probabilities, *args)

    monkeypatch.setattr("nlpzoo.tasks.span_ner.task.decode_all", decode)
    output = str(tmp_path / "output.jsonl")
    task.write_predictions(model, WORDS, sentences, SPAN_LABELS, output, batch_size=batch_size)
    windows = task.prediction_examples(sentences, WORDS)
    model.check_sorted_and_dense(batch_size, len(windows))

    dataset = task.make_dataset(windows, WORDS, SPAN_LABELS, batch_size=batch_size)
    expected = span_probabilities(models["span_ner"], dataset, windows, 2)
    [predicted] = decoded
    assert len(predicted) == len(expected) == len(lines)
    for (p, s, e), (p0, s0, e0) in zip(predicted, expected):
        assert s.tolist() == s0.tolist() and e.tolist() == e0.tolist()
        np.testing.assert_allclose(p, p0, atol=1e-6)
    records = _records(output)
    assert [r["text"] for r in records] == lines
    expected_entities = decode_all(expected, SPAN_LABELS, task.options.threshold)
    for record, entities in zip(records, expected_entities):
        assert [(x["start"], x["end"], x["label"]) for x in record["entities"]] == \
            [(start, end, label) for start, end, label, _ in entities]
        np.testing.assert_allclose([x["score"] for x in record["entities"]],
                                   [score for _, _, _, score in entities], atol=2e-6)
    if case == "mixed":
        assert sum(len(r["entities"]) for r in records) > 0


@pytest.mark.parametrize("paired, case, batch_size",
                         _cases(False) + [(True, "mixed", 5)])
def test_classification_predictions_are_those_of_input_order(models, paired, case, batch_size,
                                                             tmp_path):
    lines = _lines(case)
    task = ClassificationTask(paired_input=paired)
    pairs = lines[::-1] if paired else [None] * len(lines)
    examples = [ClassificationExample(text, "", pair) for text, pair in zip(lines, pairs)]
    model = _Recording(models["classifier"])
    output = str(tmp_path / "output.jsonl")
    task.write_predictions(model, TEXTS, examples, CLASSES, output, batch_size=batch_size)
    model.check_sorted_and_dense(batch_size, len(examples))

    labelled = [ClassificationExample(e.text, CLASSES[0], e.text_pair) for e in examples]
    dataset = task.make_dataset(labelled, TEXTS, CLASSES, batch_size=batch_size)
    expected = softmax_probabilities(models["classifier"].predict(dataset, verbose=0))
    records = _records(output)
    assert [r["text"] for r in records] == lines
    assert [r.get("text_pair") for r in records] == pairs
    assert [r["label"] for r in records] == [CLASSES[i] for i in expected.argmax(axis=1)]
    np.testing.assert_allclose([[r["probabilities"][c] for c in CLASSES] for r in records],
                               expected, atol=2e-6)
