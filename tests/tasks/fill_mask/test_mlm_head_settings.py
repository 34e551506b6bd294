"""The masked-LM head of a fill-mask model and of a pretrainer follows its encoder (GELU form,
LayerNorm epsilon); a configuration saved before it did reloads with BERT's settings."""

import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.fill_mask.model import FillMaskModel
from nlpzoo.tasks.pretraining.model import Pretrainer


def _encoder(**options):
    return Encoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
                   intermediate_dim=16, **options)


@pytest.mark.parametrize("model_class", [FillMaskModel, Pretrainer])
def test_the_head_takes_the_encoders_settings_and_keeps_them(model_class):
    model = model_class(_encoder(gelu_approximate=True, layer_norm_epsilon=1e-5))
    head = model.get_layer("mlm_head")
    assert (head.activation, head.layer_norm_epsilon) == ("gelu_approximate", 1e-5)
    assert head.layer_norm.epsilon == pytest.approx(1e-5)
    config = model.get_config()
    assert config["mlm_settings"] == {"activation": "gelu_approximate",
                                      "layer_norm_epsilon": 1e-5}
    restored = model_class.from_config(config).get_layer("mlm_head")
    assert (restored.activation, restored.layer_norm_epsilon) == ("gelu_approximate", 1e-5)


@pytest.mark.parametrize("model_class", [FillMaskModel, Pretrainer])
def test_a_configuration_from_before_reloads_with_berts_head(model_class):
    config = model_class(_encoder(gelu_approximate=True, layer_norm_epsilon=1e-5)).get_config()
    del config["mlm_settings"]
    head = model_class.from_config(config).get_layer("mlm_head")
    assert (head.activation, head.layer_norm_epsilon) == ("gelu", 1e-12)


def test_a_bert_encoder_keeps_todays_head():
    head = FillMaskModel(_encoder()).get_layer("mlm_head")
    assert (head.activation, head.layer_norm_epsilon) == ("gelu", 1e-12)
    assert np.isclose(head.layer_norm.epsilon, 1e-12)
