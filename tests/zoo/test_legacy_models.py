"""`.keras` files saved before `layers.Encoder` existed still load, with identical outputs.

Their encoder is a plain Functional model holding a `TransformerEncoder` named
"transformer"; tests/fixtures/README.md says how they were made.
"""

import os

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder, TransformerEncoder, transformer_of
import nlpzoo.tasks.pretraining.model  # noqa: F401  (registers Pretrainer)
import nlpzoo.zoo  # noqa: F401  (registers the other task models)
from tests.helpers.paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MODELS = ("classifier", "classifier_hidden_head", "crf_tagger", "span_ner",
          "span_sbo_pretrainer")


def _load(name):
    model = keras.saving.load_model(os.path.join(FIXTURES, f"legacy_{name}.keras"))
    with np.load(os.path.join(FIXTURES, f"legacy_{name}_outputs.npz")) as arrays:
        inputs = {k[len("input_"):]: arrays[k] for k in arrays.files if k.startswith("input_")}
        outputs = {k[len("output_"):]: arrays[k] for k in arrays.files
                   if k.startswith("output_")}
    return model, inputs, outputs


@pytest.mark.parametrize("name", MODELS)
def test_legacy_model_loads_with_identical_outputs(name):
    model, inputs, expected = _load(name)
    got = model(inputs, training=False)
    if not isinstance(got, dict):
        got = {next(k for k in expected if k in ("logits", "scores")): got}
    if "tags" in expected:
        got["tags"] = model.predict_on_batch(inputs)
    if "probabilities" in expected:
        got["probabilities"] = model.predict_on_batch(inputs)
    assert set(got) == set(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(got[key]), value, atol=1e-6, rtol=0,
                                   err_msg=f"{name}: {key}")


@pytest.mark.parametrize("name", ["classifier", "span_sbo_pretrainer"])
def test_legacy_encoder_is_a_plain_functional_that_transformer_of_reads(name):
    model, _, _ = _load(name)
    assert not isinstance(model.encoder, Encoder)
    transformer = transformer_of(model.encoder)
    assert isinstance(transformer, TransformerEncoder) and transformer.vocabulary_size == 50
    if name == "span_sbo_pretrainer":  # heads re-tied to the reloaded table
        for head in ("mlm_head", "sbo_head"):
            assert model.get_layer(head).get_embedding_layer() is transformer.token_embedding
