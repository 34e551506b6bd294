"""Per-part learning rates: the head's own rate and discriminative fine-tuning (ULMFiT)."""

import keras
import numpy as np
import pytest

from nlpzoo.tasks.training.layerwise_optimizer import LayerwiseAdamW
from nlpzoo.zoo import build_model

LEARNING_RATE, HEAD_LEARNING_RATE, DECAY = 1e-3, 2e-2, 0.5
TAGS = ["O", "B-PER", "I-PER"]


def _tagger(**options):
    return build_model("bert_tiny_crf_tagger", labels=TAGS, vocabulary_size=60, num_layers=2,
                       hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
                       attention_dropout=0.0, learning_rate=LEARNING_RATE,
                       head_learning_rate=HEAD_LEARNING_RATE, layer_lr_decay=DECAY, **options)


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    features = {"token_ids": rng.integers(4, 60, (4, 10)).astype("int32"),
                "segment_ids": np.zeros((4, 10), "int32"),
                "padding_mask": np.ones((4, 10), "int32"),
                "word_starts": np.tile(np.arange(1, 9, dtype="int32"), (4, 1)),
                "word_mask": np.ones((4, 8), "int32")}
    return features, rng.integers(0, 3, (4, 8)).astype("int32")


def _expected_rate(path):
    if not path.startswith("transformer/"):
        return HEAD_LEARNING_RATE
    if path.startswith("transformer/embeddings/"):
        return LEARNING_RATE * DECAY ** 2
    if path.startswith("transformer/block_0/"):
        return LEARNING_RATE * DECAY
    return LEARNING_RATE  # the top block and the pooler


def test_first_adam_step_of_each_part_moves_by_its_own_rate():
    # Adam's first step with gradient 1 is rate / (1 + ε / sqrt(1 - β2)): each variable of
    # the model moves by exactly its own rate (to 4e-5).
    model = _tagger()
    optimizer = LayerwiseAdamW(head_multiplier=HEAD_LEARNING_RATE / LEARNING_RATE,
                               layer_decay=DECAY, num_layers=2, learning_rate=LEARNING_RATE,
                               weight_decay=0.0)
    variables = model.trainable_variables
    before = [np.array(v) for v in variables]
    optimizer.apply([np.ones(v.shape, "float32") for v in variables], variables)
    rates = set()
    for variable, old in zip(variables, before):
        np.testing.assert_allclose(old - np.array(variable), _expected_rate(variable.path),
                                   rtol=1e-4, err_msg=variable.path)
        rates.add(_expected_rate(variable.path))
    assert len(rates) == 4  # embeddings, block 0, block 1 and pooler, head


def test_a_compiled_train_step_uses_the_rates():
    model = _tagger(weight_decay=0.0, jit_compile=True)
    assert isinstance(model.optimizer, LayerwiseAdamW)
    before = {v.path: np.array(v) for v in model.trainable_variables}
    model.train_on_batch(*_batch())
    assert model.jit_compile is True  # really compiled, not silently turned off
    change = {v.path: np.abs(np.array(v) - before[v.path]).max()
              for v in model.trainable_variables}
    # No variable moves further than its rate; the head's emissions (large gradients) by it.
    for path, moved in change.items():
        assert moved <= _expected_rate(path) * 1.0001, path
    np.testing.assert_allclose(change["emissions/kernel"], HEAD_LEARNING_RATE, rtol=2e-2)


def test_decoupled_weight_decay_follows_each_variable_rate():
    model = _tagger(weight_decay=0.1)
    optimizer = model.optimizer
    variables = [v for v in model.trainable_variables
                 if v.path in ("transformer/block_0/intermediate/kernel", "emissions/kernel")]
    before = [np.array(v) for v in variables]
    # Zero gradients: Adam moves nothing, so the change is the decay alone.
    optimizer.apply([np.zeros(v.shape, "float32") for v in variables], variables)
    for variable, old in zip(variables, before):
        np.testing.assert_allclose(np.array(variable), old * (1 - 0.1 * _expected_rate(
            variable.path)), rtol=1e-6, atol=1e-9)


def test_the_rule_is_saved_with_the_model(tmp_path):
    model = _tagger()
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    loaded = keras.saving.load_model(path).optimizer
    assert isinstance(loaded, LayerwiseAdamW)
    assert (loaded.head_multiplier, loaded.layer_decay, loaded.num_layers) == (
        HEAD_LEARNING_RATE / LEARNING_RATE, DECAY, 2)


def test_without_the_options_the_optimizer_is_plain_adamw():
    model = build_model("bert_tiny_classifier", vocabulary_size=60, num_layers=1)
    assert type(model.optimizer) is keras.optimizers.AdamW


def test_bad_values_are_refused_by_name():
    with pytest.raises(ValueError, match="layer_lr_decay"):
        build_model("bert_tiny_classifier", vocabulary_size=60, layer_lr_decay=1.5)
    with pytest.raises(ValueError, match="head_learning_rate"):
        build_model("bert_tiny_classifier", vocabulary_size=60, head_learning_rate=-1.0)
