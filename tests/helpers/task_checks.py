"""One helper that checks every task model the same way (after KerasHub's run_task_test).

`run_task_test` is to task models what `tests.helpers.layer_checks.run_layer_test`
is to layers: it trains the model under XLA and proves it really compiled,
round-trips it through a `.keras` file, and trains it under a mixed-precision
policy, checking that its logits stay float32.
"""

import json
import os
import tempfile
from typing import NamedTuple

import keras
import numpy as np
from keras import ops


class TaskTestResult(NamedTuple):
    model: keras.Model  # the model trained under XLA (and saved and reloaded)
    history: keras.callbacks.History  # its `fit` history


def run_task_test(
    build_task_model,
    features,
    labels,
    *,
    expected_output_shape=None,
    float32_logits=True,
    epochs=1,
    mixed_precision_policies=("mixed_bfloat16",),
    mixed_precision_jit_compile=False,
    jit_compile=True,
):
    """Checks a compiled task model end to end.

    Args:
        build_task_model: called as `build_task_model(jit_compile=...)`, returns
            a new compiled task model (e.g. a `zoo.build_model` call). It is
            called again under each mixed-precision policy, so that the
            model's layers are created under that policy.
        features: a dict of NumPy arrays, one batch (every check uses it whole).
        labels: the labels of that batch.
        expected_output_shape: shape of `model(features)`, if given.
        float32_logits: whether the model promises float32 outputs (logits,
            CRF scores) under mixed precision; if False they must be in the
            policy's compute dtype.
        epochs: `fit` epochs under XLA, one step each (the caller may check
            that the model learned something).
        mixed_precision_policies: policies to train two steps under (the
            second starts from weights updated under the policy); the global
            policy is restored afterwards.
        mixed_precision_jit_compile: whether that step also runs under XLA.
        jit_compile: whether the first training runs under XLA (and must not fall
            back); False where another test already compiles the same layers.

    Returns:
        A `TaskTestResult`: the model trained under XLA, and its history.
    """
    batch_size = len(labels)
    model = build_task_model(jit_compile=jit_compile)
    history = _fit_and_check_it_trained(model, features, labels, epochs, batch_size)
    # Keras turns jit_compile off, with only a warning, when the model cannot be
    # compiled; a train step that ran with it still on was compiled by XLA.
    assert model.jit_compile is jit_compile, "the model fell back to jit_compile=False"

    outputs = model(features, training=False)
    if expected_output_shape is not None:
        assert tuple(keras.tree.flatten(outputs)[0].shape) == tuple(expected_output_shape)

    check_keras_file_round_trip(model, features)

    for policy in mixed_precision_policies:
        check_mixed_precision_training(build_task_model, features, labels, policy,
                                       float32_logits, mixed_precision_jit_compile)
    return TaskTestResult(model, history)


def _as_json(config):
    """The config as the `.keras` file stores it (JSON: tuples become lists)."""
    return json.loads(json.dumps(config))


def _numpy_leaves(structure):
    return [np.asarray(ops.convert_to_numpy(x)) for x in keras.tree.flatten(structure)]


def _fit_and_check_it_trained(model, features, labels, epochs, batch_size):
    before = [np.array(ops.convert_to_numpy(w), copy=True) for w in model.trainable_weights]
    history = model.fit(features, labels, epochs=epochs, batch_size=batch_size, verbose=0,
                        shuffle=False)
    losses = history.history["loss"]
    assert len(losses) == epochs and np.isfinite(losses).all(), losses
    after = [ops.convert_to_numpy(w) for w in model.trainable_weights]
    assert any(not np.array_equal(b, a) for b, a in zip(before, after)), "no weight moved"
    return history


def check_keras_file_round_trip(model, features):
    """A `.keras` file restores the class, the config and the `predict` output."""
    batch_size = len(keras.tree.flatten(features)[0])
    expected = model.predict(features, batch_size=batch_size, verbose=0)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)  # safe_mode on, no custom_objects
    assert type(loaded) is type(model)
    assert _as_json(loaded.get_config()) == _as_json(model.get_config())
    actual = loaded.predict(features, batch_size=batch_size, verbose=0)
    for a, e in zip(_numpy_leaves(actual), _numpy_leaves(expected), strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        if np.issubdtype(e.dtype, np.floating):
            np.testing.assert_allclose(a, e, atol=1e-6, rtol=1e-6)
        else:
            np.testing.assert_array_equal(a, e)
    return loaded


def check_mixed_precision_training(build_task_model, features, labels, policy,
                                   float32_logits=True, jit_compile=False):
    """Two `fit` steps under `policy`: finite losses, float32 variables, logits' dtype."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = build_task_model(jit_compile=jit_compile)
        _fit_and_check_it_trained(model, features, labels, epochs=2, batch_size=len(labels))
        assert model.jit_compile is jit_compile
        for variable in model.weights:
            if keras.backend.is_float_dtype(variable.dtype):
                assert variable.dtype == "float32", variable.path
        expected = "float32" if float32_logits else keras.DTypePolicy(policy).compute_dtype
        symbolic = [leaf.dtype for leaf in keras.tree.flatten(model.outputs)]
        computed = [leaf.dtype for leaf in keras.tree.flatten(model(features, training=False))]
        float_outputs = [d for d in symbolic + computed if keras.backend.is_float_dtype(d)]
        assert float_outputs, "the model has no float output to check"
        for dtype in float_outputs:
            assert keras.backend.standardize_dtype(dtype) == expected, (
                f"an output is {dtype} under {policy}, expected {expected}")
    finally:
        keras.mixed_precision.set_global_policy(previous)
