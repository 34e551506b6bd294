"""`SequencePooling` ([CLS], masked mean, masked max) and the classifier's `pooling` option."""

import keras
import numpy as np
import pytest

from nlpzoo.layers import SequencePooling
from tests.helpers.layer_checks import run_layer_test
from tests.layers.test_transformer_encoder import SMALL, encoder_inputs
from nlpzoo.zoo import build_model


def _batch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], "int32")
    return x, mask


@pytest.mark.parametrize("mode", ["cls", "mean", "max"])
def test_layer_contract(mode):
    x, mask = _batch()
    run_layer_test(SequencePooling, {"mode": mode, "normalize": mode == "mean"},
                   {"inputs": x, "padding_mask": mask}, expected_output_shape=(3, 4),
                   run_training_check=False)


@pytest.mark.parametrize("normalize", [False, True])
def test_pooling_against_numpy(normalize):
    x, mask = _batch()
    x[mask == 0] = 1e4  # padded positions must not count
    expected = {
        "cls": x[:, 0],
        "mean": np.stack([x[i][mask[i] == 1].mean(0) for i in range(3)]),
        "max": np.stack([x[i][mask[i] == 1].max(0) for i in range(3)]),
    }
    for mode, value in expected.items():
        if normalize:
            value = value / np.linalg.norm(value, axis=-1, keepdims=True)
        pooled = SequencePooling(mode, normalize=normalize)(x, padding_mask=mask)
        np.testing.assert_allclose(pooled, value, rtol=1e-5, atol=1e-6, err_msg=mode)


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mean"):
        SequencePooling("sum")


def test_classifier_reads_the_mean_of_the_last_layer(tmp_path):
    model = build_model("bert_tiny_classifier", num_classes=3, **SMALL, dropout=0.0,
                        pooling="mean", compile=False)
    inputs = encoder_inputs()
    sequence = np.asarray(model.encoder(inputs)["sequence_output"])
    mask = inputs["padding_mask"][:, :, None]
    mean = (sequence * mask).sum(1) / mask.sum(1)
    head = model.get_layer("classification_head")
    np.testing.assert_allclose(model.predict(inputs, verbose=0), head(mean), atol=1e-5)
    path = str(tmp_path / "mean.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.pooling == "mean"
    np.testing.assert_allclose(loaded.predict(inputs, verbose=0),
                               model.predict(inputs, verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match="pooling"):
        build_model("bert_tiny_classifier", num_classes=3, **SMALL, pooling="first")
