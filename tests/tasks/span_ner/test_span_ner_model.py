import json

import keras
import numpy as np
import pytest

from nlpzoo.layers import SpanGrid
from nlpzoo.tasks.span_ner import SpanSentence, read_span_jsonl, span_label_names
from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.span_ner.evaluation import (
    calibrate,
    decode_all,
    evaluate_span_model,
    span_probabilities,
)
from nlpzoo.tasks.span_ner.pipeline import make_dataset, span_label_grid
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer
from tests.helpers.layer_checks import run_layer_test
from tests.helpers.task_checks import run_task_test
from nlpzoo.zoo import build_model

VOCAB = list(RESERVED_TOKENS) + "united airlines holding said on monday it bought shares".split()
NESTED = [
    SpanSentence(("United", "Airlines", "Holding", "said", "on", "Monday"),
                 ((0, 1, "ORG"), (0, 2, "ORG"), (5, 5, "DATE"))),
    SpanSentence(("it", "bought", "United", "Airlines", "shares"), ((2, 3, "ORG"),)),
]


def test_span_grid_layer_contract_and_counts():
    run_layer_test(SpanGrid, dict(max_span_width=3), np.array([[1, 1, 1, 0], [1, 1, 1, 1]]),
                   run_training_check=False, run_mixed_precision_check=False)
    for words, width in [(1, 1), (5, 3), (7, 10), (12, 4)]:
        grid = SpanGrid(width)(np.ones((1, words), "int32"))
        valid = int(np.asarray(grid["span_mask"]).sum())
        assert valid == sum(words - w + 1 for w in range(1, min(width, words) + 1))


def test_span_grid_outputs_stay_distinct_in_a_functional_model():
    mask = keras.Input((None,), dtype="int32", name="word_mask")
    grid = SpanGrid(2)(mask)
    model = keras.Model(mask, [grid["span_starts"], grid["span_ends"], grid["span_mask"]])
    starts, ends, valid = (np.asarray(t)[0].tolist() for t in model(np.array([[1, 1, 0]])))
    assert starts == [0, 0, 1, 1, 2, 2]
    assert ends == [0, 1, 1, 2, 2, 3]
    assert valid == [1, 1, 1, 0, 0, 0]


def test_label_grid_and_dataset():
    labels = span_label_names(NESTED)
    assert labels == ["NONE", "DATE", "ORG"]
    grid = span_label_grid(NESTED[0], {l: i for i, l in enumerate(labels)}, 3)
    assert grid[0].tolist() == [0, 2, 2] and grid[5].tolist() == [1, -1, -1]
    tokenizer = WordPieceTokenizer(VOCAB)
    features, batch_labels = next(iter(make_dataset(NESTED, tokenizer, labels,
                                                    max_span_width=3, batch_size=2)))
    assert batch_labels.shape == (2, 16, 3)
    assert batch_labels[1, 2].numpy().tolist() == [0, 2, 0]
    assert (batch_labels[1, 5:].numpy() == -1).all()  # past the 5 words of sentence 2


def test_loss_is_weighted_cross_entropy_over_valid_spans():
    model = build_model("bert_tiny_span_ner", num_classes=3, vocabulary_size=20, num_layers=1,
                        max_span_width=2, none_weight=0.25, dropout=0.0)
    x = {"token_ids": np.array([[2, 5, 6, 7, 3]], "int32"),
         "segment_ids": np.zeros((1, 5), "int32"), "padding_mask": np.ones((1, 5), "int32"),
         "word_starts": np.array([[1, 2, 3]], "int32"), "word_mask": np.ones((1, 3), "int32")}
    y = np.array([[[0, 2], [1, 0], [0, -1]]], "int32")
    logits = np.asarray(model(x))[0]  # [3 * 2, 3]
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    flat = y.reshape(-1)
    weights = np.where(flat < 0, 0.0, np.where(flat == 0, 0.25, 1.0))
    expected = -sum(w * log_p[k, max(l, 0)] for k, (l, w) in enumerate(zip(flat, weights)))
    expected /= weights.sum()
    assert abs(float(model.compute_loss(x, y, model(x))) - expected) < 1e-5


