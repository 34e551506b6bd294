"""The private Keras API behind `nlpzoo.layers.keras_internals`, one test per internal.

Each test first checks that the internal is still there, then that it behaves
as the project relies on; a Keras release that renames or changes one fails
here, with the internal's name and the function to adapt, before any training
test fails for a reason that is hard to trace.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers import keras_internals


def _require(owner, attribute, function):
    assert hasattr(owner, attribute), (
        f"Keras {keras.__version__} has no `{type(owner).__name__}.{attribute}` any more: "
        f"adapt `keras_internals.{function}` (and the keras pin in setup.cfg)")


def _model(**compile_options):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="dense")])
    if compile_options:
        model.compile(**compile_options)
    return model


def _batch():
    return np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")


def test_var_key_is_the_same_for_a_variable_and_its_backend_value():
    optimizer = keras.optimizers.Adam()
    _require(optimizer, "_var_key", "variable_key")
    kernel, other = keras.Variable([1.0], name="kernel"), keras.Variable([1.0], name="kernel")
    # `update_step` receives the backend variable: both must be filed under one key.
    assert keras_internals.variable_key(optimizer, kernel) == \
        keras_internals.variable_key(optimizer, kernel.value), "_var_key(v) != _var_key(v.value)"
    assert keras_internals.variable_key(optimizer, kernel) != \
        keras_internals.variable_key(optimizer, other), "_var_key no longer tells variables apart"


def test_trainable_variables_indices_holds_the_built_variables():
    optimizer = keras.optimizers.Adam()
    _require(optimizer, "_trainable_variables_indices", "is_built_for")
    kernel, left_out = keras.Variable([1.0]), keras.Variable([2.0])
    optimizer.build([kernel])
    assert isinstance(optimizer._trainable_variables_indices, dict)
    assert keras_internals.is_built_for(optimizer, kernel), \
        "_trainable_variables_indices is not keyed by _var_key of the built variables"
    assert not keras_internals.is_built_for(optimizer, left_out)


def test_use_weight_decay_follows_exclude_from_weight_decay():
    optimizer = keras.optimizers.AdamW(weight_decay=0.01)
    _require(optimizer, "_use_weight_decay", "uses_weight_decay")
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    assert keras_internals.uses_weight_decay(optimizer, keras.Variable([0.0], name="kernel")) \
        is True
    assert keras_internals.uses_weight_decay(optimizer, keras.Variable([0.0], name="bias")) \
        is False, "_use_weight_decay ignores exclude_from_weight_decay"


def test_learning_rate_keeps_the_schedule_or_the_rate_as_given():
    schedule = keras.optimizers.schedules.ExponentialDecay(1e-3, 10, 0.5)
    scheduled = keras.optimizers.Adam(schedule)
    _require(scheduled, "_learning_rate", "configured_learning_rate")
    assert keras_internals.configured_learning_rate(scheduled) is schedule, \
        "_learning_rate no longer holds the LearningRateSchedule itself"
    fixed = keras_internals.configured_learning_rate(keras.optimizers.Adam(2e-5))
    assert isinstance(fixed, keras.Variable) and float(fixed.numpy()) == pytest.approx(2e-5)


def test_iterations_counts_batches_and_the_public_count_updates_under_accumulation():
    optimizer = keras.optimizers.SGD(1.0, gradient_accumulation_steps=3)
    _require(optimizer, "_iterations", "batches_taken")
    kernel = keras.Variable([0.0])
    for _ in range(7):
        optimizer.apply([keras.ops.ones((1,))], [kernel])
    assert keras_internals.batches_taken(optimizer) == 7, "_iterations no longer counts batches"
    assert int(optimizer.iterations.numpy()) == 2, "iterations no longer counts updates"
    # Two updates of the mean gradient (1), and one batch accumulating.
    assert float(kernel.numpy()[0]) == pytest.approx(-2.0)
    # The schedule is evaluated at the batch count of each update's last batch, u·n + n − 1
    # (what `PerUpdate` turns back into updates).
    seen = []
    optimizer = keras.optimizers.SGD(_RecordingSchedule(seen), gradient_accumulation_steps=2)
    for _ in range(5):
        optimizer.apply([keras.ops.ones((1,))], [kernel])
    assert seen == [1, 3], "the schedule is no longer evaluated at the count of batches"


class _RecordingSchedule(keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, seen):
        self.seen = seen

    def __call__(self, step):
        self.seen.append(int(step))
        return 0.1

    def get_config(self):
        return {}


def test_apply_weight_decay_is_the_shared_pass_that_the_mixin_switches_off():
    _require(keras.optimizers.AdamW(), "_apply_weight_decay", "WithoutSharedWeightDecay")

    class NoSharedDecay(keras_internals.WithoutSharedWeightDecay, keras.optimizers.AdamW):
        pass

    def step(optimizer):
        kernel = keras.Variable([1.0])
        optimizer.apply([keras.ops.zeros((1,))], [kernel])  # no gradient: only decay moves it
        return float(kernel.numpy()[0])

    assert step(keras.optimizers.AdamW(learning_rate=0.5, weight_decay=0.5)) == \
        pytest.approx(0.75), "AdamW no longer decays in its shared pass (lr × wd × v)"
    assert step(NoSharedDecay(learning_rate=0.5, weight_decay=0.5)) == 1.0, \
        "overriding _apply_weight_decay no longer switches the shared decay pass off"


def test_loss_tracker_is_the_mean_that_fit_reports_as_loss():
    assert keras_internals.loss_tracker(_model()) is None
    model = _model(optimizer="sgd", loss="mse")
    _require(model, "_loss_tracker", "loss_tracker")
    tracker = keras_internals.loss_tracker(model)
    assert isinstance(tracker, keras.metrics.Mean), "_loss_tracker is no longer a Mean"
    features, labels = _batch()
    logs = model.fit(features, labels, batch_size=4, epochs=1, verbose=0).history
    total, count = float(tracker.total.numpy()), float(tracker.count.numpy())
    assert total / count == pytest.approx(logs["loss"][0], rel=1e-5), \
        "_loss_tracker (total / count) is not the logged loss"


def test_compile_loss_is_the_compiled_loss_alone():
    model = _model(optimizer="sgd", loss="mse")
    _require(model, "_compile_loss", "compiled_loss")
    value = keras_internals.compiled_loss(model, np.array([[1.0]]), np.array([[3.0]]))
    assert float(value) == pytest.approx(4.0)


def test_symbolic_build_builds_from_one_batch():
    model = _model(optimizer="adam", loss="mse", metrics=["mae"])
    _require(model, "_symbolic_build", "build_from_batch")
    assert not model.optimizer.built
    keras_internals.build_from_batch(model, _batch())
    assert model.optimizer.built, "_symbolic_build(data_batch=...) no longer builds the optimizer"
    assert len(model.optimizer.variables) > 1


def test_maybe_symbolic_build_is_what_fit_calls_to_build():
    model = _model(optimizer="sgd", loss="mse")
    _require(model, "_maybe_symbolic_build", "skip_build_in_fit")
    calls = []
    model._maybe_symbolic_build = lambda *args, **kwargs: calls.append(kwargs)
    features, labels = _batch()
    model.fit(features, labels, batch_size=4, epochs=1, verbose=0)
    assert calls, "fit no longer calls _maybe_symbolic_build: skip_build_in_fit would do nothing"
    keras_internals.build_from_batch(model, _batch())
    keras_internals.skip_build_in_fit(model)
    model.fit(features, labels, batch_size=4, epochs=1, verbose=0)  # trains without it
    assert len(calls) == 1


def test_data_adapters_make_the_datasets_fit_evaluate_and_predict_iterate():
    for adapter in keras_internals.DATA_ADAPTERS:
        assert callable(getattr(adapter, "get_tf_dataset", None)), (
            f"Keras {keras.__version__}: {adapter.__name__}.get_tf_dataset is gone: adapt "
            "`keras_internals.transform_keras_datasets`")
    seen = []

    def record(dataset):
        seen.append(dataset)
        return dataset

    model = _model(optimizer="sgd", loss="mse")
    features, labels = _batch()
    restore = keras_internals.transform_keras_datasets(record)
    keras_internals.transform_keras_datasets(record)  # a second time: no second wrap
    try:
        model.fit(features, labels, batch_size=2, verbose=0)
        model.evaluate(features, labels, batch_size=2, verbose=0)
        model.predict(features, batch_size=2, verbose=0)
        model.fit(tf.data.Dataset.from_tensor_slices((features, labels)).batch(2), verbose=0)
    finally:
        restore()
    assert len(seen) == 4, "fit/evaluate/predict no longer build their data through the adapters"
    model.predict(features, verbose=0)
    assert len(seen) == 4, "restore did not put Keras's own adapters back"
