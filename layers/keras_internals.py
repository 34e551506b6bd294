"""The only module that touches private Keras API; everything else calls these functions.

Keras 3 keeps some things we rely on private: the key an optimizer files a
variable under, whether it decays a variable, the learning rate or schedule
it was given, its table of built variables, its shared weight-decay pass and
its count of batches (under gradient accumulation `iterations` counts updates);
a model's running mean of the loss, the step that builds its loss and
metrics from a first batch, and the data adapters that turn what `fit` is
given into a `tf.data.Dataset`. There is no public way to get them, so each has
one small named function here, and `tests/layers/test_keras_internals.py`
checks every one of them against the installed Keras. That is what the
`keras>=3.15,<3.16` pin in setup.cfg protects: before moving the pin, run
that test file; a failure there names the internal a Keras release renamed
or changed, and this module is the one place to adapt.

The module sits in `layers` (the bottom package) so that `tasks` and `zoo`
may import it; it imports nothing of the project.

Examples:
>>> import keras
>>> optimizer = keras.optimizers.AdamW(1e-3, weight_decay=0.01)
>>> optimizer.exclude_from_weight_decay(var_names=["bias"])
>>> uses_weight_decay(optimizer, keras.Variable([0.0], name="bias"))
False
"""

import keras
from keras.src.trainers.data_adapters import array_data_adapter
from keras.src.trainers.data_adapters import generator_data_adapter
from keras.src.trainers.data_adapters import tf_dataset_adapter


# === Optimizers ===

def variable_key(optimizer, variable):
    """The key `optimizer` files `variable` under (private `_var_key`).

    It is the same for a `keras.Variable` and the backend variable that
    `update_step` receives, which has no `path`: look per-variable values up
    by this key.

    Examples:
    >>> optimizer = keras.optimizers.Adam()
    >>> kernel = keras.Variable([1.0], name="kernel")
    >>> variable_key(optimizer, kernel) == variable_key(optimizer, kernel.value)
    True
    """
    return optimizer._var_key(variable)


def is_built_for(optimizer, variable):
    """Whether `optimizer` was built for `variable`, i.e. keeps slots to train it
    (private `_trainable_variables_indices`; Keras keeps no public table).

    Examples:
    >>> optimizer = keras.optimizers.Adam()
    >>> kernel, other = keras.Variable([1.0]), keras.Variable([2.0])
    >>> optimizer.build([kernel])
    >>> is_built_for(optimizer, kernel), is_built_for(optimizer, other)
    (True, False)
    """
    return variable_key(optimizer, variable) in optimizer._trainable_variables_indices


def uses_weight_decay(optimizer, variable):
    """Whether `optimizer` decays `variable` (private `_use_weight_decay`): False for
    the names and variables given to `exclude_from_weight_decay`.

    Examples:
    >>> optimizer = keras.optimizers.AdamW(weight_decay=0.01)
    >>> optimizer.exclude_from_weight_decay(var_names=["gamma"])
    >>> [uses_weight_decay(optimizer, keras.Variable([0.0], name=name))
    ...  for name in ("kernel", "gamma")]
    [True, False]
    """
    return optimizer._use_weight_decay(variable)


def configured_learning_rate(optimizer):
    """The learning rate `optimizer` was given (private `_learning_rate`): a
    `LearningRateSchedule`, a callable, or the variable that holds a fixed rate.

    `optimizer.learning_rate` is only its value at the next step.

    Examples:
    >>> schedule = keras.optimizers.schedules.ExponentialDecay(1e-3, 10, 0.5)
    >>> configured_learning_rate(keras.optimizers.Adam(schedule)) is schedule
    True
    >>> isinstance(configured_learning_rate(keras.optimizers.Adam(1e-3)), keras.Variable)
    True
    """
    return optimizer._learning_rate


def batches_taken(optimizer):
    """How many batches `optimizer` has taken, as an int (private `_iterations`; a
    `LossScaleOptimizer` is looked through).

    With `gradient_accumulation_steps=n` Keras's public `optimizer.iterations`
    counts updates (one every n batches): this is the count of `apply` calls,
    the updates times n plus the batches of an update still accumulating.
    Without accumulation the two are the same.

    Examples:
    >>> optimizer = keras.optimizers.SGD(gradient_accumulation_steps=2)
    >>> kernel = keras.Variable([1.0])
    >>> for _ in range(3):
    ...     optimizer.apply([keras.ops.ones((1,))], [kernel])
    >>> batches_taken(optimizer), int(optimizer.iterations.numpy())
    (3, 1)
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    return int(optimizer._iterations.numpy())


class WithoutSharedWeightDecay:
    """Mixin for a Keras optimizer whose `update_step` decays each variable itself.

    Keras's `apply` runs one decay pass over all variables at the base rate
    (private `_apply_weight_decay`) before the update steps; this switches it
    off, so a variable is not decayed twice. Put it first among the bases.

    Examples:
    >>> class NoDecayAdamW(WithoutSharedWeightDecay, keras.optimizers.AdamW):
    ...     pass
    >>> kernel = keras.Variable([1.0])
    >>> optimizer = NoDecayAdamW(learning_rate=0.5, weight_decay=0.5)
    >>> optimizer.apply([keras.ops.zeros((1,))], [kernel])
    >>> float(kernel.numpy()[0])  # no gradient, no decay: unchanged
    1.0
    """

    def _apply_weight_decay(self, variables):
        """Off: the subclass's `update_step` decays each variable."""


# === Models ===

