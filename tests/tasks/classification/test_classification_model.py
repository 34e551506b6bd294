import os

import keras
import numpy as np
import pytest

from nlpzoo.tasks.classification import BinaryF1, make_dataset, read_examples
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, build_vocabulary
from tests.helpers.task_checks import run_task_test
from nlpzoo.zoo import build_model
from tests.helpers.paths import ROOT

SAMPLES = os.path.join(ROOT, "samples", "trec")


def test_binary_f1_matches_hand_count():
    metric = BinaryF1()
    rng = np.random.default_rng(0)
    for _ in range(3):
        y_true = rng.integers(0, 2, 50)
        logits = rng.normal(size=(50, 2))
        metric.update_state(y_true, logits)
    rng = np.random.default_rng(0)
    tp = fp = fn = 0
    for _ in range(3):
        y_true = rng.integers(0, 2, 50)
        pred = rng.normal(size=(50, 2)).argmax(1)
        tp += np.sum((y_true == 1) & (pred == 1))
        fp += np.sum((y_true == 0) & (pred == 1))
        fn += np.sum((y_true == 1) & (pred == 0))
    assert abs(float(metric.result()) - 2 * tp / (2 * tp + fp + fn)) < 1e-6


# slow: the task-contract tests check that classifiers learn
@pytest.mark.slow
def test_loss_falls_on_real_sample():
    examples = read_examples(os.path.join(SAMPLES, "train.label"))
    labels = sorted({e.label for e in examples})
    tokenizer = WordPieceTokenizer(build_vocabulary([e.text for e in examples], 2000))
    dataset = make_dataset(examples, tokenizer, labels, max_seq_length=64, batch_size=32,
                           training=True, seed=0)
    model = build_model("bert_tiny_classifier", num_classes=len(labels),
                        vocabulary_size=tokenizer.vocabulary_size, learning_rate=1e-3, dropout=0.0,
                        jit_compile=False)
    history = model.fit(dataset, epochs=12, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert losses[-1] < 0.6 * losses[0], losses
    assert history.history["accuracy"][-1] > 0.6


def _encoder_features(batch=8, length=16, paired=False):
    rng = np.random.default_rng(0)
    segment_ids = np.zeros((batch, length), "int32")
    if paired:
        segment_ids[:, length // 2:] = 1
    return {"token_ids": rng.integers(5, 50, (batch, length)).astype("int32"),
            "segment_ids": segment_ids,
            "padding_mask": np.ones((batch, length), "int32")}


@pytest.mark.slow  # the single-text contract runs in make test; pairs differ only in the inputs
def test_pair_classifier_task_contract():
    """XLA training, .keras round trip, and two steps under mixed_bfloat16 with XLA.

    (Single-text and pair presets build the same `Classifier`; only their data differ.)
    """
    result = run_task_test(
        lambda jit_compile: build_model("bert_tiny_pair_classifier", vocabulary_size=50,
                                        num_layers=1, jit_compile=jit_compile),
        _encoder_features(paired=True), np.random.default_rng(1).integers(0, 2, 8),
        expected_output_shape=(8, 2), mixed_precision_jit_compile=True)
    assert "f1" in result.history.history  # binary tasks also report F1 of class 1


# DistilBERT (no segment table) by default; the others under `-m slow` (the run stays short).
@pytest.mark.parametrize("encoder", ["distilbert_tiny"] + [
    pytest.param(name, marks=pytest.mark.slow)
    for name in ("roberta_tiny", "albert_tiny", "electra_tiny", "modernbert_tiny")])
def test_pair_classifier_task_contract_on_each_family(encoder):
    """The same contract on the other BERT-family layouts (pairs: segment ids that RoBERTa
    ignores and DistilBERT has no table for)."""
    run_task_test(
        lambda jit_compile: build_model(f"{encoder}_pair_classifier", vocabulary_size=50,
                                        num_layers=1, jit_compile=jit_compile),
        _encoder_features(paired=True), np.random.default_rng(1).integers(0, 2, 8),
        expected_output_shape=(8, 2))


def test_run_task_test_catches_a_silent_fallback_from_xla():
    """Keras drops jit_compile=True with only a warning when a layer cannot be compiled."""

    def build_uncompilable_classifier(jit_compile):
        model = build_model("bert_tiny_classifier", vocabulary_size=50, num_layers=1,
                            compile=False)
        model.get_layer("classification_head").supports_jit = False
        model.compile(optimizer="sgd", jit_compile=jit_compile,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    with pytest.raises(AssertionError, match="fell back to jit_compile=False"):
        run_task_test(build_uncompilable_classifier, _encoder_features(), np.zeros(8, "int32"),
                      mixed_precision_policies=())
