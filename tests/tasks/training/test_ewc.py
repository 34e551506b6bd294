"""EWC: the penalty λ Σ F (θ − θ₀)², its gradient, its Fisher, and the run directory's copy."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.training.ewc import (
    EWC,
    attach_ewc,
    estimate_fisher,
    ewc_variables,
    load_fisher,
    normalize_fisher,
    save_fisher,
)
from nlpzoo.tasks.training.l2sp import L2SP, attach_l2sp
from nlpzoo.zoo import build_model
from nlpzoo.zoo.runs.ewc_anchor import anchor_with_ewc


def _classifier(**options):
    return build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=60, num_layers=1,
                       hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
                       **options)


def _batches(count, seed=0, size=4):
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        # Tokens from a small range, so that a token occurs more than once in a batch.
        features = {"token_ids": rng.integers(4, 12, (size, 10)).astype("int32"),
                    "segment_ids": np.zeros((size, 10), "int32"),
                    "padding_mask": np.ones((size, 10), "int32")}
        batches.append((features, rng.integers(0, 3, (size,)).astype("int32")))
    return batches


def _random_fisher(variables, seed=2):
    rng = np.random.default_rng(seed)
    return {v.path: rng.uniform(0.0, 3.0, v.shape).astype("float32") for v in variables}


def _move(variables, seed=1, scale=0.05):
    """Moves each variable by random noise; returns the values before (θ₀)."""
    rng = np.random.default_rng(seed)
    before = [np.array(v) for v in variables]
    for variable in variables:
        variable.assign(variable + rng.normal(0, scale, variable.shape).astype("float32"))
    return before


def test_the_penalty_and_its_gradient_are_exact():
    strength = 0.3
    model = _classifier()
    variables = ewc_variables(model)
    fisher = _random_fisher(variables)
    attach_ewc(variables, strength, fisher)
    assert all(float(loss) == 0.0 for loss in model.losses)  # 0 at θ₀
    theta0 = _move(variables)
    with tf.GradientTape() as tape:
        penalty = tf.add_n(model.losses)
    gradients = tape.gradient(penalty, variables)
    expected = strength * sum(np.sum(fisher[v.path] * (np.array(v, "float64") - t0) ** 2)
                              for v, t0 in zip(variables, theta0))
    np.testing.assert_allclose(float(penalty), expected, rtol=1e-5)
    for variable, gradient, t0 in zip(variables, gradients, theta0):
        np.testing.assert_allclose(
            np.array(gradient), 2 * strength * fisher[variable.path] * (np.array(variable) - t0),
            atol=1e-6, err_msg=variable.path)
    head = [v for v in model.trainable_variables if not v.path.startswith("transformer/")]
    with tf.GradientTape() as tape:
        penalty = tf.add_n(model.losses)
    assert all(g is None for g in tape.gradient(penalty, head))


def test_with_a_fisher_of_ones_it_is_l2sp():
    strength = 0.7
    ewc_model, l2sp_model = _classifier(), _classifier()
    l2sp_model.set_weights(ewc_model.get_weights())
    ewc_vars, l2sp_vars = ewc_variables(ewc_model), ewc_variables(l2sp_model)
    regularizers = attach_ewc(ewc_vars, strength,
                              {v.path: np.ones(v.shape) for v in ewc_vars})
    assert all(type(r) is EWC and isinstance(r, L2SP) for r in regularizers)
    attach_l2sp(l2sp_vars, strength)
    _move(ewc_vars)
    _move(l2sp_vars)
    tapes = []
    for model, variables in ((ewc_model, ewc_vars), (l2sp_model, l2sp_vars)):
        with tf.GradientTape() as tape:
            penalty = tf.add_n(model.losses)
        tapes.append((float(penalty), tape.gradient(penalty, variables)))
    (ewc_penalty, ewc_gradients), (l2sp_penalty, l2sp_gradients) = tapes
    assert ewc_penalty > 1e-3
    np.testing.assert_allclose(ewc_penalty, l2sp_penalty, rtol=1e-6)
    for ewc_gradient, l2sp_gradient in zip(ewc_gradients, l2sp_gradients):
        np.testing.assert_allclose(np.array(ewc_gradient), np.array(l2sp_gradient), atol=1e-7)


def test_the_fisher_is_the_mean_squared_gradient_of_each_batch():
    model = _classifier()
    variables = ewc_variables(model)
    batches = _batches(5)
    fisher = estimate_fisher(model, batches, variables, max_batches=3)  # the first 3 only
    # Brute force: each batch's loss gradient, eagerly, made dense, squared; their mean.
    expected = {v.path: np.zeros(v.shape, "float64") for v in variables}
    for x, y in batches[:3]:
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x=x, y=y, y_pred=model(x, training=False),
                                      training=False)
        for variable, gradient in zip(variables, tape.gradient(loss, variables)):
            if gradient is not None:
                expected[variable.path] += np.square(np.array(tf.convert_to_tensor(gradient),
                                                              "float64")) / 3
    assert list(fisher) == [v.path for v in variables]
    token = next(p for p in fisher if p.endswith("token_embedding/embeddings"))
    assert np.count_nonzero(fisher[token][4:12].sum(axis=1)) == 8  # the tokens used, only
    assert np.all(fisher[token][:4] == 0) and np.all(fisher[token][12:] == 0)
    for path, values in fisher.items():
        np.testing.assert_allclose(values, expected[path], rtol=1e-4, atol=1e-10,
                                   err_msg=path)


def test_a_linear_model_has_the_fisher_of_its_formula():
    # mse of x·w over a batch of B: the gradient is (2/B) Xᵀ(Xw − y).
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, use_bias=False)])
    model.compile("sgd", "mse")
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(4, 3)), rng.normal(size=(4, 1))) for _ in range(4)]
    [fisher] = estimate_fisher(model, batches, model.trainable_variables).values()
    w = np.array(model.layers[0].kernel, "float64")
    expected = np.mean([np.square(2 / 4 * x.T @ (x @ w - y)) for x, y in batches], axis=0)
    np.testing.assert_allclose(fisher, expected, rtol=1e-5)


def test_normalised_the_mean_is_one_and_a_zero_fisher_is_refused():
    fisher = normalize_fisher({"a": np.array([[1.0, 5.0]]), "b": np.array([0.0, 2.0])})
    assert np.mean(np.concatenate([v.ravel() for v in fisher.values()])) == pytest.approx(1.0)
    np.testing.assert_allclose(fisher["a"], [[0.5, 2.5]])
    with pytest.raises(ValueError, match="do not reach"):
        normalize_fisher({"a": np.zeros(3)})


def test_strength_and_fisher_are_checked_and_only_the_strength_is_saved(tmp_path):
    model = _classifier(compile=False)
    variables = ewc_variables(model)
    fisher = {v.path: np.ones(v.shape) for v in variables}
    for strength in (0.0, -1.0):
        with pytest.raises(ValueError, match="strength"):
            attach_ewc(variables, strength, fisher)
    with pytest.raises(ValueError, match="has no values"):
        attach_ewc(variables, 0.1, dict(list(fisher.items())[1:]))
    with pytest.raises(ValueError, match="shape"):
        attach_ewc(variables, 0.1, {**fisher, variables[0].path: np.ones(7)})
    with pytest.raises(ValueError, match="negative"):
        attach_ewc(variables, 0.1, {**fisher, variables[0].path: -np.ones(variables[0].shape)})
    assert all(v.regularizer is None for v in variables)  # nothing attached by a refusal
    attach_ewc(variables, 0.1, fisher)
    _move(variables)
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(variables[0].regularizer))
    assert type(restored) is EWC and restored.alpha == 0.1 and restored.fisher is None
    path = str(tmp_path / "model.keras")
    model.save(path)
    assert keras.saving.load_model(path).losses == []  # a reloaded model has no penalty


def test_a_run_directory_keeps_the_fisher_and_a_resumed_run_reads_it(tmp_path):
    batches = _batches(4)
    keras.utils.set_random_seed(3)
    first = _classifier()
    fisher, stored = anchor_with_ewc(first, 0.5, str(tmp_path), batches, max_batches=2)
    assert not stored and os.listdir(tmp_path) == ["ewc_fisher.npz"]
    keras.utils.set_random_seed(3)
    expected = normalize_fisher(estimate_fisher(_classifier(), batches, max_batches=2))
    saved = load_fisher(str(tmp_path / "ewc_fisher.npz"))
    for path in expected:  # the same seeded model, the same batches: the same estimate
        np.testing.assert_allclose(saved[path], expected[path], rtol=1e-5, err_msg=path)
    # A resumed run reads the file, whatever it holds now: it estimates nothing.
    changed = {path: values * 3.0 for path, values in saved.items()}
    save_fisher(changed, str(tmp_path / "ewc_fisher.npz"))
    second = _classifier()
    fisher, stored = anchor_with_ewc(second, 0.5, str(tmp_path), batches=[])
    assert stored
    for variable in ewc_variables(second):
        np.testing.assert_array_equal(np.array(variable.regularizer.fisher),
                                      changed[variable.path])
    other = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=60,
                        num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32)
    with pytest.raises(ValueError, match="holds weights the model has not|has no values"):
        anchor_with_ewc(other, 0.5, str(tmp_path), batches=[])


def _distance_after_fit(strength, fisher_scale=None):
    keras.utils.set_random_seed(7)
    model = _classifier(learning_rate=1e-2)
    variables = ewc_variables(model)
    theta0 = [np.array(v) for v in variables]
    if strength:
        attach_ewc(variables, strength, {v.path: np.full(v.shape, fisher_scale)
                                         for v in variables})
    features = {name: np.concatenate([x[name] for x, _ in _batches(6)])
                for name in ("token_ids", "segment_ids", "padding_mask")}
    labels = np.concatenate([y for _, y in _batches(6)])
    model.fit(features, labels, epochs=1, batch_size=4, shuffle=False, verbose=0)
    return np.sqrt(sum(np.sum((np.array(v) - t0) ** 2) for v, t0 in zip(variables, theta0)))


def test_training_with_a_large_strength_stays_near_the_start():
    free = _distance_after_fit(None)
    anchored = _distance_after_fit(100.0, fisher_scale=1.0)
    assert free > 0 and 0 < anchored < 0.5 * free, (anchored, free)