def loss_tracker(model):
    """The `keras.metrics.Mean` of the loss that `fit` reports as `loss`, or None
    before `compile` (private `_loss_tracker`).

    Examples:
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> loss_tracker(model) is None
    True
    >>> model.compile("sgd", "mse")
    >>> type(loss_tracker(model)).__name__, loss_tracker(model).name
    ('Mean', 'loss')
    """
    return getattr(model, "_loss_tracker", None)


def compiled_loss(model, y_true, y_pred, sample_weight=None):
    """The loss given to `compile` alone, on `y_true` and `y_pred` (private
    `_compile_loss`): without `model.losses` and whatever `compute_loss` adds;
    None when `model` was compiled without a loss.

    Examples:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> float(compiled_loss(model, np.array([[1.0]]), np.array([[3.0]])))
    4.0
    """
    loss = getattr(model, "_compile_loss", None)
    return None if loss is None else loss(y_true, y_pred, sample_weight)


def build_from_batch(model, batch):
    """Builds `model`'s compiled loss, metrics and optimizer from one `batch` of
    `(features, labels)`, as `fit` does on its first batch (private `_symbolic_build`).

    Call it after `compile`, where `fit`'s own build would not do (a custom
    training loop, or a distribution strategy that cannot reduce the batch).

    Examples:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse", metrics=["mae"])
    >>> model.optimizer.built
    False
    >>> build_from_batch(model, (np.zeros((2, 1)), np.zeros((2, 1))))
    >>> model.optimizer.built
    True
    """
    model._symbolic_build(data_batch=batch)


def skip_build_in_fit(model):
    """Stops `fit`, `evaluate` and `predict` from building `model` from their first
    batch again (private `_maybe_symbolic_build`): for a model already built with
    `build_from_batch`.

    Examples:
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> skip_build_in_fit(model)
    >>> model._maybe_symbolic_build(data_batch=None) is None
    True
    """
    model._maybe_symbolic_build = lambda *args, **kwargs: None


def gradient_clipping(optimizer):
    """The function `optimizer` clips a step's gradients with (private
    `_clip_gradients`, the step of `apply` that applies `clipnorm`, `clipvalue`
    and `global_clipnorm`).

    Examples:
    >>> import keras
    >>> clip = gradient_clipping(keras.optimizers.SGD(clipvalue=1.0))
    >>> [float(g) for g in clip([keras.ops.convert_to_tensor(3.0)])]
    [1.0]
    """
    return optimizer._clip_gradients


def replace_gradient_clipping(optimizer, clip):
    """Makes `optimizer` clip a step's gradients with `clip(gradients) -> gradients`
    (a list, `None` where a variable has no gradient) instead of its own.

    Examples:
    >>> import keras
    >>> optimizer = keras.optimizers.SGD(clipvalue=1.0)
    >>> replace_gradient_clipping(optimizer, lambda gradients: gradients)
    >>> "_clip_gradients" in vars(optimizer)
    True
    """
    optimizer._clip_gradients = clip


def save_without_optimizer_state(model, path):
    """`model.save(path)` with the optimizer's configuration but not its state.

    Keras 3 has no `include_optimizer`: a compiled model's `.keras` file holds
    every slot of its optimizer (AdamW: two per weight, twice the weights'
    size). Here the model's optimizer is swapped, for the save only, for an
    unbuilt one of the same configuration, so the file keeps the compile
    config (a loaded model predicts, evaluates and trains on) and no slots;
    a run's optimizer state lives in its training checkpoints. Loading the
    file builds a fresh optimizer, as for a model never trained (Keras then
    warns that it skipped the saved optimizer's variables: harmless, and
    silenced by `import nlpzoo`).

    Examples:
    >>> import os, tempfile, numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(keras.optimizers.AdamW(0.1), "mse")
    >>> _ = model.fit(np.ones((2, 1)), np.ones((2, 1)), verbose=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
    >>> save_without_optimizer_state(model, path)
    >>> model.optimizer.built  # the model's own optimizer is back, state and all
    True
    >>> keras.saving.load_model(path).optimizer.learning_rate.numpy().round(3)
    np.float32(0.1)
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not getattr(optimizer, "built", False):
        model.save(path)
        return
    model.optimizer = optimizer.__class__.from_config(optimizer.get_config())
    try:
        model.save(path)
    finally:
        model.optimizer = optimizer


# === Data adapters ===

DATA_ADAPTERS = (array_data_adapter.ArrayDataAdapter,
                 generator_data_adapter.GeneratorDataAdapter,
                 tf_dataset_adapter.TFDatasetAdapter)


def transform_keras_datasets(transform):
    """Makes `fit`, `evaluate` and `predict` pass each `tf.data.Dataset` that Keras
    builds from their data (NumPy arrays, generators, datasets) through
    `transform(dataset) -> dataset` (private data adapters' `get_tf_dataset`).

    Applying the same `transform` twice changes nothing. Returns a function that
    puts back what was there before.

    Examples:
    >>> import numpy as np
    >>> seen = []
    >>> restore = transform_keras_datasets(lambda dataset: seen.append(dataset) or dataset)
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(np.ones((2, 1)), np.ones((2, 1)), verbose=0)
    >>> restore()
    >>> len(seen)
    1
    """
    replaced = {}
    for adapter in DATA_ADAPTERS:
        original = adapter.get_tf_dataset
        if getattr(original, "dataset_transform", None) is transform:
            continue

        def get_tf_dataset(self, _original=original):
            return transform(_original(self))

        get_tf_dataset.dataset_transform = transform
        replaced[adapter] = original
        adapter.get_tf_dataset = get_tf_dataset

    def restore():
        for adapter, original in replaced.items():
            adapter.get_tf_dataset = original

    return restore
