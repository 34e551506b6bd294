"""`layers.Encoder`: the functional backbone, its config, `transformer_of`, and `zoo.build_encoder`."""

import os

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder, TransformerEncoder, transformer_of
from tests.helpers.layer_checks import run_layer_test
from tests.layers.test_transformer_encoder import SMALL, encoder_inputs

def _legacy_encoder(**options):
    """The plain functional encoder that `zoo.build_encoder` returned before `Encoder`."""
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask")}
    outputs = TransformerEncoder(**dict(SMALL, **options), name="transformer")(**inputs)
    return keras.Model(inputs, outputs, name="encoder")


@pytest.mark.parametrize("options", [{}, {"norm_first": True, "share_layers": True}])
def test_model_contract(options):
    # hidden_states[0] is the first leaf (keras.tree sorts the dict's keys).
    run_layer_test(Encoder, dict(SMALL, **options), encoder_inputs(),
                   expected_output_shape=(2, 6, 8), run_training_check=not options)


def test_inputs_outputs_and_properties():
    encoder = Encoder(**SMALL, name="encoder")
    assert Encoder.INPUTS == ("token_ids", "segment_ids", "padding_mask")
    assert tuple(encoder.input) == Encoder.INPUTS  # a dict, in this order
    assert sorted(encoder.output) == ["hidden_states", "pooled_output", "sequence_output"]
    assert len(encoder.output["hidden_states"]) == SMALL["num_layers"] + 1
    assert isinstance(encoder.transformer, TransformerEncoder)
    assert encoder.transformer.name == "transformer"
    assert encoder.token_embedding is encoder.transformer.token_embedding
    assert (encoder.vocabulary_size, encoder.max_sequence_length, encoder.hidden_dim,
            encoder.num_layers) == (30, 16, 8, 2)
    assert encoder.count_params() == encoder.transformer.count_params()


def test_same_outputs_as_its_transformer_layer():
    encoder = Encoder(**SMALL, dropout=0.0)
    ours = encoder(encoder_inputs())
    theirs = encoder.transformer(**encoder_inputs())
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(theirs[key]))


def test_config_round_trip_and_dtype():
    encoder = Encoder(**SMALL, gelu_approximate=True, name="encoder")
    config = encoder.get_config()
    assert config["gelu_approximate"] is True and config["name"] == "encoder"
    assert set(config) == set(encoder.transformer.get_config()) | {"layer_mix"}
    restored = Encoder.from_config(config)
    assert restored.get_config() == config
    # A saved float32 encoder stays float32 under a mixed global policy, as layers do.
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    assert Encoder.from_config(config).transformer.compute_dtype == "float32"
    assert Encoder(**SMALL).transformer.compute_dtype == "bfloat16"


def test_transformer_of_every_kind_of_encoder():
    encoder = Encoder(**SMALL)
    assert transformer_of(encoder) is encoder.transformer
    assert Encoder.transformer_of(encoder) is encoder.transformer
    assert transformer_of(encoder.transformer) is encoder.transformer
    legacy = _legacy_encoder()
    assert transformer_of(legacy) is legacy.get_layer("transformer")
    for wrong in (keras.layers.Dense(2), keras.Sequential([keras.layers.Dense(2)]), "encoder"):
        with pytest.raises(ValueError, match="TransformerEncoder"):
            transformer_of(wrong)


def test_task_models_save_and_load_their_encoder_as_encoder(tmp_path):
    from nlpzoo.zoo import build_encoder, build_model

    encoder = build_encoder("bert_tiny", vocabulary_size=40, num_layers=1, hidden_dim=16,
                            num_heads=2, intermediate_dim=32)
    assert isinstance(encoder, Encoder) and encoder.name == "encoder"
    assert encoder.get_config()["num_layers"] == 1
    model = build_model("bert_tiny_classifier", encoder=encoder, num_classes=3,
                        vocabulary_size=40, compile=False)
    path = os.path.join(tmp_path, "classifier.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.encoder, Encoder)
    x = {name: value % 40 for name, value in encoder_inputs().items()}
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(model(x)), atol=1e-6)


def test_a_legacy_encoder_still_works_in_task_models():
    from nlpzoo.tasks.classification.model import Classifier

    legacy = _legacy_encoder()
    model = Classifier(legacy, num_classes=2)
    assert model.output_shape == (None, 2)
    assert transformer_of(model.encoder) is legacy.get_layer("transformer")
