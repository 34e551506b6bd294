"""One helper that checks every layer the same way (after KerasHub's run_layer_test).

`run_layer_test` builds and calls the layer, round-trips it through
`get_config`/`from_config` and a `.keras` file, runs one `fit` step under XLA
and checks output dtypes under each mixed-precision policy. Functional models
built from their config (`layers.Encoder`) go through it too: they take a dict
of inputs as one argument, where layers take keyword tensors.
"""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf
from keras import ops

MIXED_POLICIES = ("mixed_float16", "mixed_bfloat16")


def _as_call_args(input_data, layer):
    """Layers take either one tensor or keyword tensors; models one tensor or a dict."""
    is_model = isinstance(layer, keras.Model) or (
        isinstance(layer, type) and issubclass(layer, keras.Model))
    if isinstance(input_data, dict) and not is_model:
        return (), dict(input_data)
    return (input_data,), {}


def _leaves(outputs):
    return [np.asarray(ops.convert_to_numpy(x)) for x in keras.tree.flatten(outputs)]


def _assert_outputs_close(actual, expected, atol=1e-5):
    actual, expected = _leaves(actual), _leaves(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, atol=atol, rtol=1e-5)


def _functional_model(layer, input_data):
    """Wraps `layer` in a functional model with the same inputs."""
    if isinstance(input_data, list):  # one argument that is a list of tensors
        inputs = [keras.Input(shape=value.shape[1:], dtype=value.dtype) for value in input_data]
    elif isinstance(input_data, dict):
        inputs = {
            name: keras.Input(shape=value.shape[1:], dtype=value.dtype, name=name)
            for name, value in input_data.items()
        }
    else:
        inputs = keras.Input(shape=input_data.shape[1:], dtype=input_data.dtype)
    args, kwargs = _as_call_args(inputs, layer)
    return keras.Model(inputs, layer(*args, **kwargs))


def check_xla_compiles(layer, input_data):
    """Lowers the layer's call to XLA HLO; raises if any op is not compilable."""
    args, kwargs = _as_call_args(input_data, layer)

    @tf.function(jit_compile=True)
    def call(*a, **k):
        return layer(*a, **k)

    hlo = call.experimental_get_compiler_ir(*args, **kwargs)(stage="hlo")
    assert "HloModule" in hlo
    return hlo


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output_shape=None,
    float32_outputs=(),
    run_training_check=True,
    run_mixed_precision_check=True,
):
    """Checks a layer end to end.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        input_data: a NumPy array, a list of arrays passed as one argument,
            or a dict of arrays passed as keyword args.
        expected_output_shape: shape of the (first) output, if given.
        float32_outputs: indices into the flattened outputs that must stay
            float32 under mixed precision (logits, CRF scores).
        run_training_check: one `fit` step with `jit_compile=True`.
        run_mixed_precision_check: dtype checks under each mixed policy.
    """
    args, kwargs = _as_call_args(input_data, layer_cls)

    # Build and call.
    layer = layer_cls(**init_kwargs)
    outputs = layer(*args, **kwargs)
    if expected_output_shape is not None:
        assert tuple(keras.tree.flatten(outputs)[0].shape) == tuple(
            expected_output_shape
        )
    for leaf in _leaves(outputs):
        assert np.all(np.isfinite(leaf.astype("float32")))

    # get_config / from_config round trip gives the same outputs.
    config = layer.get_config()
    restored = layer_cls.from_config(config)
    restored(*args, **kwargs)
    restored.set_weights(layer.get_weights())
    _assert_outputs_close(restored(*args, **kwargs), outputs)
    assert restored.get_config() == config

    # `.keras` round trip, safe_mode on, no custom_objects.
    model = _functional_model(layer, input_data)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
    _assert_outputs_close(loaded(input_data), model(input_data))

    # XLA: the call lowers to HLO, and a fit step runs with jit_compile=True.
    check_xla_compiles(layer, input_data)
    if run_training_check:
        run_xla_training_step(layer_cls, init_kwargs, input_data)

    if run_mixed_precision_check:
        for policy in MIXED_POLICIES:
            check_mixed_precision(
                layer_cls, init_kwargs, input_data, policy, float32_outputs
            )
    return layer


def run_xla_training_step(layer_cls, init_kwargs, input_data):
    """One fit step under XLA whose loss touches every float output."""
    layer = layer_cls(**init_kwargs)
    model = _functional_model(layer, input_data)
    per_example = []
    for leaf in keras.tree.flatten(model.outputs):
        if keras.backend.is_float_dtype(leaf.dtype):
            squared = ops.square(ops.cast(leaf, "float32"))
            per_example.append(ops.mean(squared, axis=tuple(range(1, len(leaf.shape)))))
    training_model = keras.Model(model.inputs, ops.sum(ops.stack(per_example, 1), 1))
    training_model.compile(
        optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=True
    )
    batch = len(keras.tree.flatten(input_data)[0])
    before = [np.array(ops.convert_to_numpy(w), copy=True) for w in layer.trainable_weights]
    training_model.fit(
        input_data, np.ones((batch,), "float32"), epochs=1, verbose=0, batch_size=batch
    )
    # Keras turns jit_compile off when a layer cannot be compiled; it must not.
    assert training_model.jit_compile is True
    after = [ops.convert_to_numpy(w) for w in layer.trainable_weights]
    if before:
        assert any(not np.array_equal(b, a) for b, a in zip(before, after))


def check_mixed_precision(layer_cls, init_kwargs, input_data, policy, float32_outputs=()):
    """Under `policy` variables stay float32 and outputs have the right dtype."""
    args, kwargs = _as_call_args(input_data, layer_cls)
    layer = layer_cls(**init_kwargs, dtype=policy)
    outputs = layer(*args, **kwargs)
    compute_dtype = keras.DTypePolicy(policy).compute_dtype
    for variable in layer.weights:
        assert variable.dtype == "float32", variable.path
    for index, leaf in enumerate(keras.tree.flatten(outputs)):
        if not keras.backend.is_float_dtype(leaf.dtype):
            continue
        expected = "float32" if index in float32_outputs else compute_dtype
        assert keras.backend.standardize_dtype(leaf.dtype) == expected, (
            f"output {index} is {leaf.dtype} under {policy}, expected {expected}"
        )
        assert np.all(np.isfinite(ops.convert_to_numpy(ops.cast(leaf, "float32"))))
