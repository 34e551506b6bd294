"""Houlsby adapters and LoRA: identity at the start, only their weights train, reload intact."""

import keras
import numpy as np
import pytest

from nlpzoo.layers import Adapter, Encoder, LoraDense, rebuild_encoder
from tests.helpers.layer_checks import run_layer_test
from tests.layers.test_transformer_encoder import SMALL, encoder_inputs
from nlpzoo.zoo import build_model, build_task_model


def test_adapter_layer_contract():
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    run_layer_test(Adapter, {"bottleneck_dim": 3}, x, expected_output_shape=(2, 5, 8))


def test_adapter_is_the_identity_until_trained_and_then_a_bottleneck_mlp():
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    adapter = Adapter(bottleneck_dim=3)
    np.testing.assert_array_equal(adapter(x), x)
    rng = np.random.default_rng(2)
    for variable in adapter.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    down = x @ np.asarray(adapter.down.kernel) + np.asarray(adapter.down.bias)
    gelu = 0.5 * down * (1 + np.vectorize(__import__("math").erf)(down / np.sqrt(2)))
    expected = x + gelu @ np.asarray(adapter.up.kernel) + np.asarray(adapter.up.bias)
    np.testing.assert_allclose(adapter(x), expected, atol=1e-5)


@pytest.mark.parametrize("changes", [{"adapter_size": 4}, {"lora_rank": 2},
                                     {"adapter_size": 2, "lora_rank": 1}])
@pytest.mark.parametrize("norm_first", [False, True])
def test_a_new_adapted_encoder_computes_what_the_plain_one_did(changes, norm_first):
    plain = Encoder(**SMALL, dropout=0.0, norm_first=norm_first)
    adapted = rebuild_encoder(plain, **changes)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(adapted(encoder_inputs())[name],
                                   plain(encoder_inputs())[name], atol=1e-6)


def _trained_weight_paths(changes):
    """The paths that must train with `changes` on SMALL's two-block encoder."""
    paths = set()
    for block in ("block_0", "block_1"):
        if changes.get("adapter_size"):
            for adapter in ("attention_adapter", "feedforward_adapter"):
                paths |= {f"transformer/{block}/{adapter}/{layer}/{weight}"
                          for layer in ("down", "up") for weight in ("kernel", "bias")}
            paths |= {f"transformer/{block}/{norm}/{weight}"
                      for norm in ("attention_norm", "feedforward_norm")
                      for weight in ("gamma", "beta")}
        if changes.get("lora_rank"):
            paths |= {f"transformer/{block}/attention/{dense}/lora_kernel_{factor}"
                      for dense in ("query", "value") for factor in ("a", "b")}
    if changes.get("adapter_size"):
        paths |= {"transformer/embeddings/layer_norm/gamma",
                  "transformer/embeddings/layer_norm/beta"}
    return paths


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    features = {"token_ids": rng.integers(4, 30, (8, 6)).astype("int32"),
                "segment_ids": np.zeros((8, 6), "int32"),
                "padding_mask": np.ones((8, 6), "int32")}
    return features, rng.integers(0, 3, (8,)).astype("int32")


@pytest.mark.parametrize("changes", [pytest.param({"adapter_size": 4}, marks=pytest.mark.slow),
                                     {"lora_rank": 2}])
def test_exactly_the_adaptation_weights_and_the_head_change(changes, tmp_path):
    model = build_model("bert_tiny_classifier", num_classes=3, **SMALL, dropout=0.0,
                        attention_dropout=0.0, learning_rate=1e-2, jit_compile=True,
                        **changes)
    expected = _trained_weight_paths(changes)
    encoder_paths = {v.path for v in model.trainable_variables
                     if v.path.startswith("transformer/")}
    assert encoder_paths == expected
    before = {v.path: np.array(v) for v in model.weights}
    model.fit(*_batch(), epochs=3, batch_size=4, verbose=0)
    assert model.jit_compile is True
    changed = {v.path for v in model.weights if not np.array_equal(before[v.path], v)}
    head = {v.path for v in model.weights if v.path.startswith("classification_head/")}
    assert changed == expected | head

    # The saved model reloads with its adapters / LoRA factors as trained.
    path = str(tmp_path / "adapted.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    saved = {v.path: np.array(v) for v in model.weights}
    assert {v.path: np.array(v) for v in loaded.weights}.keys() == saved.keys()
    for variable in loaded.weights:
        np.testing.assert_array_equal(variable, saved[variable.path], err_msg=variable.path)
    features, _ = _batch(1)
    np.testing.assert_allclose(loaded.predict(features, verbose=0),
                               model.predict(features, verbose=0), atol=1e-6)
    assert {v.path for v in loaded.trainable_variables
            if v.path.startswith("transformer/")} == expected


def test_a_classifier_with_adapters_starts_where_the_plain_one_does():
    plain = build_model("bert_tiny_classifier", num_classes=3, **SMALL, compile=False)
    adapted = build_task_model("classification", "bert_tiny", encoder=plain.encoder,
                               num_classes=3, adapter_size=4, lora_rank=2, compile=False)
    by_path = {v.path: v for v in plain.weights}
    for variable in adapted.weights:
        if variable.path.startswith("classification_head/"):
            variable.assign(by_path[variable.path])
    features, _ = _batch()
    np.testing.assert_allclose(adapted.predict(features, verbose=0),
                               plain.predict(features, verbose=0), atol=1e-6)


def test_lora_dense_keeps_its_factors_through_a_weights_file(tmp_path):
    layer = LoraDense(4, lora_rank=2, name="projection")
    layer.build((None, 3))
    layer.lora_kernel_b.assign(np.full((2, 4), 0.5, "float32"))
    model = keras.Sequential([keras.Input((3,)), layer])
    path = str(tmp_path / "lora.weights.h5")
    model.save_weights(path)
    other = keras.Sequential([keras.Input((3,)), LoraDense(4, lora_rank=2, name="projection")])
    other.load_weights(path)
    for name in ("_kernel", "bias", "lora_kernel_a", "lora_kernel_b"):
        np.testing.assert_array_equal(getattr(other.layers[0], name),
                                      getattr(layer, name), err_msg=name)
    # A plain encoder's file (a Dense kernel where LoRA now is) loads too, and the
    # factors can learn again (Keras's own load would leave both at zero).
    plain = Encoder(**SMALL)
    plain.save_weights(path)
    adapted = Encoder(**SMALL, lora_rank=2)
    adapted.load_weights(path)
    query = adapted.transformer.blocks[0].attention.query_dense
    np.testing.assert_array_equal(query._kernel,
                                  plain.transformer.blocks[0].attention.query_dense.kernel)
    assert np.abs(np.asarray(query.lora_kernel_a)).max() > 0


def test_adapters_cannot_go_into_a_plain_encoder_checkpoint(tmp_path):
    from nlpzoo.zoo.checkpoints import save_encoder_checkpoint

    adapted = rebuild_encoder(Encoder(**SMALL), adapter_size=2)
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]
    with pytest.raises(ValueError, match="adapters or LoRA"):
        save_encoder_checkpoint(adapted, str(tmp_path / "checkpoint"), vocabulary, True)


def test_incompatible_adaptations_are_refused():
    for options in ({"freeze_encoder": True, "adapter_size": 4},
                    {"lora_rank": 2, "l2sp": 0.1}, {"adapter_size": -1}):
        with pytest.raises(ValueError):
            build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=30, **options)
