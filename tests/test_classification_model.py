import os

import keras
import numpy as np

from tasks.classification import BinaryF1, make_dataset, read_examples
from tasks.tokenizer import WordPieceTokenizer, build_vocabulary
from zoo import build_model

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "samples", "trec")


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


def test_classifier_trains_under_xla_and_mixed_precision():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = build_model("bert_tiny_pair_classifier", vocabulary_size=50, num_layers=1,
                        jit_compile=True)
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 50, (8, 16)).astype("int32"),
         "segment_ids": np.zeros((8, 16), "int32"),
         "padding_mask": np.ones((8, 16), "int32")}
    history = model.fit(x, rng.integers(0, 2, 8), epochs=2, verbose=0)
    assert model.jit_compile is True
    assert np.isfinite(history.history["loss"]).all()
    assert "f1" in history.history
    assert model.output.dtype == "float32"