def _one_batch(dataset):
    [(features, labels)] = list(dataset)
    return {name: value.numpy() for name, value in features.items()}, labels.numpy()


@pytest.mark.slow  # trains to convergence (about 30 s); `make test-slow`
def test_nested_spans_are_learned_and_decoded():
    """Nested gold spans survive training labels → model → nested decoding.

    Training goes through run_task_test: 60 XLA steps, then a .keras round
    trip, then two steps under mixed_bfloat16 with float32 logits.
    """
    keras.utils.set_random_seed(0)
    labels = span_label_names(NESTED)
    tokenizer = WordPieceTokenizer(VOCAB)
    features, span_labels = _one_batch(make_dataset(NESTED * 8, tokenizer, labels,
                                                    max_span_width=3, batch_size=16))
    model, _ = run_task_test(
        lambda jit_compile: build_model(
            "bert_tiny_span_ner", num_classes=len(labels), vocabulary_size=len(VOCAB),
            num_layers=1, max_span_width=3, learning_rate=3e-3, dropout=0.0,
            jit_compile=jit_compile),
        features, span_labels, epochs=60,
        expected_output_shape=(16, span_labels.shape[1] * 3, len(labels)))
    dataset = make_dataset(NESTED, tokenizer, labels, max_span_width=3, batch_size=2)
    predictions = span_probabilities(model, dataset, NESTED, 3)
    nested = decode_all(predictions, labels, threshold=0.5, decoding="nested")
    assert [[s[:3] for s in sentence] for sentence in nested] == [list(s.spans) for s in NESTED]
    flat = decode_all(predictions, labels, threshold=0.5, decoding="flat", method="exact")
    for sentence in flat:  # flat decoding: no two entities overlap
        for a, b in zip(sentence, sentence[1:]):
            assert a[1] < b[0]
    scores = evaluate_span_model(model, dataset, NESTED, labels, 3, decoding="nested")
    assert scores["span_f1"] == 1.0


def test_jsonl_nested_example_reads(tmp_path):
    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps({"tokens": list(NESTED[0].words), "spans": [
        {"start": s, "end": e, "label": l} for s, e, l in NESTED[0].spans]}) + "\n")
    [sentence] = read_span_jsonl(str(path))
    assert sentence.spans == NESTED[0].spans


def test_each_epoch_is_scored_at_its_own_tuned_threshold():
    """Span NER picks its best epoch at the threshold it will be given after training
    (`tools/train.py --tune_decoding`), not blind at 0.5."""
    labels = span_label_names(NESTED)
    tokenizer = WordPieceTokenizer(VOCAB)
    keras.utils.set_random_seed(3)
    model = build_model("bert_tiny_span_ner", num_classes=len(labels), vocabulary_size=len(VOCAB),
                        num_layers=1, max_span_width=3)  # untrained: no span reaches 0.5
    dataset = make_dataset(NESTED, tokenizer, labels, max_span_width=3, batch_size=2)
    at_half = evaluate_span_model(model, dataset, NESTED, labels, 3, decoding="nested")
    threshold, f1, _ = calibrate(model, dataset, NESTED, labels, 3, decoding="nested")
    tuned = evaluate_span_model(model, dataset, NESTED, labels, 3, tune_threshold=True,
                                decoding="nested")
    assert at_half["span_f1"] == 0.0 and at_half["threshold"] == 0.5
    assert 0.0 < f1 and threshold < 0.5
    assert tuned["threshold"] == threshold and tuned["span_f1"] == pytest.approx(f1)
    assert tuned == evaluate_span_model(model, dataset, NESTED, labels, 3, threshold=threshold,
                                         decoding="nested")

    task = get_task("span_ner", max_span_width=3, decoding="nested")
    for tune, expected in [(False, at_half), (True, tuned)]:
        [callback] = task.callbacks(dataset, NESTED, labels, tune_decoding=tune)
        callback.set_model(model)
        logs = {}
        callback.on_epoch_end(0, logs)
        assert logs == {f"val_{name}": expected[name]
                        for name in ("span_precision", "span_recall", "span_f1", "threshold")}
