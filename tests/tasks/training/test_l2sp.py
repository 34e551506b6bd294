"""L2-SP (Li et al. 2018): the penalty α‖θ − θ₀‖², its gradient, training with it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.training.l2sp import L2SP, attach_l2sp
from nlpzoo.zoo import build_model

TAGS = ["O", "B-PER", "I-PER"]


def _encoder_variables(model):
    return [v for v in model.trainable_variables if v.path.startswith("transformer/")]


def _classifier(**options):
    return build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=60, num_layers=1,
                       hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
                       **options)


def _data(seed=0, size=8):
    rng = np.random.default_rng(seed)
    features = {"token_ids": rng.integers(4, 60, (size, 12)).astype("int32"),
                "segment_ids": np.zeros((size, 12), "int32"),
                "padding_mask": np.ones((size, 12), "int32")}
    return features, rng.integers(0, 3, (size,)).astype("int32")


def _move(variables, seed=1, scale=0.05):
    """Moves each variable by random noise; returns the values before (θ₀)."""
    rng = np.random.default_rng(seed)
    before = [np.array(v) for v in variables]
    for variable in variables:
        variable.assign(variable + rng.normal(0, scale, variable.shape).astype("float32"))
    return before


def test_the_penalty_is_zero_at_attach_time():
    model = _classifier()
    assert sum(float(loss) for loss in model.losses) == 0.0  # nothing before
    regularizers = attach_l2sp(_encoder_variables(model), alpha=0.3)
    assert len(model.losses) == len(regularizers) == len(_encoder_variables(model)) > 10
    assert all(float(loss) == 0.0 for loss in model.losses)


def test_the_penalty_and_its_gradient_are_exact():
    alpha = 0.3
    model = _classifier()
    variables = _encoder_variables(model)
    attach_l2sp(variables, alpha)
    theta0 = _move(variables)
    with tf.GradientTape() as tape:
        penalty = tf.add_n(model.losses)
    gradients = tape.gradient(penalty, variables)
    expected = alpha * sum(np.sum((np.array(v, "float64") - t0) ** 2)
                           for v, t0 in zip(variables, theta0))
    np.testing.assert_allclose(float(penalty), expected, rtol=1e-5)
    for variable, gradient, t0 in zip(variables, gradients, theta0):
        np.testing.assert_allclose(np.array(gradient), 2 * alpha * (np.array(variable) - t0),
                                   atol=1e-6, err_msg=variable.path)
    # The head has no penalty: its gradient is none at all.
    head = [v for v in model.trainable_variables if not v.path.startswith("transformer/")]
    with tf.GradientTape() as tape:
        penalty = tf.add_n(model.losses)
    assert all(g is None for g in tape.gradient(penalty, head))


def test_the_reference_is_a_variable_not_a_constant():
    model = _classifier()
    variables = _encoder_variables(model)
    [regularizer] = attach_l2sp(variables[:1], alpha=1.0)
    assert isinstance(regularizer.reference, keras.Variable)
    assert regularizer.reference.trainable is False
    assert all(v is not regularizer.reference for v in model.variables)  # not saved with it
    theta0 = np.array(variables[0])
    np.testing.assert_array_equal(np.array(regularizer.reference), theta0)
    variables[0].assign(variables[0] + 1.0)  # the copy does not follow the weights
    np.testing.assert_array_equal(np.array(regularizer.reference), theta0)


def test_compile_loss_and_own_compute_loss_both_add_the_penalty():
    alpha = 0.2
    classifier = _classifier()
    tagger = build_model("bert_tiny_crf_tagger", labels=TAGS, vocabulary_size=60, num_layers=1,
                         hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0)
    features, labels = _data()
    word_features = dict(features, word_starts=np.tile(np.arange(1, 9, dtype="int32"), (8, 1)),
                         word_mask=np.ones((8, 8), "int32"))
    for model, x, y in ((classifier, features, labels),
                        (tagger, word_features, np.zeros((8, 8), "int32"))):
        variables = _encoder_variables(model)
        attach_l2sp(variables, alpha)
        theta0 = _move(variables)
        y_pred = model(x, training=False)
        with_penalty = float(model.compute_loss(x, y, y_pred))
        for variable in variables:
            variable.regularizer = None
        without = float(model.compute_loss(x, y, y_pred))
        penalty = alpha * sum(np.sum((np.array(v, "float64") - t0) ** 2)
                              for v, t0 in zip(variables, theta0))
        assert penalty > 1e-3 and without > 0
        np.testing.assert_allclose(with_penalty - without, penalty, rtol=1e-4)


def _distance_after_fit(alpha, jit_compile):
    keras.utils.set_random_seed(7)
    model = _classifier(learning_rate=1e-2, jit_compile=jit_compile)
    variables = _encoder_variables(model)
    theta0 = [np.array(v) for v in variables]
    if alpha:
        attach_l2sp(variables, alpha)
    model.fit(*_data(size=24), epochs=1, batch_size=4, shuffle=False, verbose=0)
    assert model.jit_compile is jit_compile  # really compiled, not silently turned off
    return np.sqrt(sum(np.sum((np.array(v) - t0) ** 2) for v, t0 in zip(variables, theta0)))


@pytest.fixture(scope="module")
def free_distance():
    """How far the encoder moves in the same fit without L2-SP."""
    return _distance_after_fit(None, jit_compile=False)


@pytest.mark.parametrize("jit_compile", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_training_with_a_large_alpha_stays_near_the_start(free_distance, jit_compile):
    anchored = _distance_after_fit(100.0, jit_compile)
    assert free_distance > 0 and anchored > 0
    assert anchored < 0.5 * free_distance, (anchored, free_distance)


def test_alpha_must_be_positive_and_other_regularizers_are_kept():
    dense = keras.layers.Dense(2, kernel_regularizer="l2")
    dense.build((None, 3))
    for alpha in (0.0, -1.0):
        with pytest.raises(ValueError, match="alpha"):
            attach_l2sp([dense.bias], alpha)
        with pytest.raises(ValueError, match="alpha"):
            L2SP(alpha)
    with pytest.raises(ValueError, match="already has a regularizer"):
        attach_l2sp([dense.bias, dense.kernel], 0.1)
    assert dense.bias.regularizer is None  # nothing attached when one variable is refused
    attach_l2sp([dense.bias], 0.1)
    first = dense.bias.regularizer
    attach_l2sp([dense.bias], 0.2)  # again: a fresh reference
    assert dense.bias.regularizer is not first and dense.bias.regularizer.alpha == 0.2


def test_only_alpha_is_serialised_and_a_reloaded_model_has_no_penalty(tmp_path):
    penalty = L2SP(0.5, reference=keras.Variable(np.zeros(2), trainable=False))
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(penalty))
    assert type(restored) is L2SP and restored.alpha == 0.5 and restored.reference is None
    with pytest.raises(ValueError, match="no reference"):
        restored(np.zeros(2))
    model = _classifier(compile=False)
    attach_l2sp(_encoder_variables(model), 0.5)
    _move(_encoder_variables(model))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert all(v.regularizer is None for v in loaded.trainable_variables)
    assert loaded.losses == []
