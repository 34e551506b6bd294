"""The best model's `.keras` file: the weights' size (no optimizer state), still trainable."""

import json
import os

import keras
import numpy as np

import nlpzoo
from nlpzoo.layers.keras_internals import save_without_optimizer_state
from nlpzoo.tasks.training.callbacks import BestModelCheckpoint

# Not weights: HDF5's headers (about 2.5 KiB a dataset, measured) and the JSON config.
PER_WEIGHT_SLACK, FILE_SLACK = 4096, 16384


def _weight_bytes(model):
    return sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in model.weights)


def _batch(rng, examples=16, length=12):
    x = {"token_ids": rng.integers(5, 1000, (examples, length)).astype("int32"),
         "segment_ids": np.zeros((examples, length), "int32"),
         "padding_mask": np.ones((examples, length), "int32")}
    return x, rng.integers(0, 3, (examples,)).astype("int32")


def _trained_classifier():
    model = nlpzoo.build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=1000)
    x, y = _batch(np.random.default_rng(0))
    return model, x, y


def test_best_model_holds_the_weights_not_the_optimizer(tmp_path):
    model, x, y = _trained_classifier()
    path = str(tmp_path / "best_model.keras")
    model.fit(x, y, epochs=2, batch_size=8, verbose=0, validation_data=(x, y),
              callbacks=[BestModelCheckpoint(path, "val_loss", "min")])
    weights = _weight_bytes(model)
    with_optimizer = str(tmp_path / "with_optimizer.keras")
    model.save(with_optimizer)
    # AdamW keeps two slots per trained weight: Keras's own save is about 3x the weights.
    assert os.path.getsize(with_optimizer) > 2.5 * weights
    assert os.path.getsize(path) <= weights + PER_WEIGHT_SLACK * len(model.weights) + FILE_SLACK
    assert os.path.getsize(path) >= weights
    assert model.optimizer.built and int(model.optimizer.iterations) == 4  # untouched
    assert json.load(open(path + ".json"))["monitor"] == "val_loss"


def test_a_saved_model_predicts_evaluates_and_trains_on(tmp_path):
    model, x, y = _trained_classifier()
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    path = str(tmp_path / "model.keras")
    save_without_optimizer_state(model, path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)
    # The compile config came back: the same loss on the same data.
    np.testing.assert_allclose(loaded.evaluate(x, y, verbose=0, return_dict=True)["loss"],
                               model.evaluate(x, y, verbose=0, return_dict=True)["loss"],
                               rtol=1e-5)
    assert type(loaded.optimizer) is type(model.optimizer)
    assert int(loaded.optimizer.iterations) == 0  # a fresh optimizer, not the run's
    before = [w.numpy().copy() for w in loaded.trainable_weights]
    history = loaded.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert int(loaded.optimizer.iterations) == 3
    assert any(not np.allclose(b, w.numpy()) for b, w in zip(before, loaded.trainable_weights))
    assert history.history["loss"][-1] < history.history["loss"][0]
