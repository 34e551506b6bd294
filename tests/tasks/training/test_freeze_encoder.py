"""Feature extraction (`freeze_encoder`): the encoder stays bit-identical, the head learns."""

import keras
import numpy as np

from nlpzoo.zoo import build_model


def _data(seed=0):
    rng = np.random.default_rng(seed)
    features = {"token_ids": rng.integers(4, 60, (8, 12)).astype("int32"),
                "segment_ids": np.zeros((8, 12), "int32"),
                "padding_mask": np.ones((8, 12), "int32")}
    return features, rng.integers(0, 3, (8,)).astype("int32")


def test_a_frozen_encoder_does_not_move_and_the_head_does(tmp_path):
    model = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=60,
                        num_layers=1, learning_rate=1e-2, freeze_encoder=True,
                        jit_compile=True)
    encoder = model.get_layer("encoder")
    head = model.get_layer("classification_head")
    encoder_before = [np.array(w) for w in encoder.weights]
    head_before = [np.array(w) for w in head.weights]
    model.fit(*_data(), epochs=2, batch_size=4, verbose=0)
    assert model.jit_compile is True  # really compiled, not silently turned off
    for before, after in zip(encoder_before, encoder.weights):
        np.testing.assert_array_equal(before, np.array(after))
    assert all(np.abs(before - np.array(after)).max() > 0
               for before, after in zip(head_before, head.weights))
    assert {v.path.split("/")[0] for v in model.trainable_variables} == {
        "classification_head"}
    path = str(tmp_path / "frozen.keras")
    model.save(path)
    assert keras.saving.load_model(path).get_layer("encoder").trainable is False


def test_by_default_the_encoder_trains():
    model = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=60,
                        num_layers=1)
    assert any(v.path.startswith("transformer/") for v in model.trainable_variables)
