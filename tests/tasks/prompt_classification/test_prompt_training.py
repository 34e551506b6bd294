"""Prompt classification fine-tunes: a few steps lower the loss, and the model saves,
loads and predicts the same."""

import os

import keras
import numpy as np
import pytest

from nlpzoo.zoo import load_pretrained
from tests.helpers.paths import ROOT

CHECKPOINT = os.path.join(ROOT, "tests", "fixtures", "tiny_bert_mlm")
TEXTS = ["the cat sat on the mat", "he was happy in the house", "the dog was sad",
         "they walk to the river", "she read a book at night", "my dog was small and sad",
         "we play in the big city", "the old house by the river"]
LABELS = ["pos", "pos", "neg", "neg", "pos", "neg", "pos", "neg"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    model = load_pretrained(CHECKPOINT, "prompt_classification",
                            patterns=["{text} . it was [MASK] .", "[MASK] : {text}"],
                            verbalizer={"pos": "happy", "neg": "sad"}, learning_rate=2e-3,
                            total_steps=12, jit_compile=False)
    before = model.evaluate(TEXTS, LABELS, return_dict=True, verbose=0)["loss"]
    model.fit(TEXTS, LABELS, epochs=6, batch_size=4, verbose=0)
    after = model.evaluate(TEXTS, LABELS, return_dict=True, verbose=0)["loss"]
    path = str(tmp_path_factory.mktemp("prompt") / "model.keras")
    model.save(path)
    return model, before, after, path


@pytest.mark.slow
def test_a_few_training_steps_lower_the_loss(trained):
    _, before, after, _ = trained
    assert after < before - 0.05, (before, after)


@pytest.mark.slow
def test_the_saved_model_loads_and_predicts_the_same(trained):
    model, _, _, path = trained
    loaded = keras.saving.load_model(path)
    assert loaded.label_names == ["neg", "pos"]
    assert loaded.task.options.patterns == model.task.options.patterns
    for mine, theirs in zip(model.predict(TEXTS), loaded.predict(TEXTS)):
        assert mine["label"] == theirs["label"]
        np.testing.assert_allclose(list(mine["scores"].values()),
                                   list(theirs["scores"].values()), atol=1e-6)


def test_adapters_act_on_the_encoder_as_for_classification():
    def trainable(model):
        return {variable.path for variable in model.trainable_variables}

    prompt = trainable(load_pretrained(CHECKPOINT, "prompt_classification",
                                       patterns=["{text} [MASK] ."],
                                       verbalizer={"pos": "happy", "neg": "sad"},
                                       adapter_size=4))
    pooled = trainable(load_pretrained(CHECKPOINT, "classification", adapter_size=4))
    encoder = {name for name in prompt if name.startswith("transformer/")}
    assert any("adapter" in name for name in encoder)
    assert encoder == {name for name in pooled if name.startswith("transformer/")}
    # The rest is the masked-LM head (pretrained: it keeps training).
    assert {name.split("/")[0] for name in prompt - encoder} == {"mlm_head"}


def test_the_pretrained_head_learns_at_the_encoders_rate_unless_told():
    options = dict(patterns=["{text} [MASK] ."], verbalizer={"pos": "happy", "neg": "sad"})
    same = load_pretrained(CHECKPOINT, "prompt_classification", **options)
    assert type(same.optimizer).__name__ == "AdamW"  # one rate: no layer-wise optimizer
    told = load_pretrained(CHECKPOINT, "prompt_classification", head_learning_rate=1e-3,
                           learning_rate=1e-4, **options)
    factors = {v.path: told.optimizer.multiplier(v.path) for v in told.trainable_variables}
    assert {round(factor, 6) for path, factor in factors.items()
            if path.startswith("mlm_head/")} == {10.0}
    assert {factor for path, factor in factors.items()
            if path.startswith("transformer/")} == {1.0}
