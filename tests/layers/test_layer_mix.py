"""`LayerMix` (ELMo's scalar mix, the mean of the last four) and `Encoder(layer_mix=...)`."""

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder, LayerMix, rebuild_encoder
from tests.helpers.layer_checks import run_layer_test
from tests.layers.test_transformer_encoder import SMALL, encoder_inputs


def _states(count=5, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(2, 3, 4)).astype("float32") for _ in range(count)]


@pytest.mark.parametrize("mode", ["scalar_mix", "mean_last_4"])
def test_layer_contract(mode):
    run_layer_test(LayerMix, {"mode": mode}, _states(), expected_output_shape=(2, 3, 4),
                   run_training_check=mode == "scalar_mix")


def test_scalar_mix_weights_sum_to_one_and_equal_logits_give_the_mean():
    states = _states()
    mix = LayerMix("scalar_mix")
    np.testing.assert_allclose(mix(states), np.mean(states, axis=0), atol=1e-6)
    mix.logits.assign([0.3, -1.0, 2.0, 0.0, 0.5])
    mix.scale.assign(1.7)
    weights = np.asarray(mix.mixing_weights())
    assert abs(weights.sum() - 1.0) < 1e-6 and (weights > 0).all()
    expected = np.exp([0.3, -1.0, 2.0, 0.0, 0.5])
    expected = 1.7 * np.tensordot(expected / expected.sum(), np.stack(states), axes=1)
    np.testing.assert_allclose(mix(states), expected, atol=1e-5)


def test_mean_last_4_has_no_weights_and_uses_what_there_is():
    states = _states(6)
    mix = LayerMix("mean_last_4")
    np.testing.assert_allclose(mix(states), np.mean(states[-4:], axis=0), atol=1e-6)
    assert mix.weights == []
    np.testing.assert_allclose(mix(states[:3]), np.mean(states[:3], axis=0), atol=1e-6)


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="scalar_mix"):
        LayerMix("max")


def test_mixed_precision_keeps_the_weights_float32():
    mix = LayerMix("scalar_mix", dtype="mixed_bfloat16")
    out = mix([keras.ops.cast(state, "bfloat16") for state in _states()])
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert mix.logits.dtype == "float32"


@pytest.mark.parametrize("mode", ["scalar_mix", "mean_last_4"])
def test_encoder_outputs_the_mix_and_its_first_vector(mode, tmp_path):
    plain = Encoder(**SMALL, dropout=0.0)
    mixed = rebuild_encoder(plain, layer_mix=mode)
    inputs = encoder_inputs()
    states = [np.asarray(state) for state in plain(inputs)["hidden_states"]]
    expected = np.mean(states if mode == "scalar_mix" else states[-4:], axis=0)
    out = mixed(inputs)
    np.testing.assert_allclose(out["sequence_output"], expected, atol=1e-5)
    np.testing.assert_allclose(out["pooled_output"], expected[:, 0], atol=1e-5)
    path = str(tmp_path / "mixed.keras")
    mixed.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layer_mix == mode
    np.testing.assert_allclose(loaded(inputs)["sequence_output"], expected, atol=1e-5)


def test_encoder_refuses_an_unknown_mix():
    with pytest.raises(ValueError, match="layer_mix"):
        Encoder(**SMALL, layer_mix="first")


def test_a_frozen_encoder_still_learns_its_scalar_mix():
    from nlpzoo.zoo import build_model

    model = build_model("bert_tiny_classifier", num_classes=3, **SMALL,
                        freeze_encoder=True, layer_mix="scalar_mix")
    assert {v.path for v in model.trainable_variables} == {
        "layer_mix/logits", "layer_mix/scale", "classification_head/logits/kernel",
        "classification_head/logits/bias"}
