"""EWC: L2-SP with each weight's pull scaled by how much the task's loss depends on it.

Elastic weight consolidation (Kirkpatrick et al. 2017, "Overcoming catastrophic
forgetting in neural networks"; in the NAACL 2019 transfer-learning tutorial
as a way to keep what pretraining learned): fine-tuning adds

    λ · Σ_i F_i (θ_i − θ0_i)²

to the loss, θ0 the weights training starts from (the pretrained ones) and
F the diagonal of the Fisher information: weights the loss is sensitive to
are held near θ0, the others move freely. With F = 1 it is L2-SP
(`tasks/training/l2sp.py`), whose regularizer `EWC` extends.

The Fisher here (`estimate_fisher`) is the empirical one of the *task*, at
θ0: the mean over the first `max_batches` training batches of the squared
gradient of the task's loss (each batch's mean loss), with the head as it is
initialised and dropout off (`training=False`, so that the estimate is a
function of the weights and the batches only). `normalize_fisher` divides it
by its mean over every regularised weight, so that mean(F) = 1 and λ is on
L2-SP's α scale (and the estimate's absolute scale, which depends on the
batch size and the loss's reduction, drops out). A run directory keeps it
(`save_fisher` / `load_fisher`), so a resumed run uses the same F.
"""

import io

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from nlpzoo.layers import transformer_of
from nlpzoo.tasks.io.atomic_files import write_binary_atomically
from nlpzoo.tasks.training.l2sp import L2SP, anchor_at_current_values

# Where the Fisher comes from (`--ewc_fisher`): the task's own training batches at θ0.
FISHER_SOURCES = ("task",)


@keras.saving.register_keras_serializable(package="nlpzoo")
class EWC(L2SP):
    """`alpha · Σ F ⊙ (w − w₀)²` in float32: `L2SP` with each square weighed by `fisher`.

    The gradient is 2α F ⊙ (w − w₀). `reference` (w₀) and `fisher` (F) are
    non-trainable `keras.Variable`s of the weight's shape (`attach_ewc`
    makes them); like `L2SP`, only `alpha` is serialised.

    Args:
        alpha: the strength λ, > 0.
        reference: w₀.
        fisher: F, ≥ 0.

    Examples:
    >>> import numpy as np
    >>> penalty = EWC(0.5, reference=keras.Variable(np.array([1.0, 2.0]), trainable=False),
    ...               fisher=keras.Variable(np.array([2.0, 0.0]), trainable=False))
    >>> float(penalty(np.array([2.0, 4.0]))), penalty.get_config()  # 0.5 × (2 × 1² + 0 × 2²)
    (1.0, {'alpha': 0.5})
    """

    def __init__(self, alpha, reference=None, fisher=None):
        super().__init__(alpha, reference)
        self.fisher = fisher

    def __call__(self, x):
        if self.fisher is None:
            raise ValueError("this EWC has no Fisher: attach it with attach_ewc")
        return super().__call__(x)

    def weigh(self, squares):
        return ops.cast(self.fisher, "float32") * squares


def ewc_variables(model):
    """The weights EWC (and L2-SP in `zoo.build_model`) anchors: the encoder's trainable ones.

    Examples:
    >>> import types
    >>> from nlpzoo.layers import Encoder
    >>> model = types.SimpleNamespace(encoder=Encoder(
    ...     vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16))
    >>> sorted({v.path.split("/")[0] for v in ewc_variables(model)})
    ['transformer']
    """
    return list(transformer_of(model.encoder).trainable_weights)


def estimate_fisher(model, batches, variables=None, max_batches=100):
    """The empirical diagonal Fisher at the model's current weights: the mean, over the first
    `max_batches` of `batches`, of each batch's squared loss gradient (unnormalised).

    The loss is the model's own (`model.compute_loss`, with `training=False`:
    no dropout), the gradient of each batch's mean loss. A weight the loss
    does not reach (a tagger's unused pooler) gets 0.

    Args:
        model: a compiled model (its loss is the task's).
        batches: a dataset (or iterable) of `(x, y)` or `(x, y, sample_weight)` batches.
        variables: the weights to estimate it for; by default `ewc_variables(model)`.
        max_batches: how many batches at most (≥ 1).

    Returns:
        {variable path: float32 array of the variable's shape}, in the order of `variables`.

    Examples:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.layers[0].kernel.assign([[0.0]])
    >>> batches = [(np.array([[1.0]]), np.array([[1.0]])), (np.array([[2.0]]), np.array([[0.0]]))]
    >>> fisher = estimate_fisher(model, batches, model.trainable_variables)
    >>> [values.tolist() for values in fisher.values()]  # gradients -2 and 0: (4 + 0) / 2
    [[[2.0]]]
    """
    if int(max_batches) != max_batches or max_batches < 1:
        raise ValueError(f"max_batches must be a whole number >= 1, got {max_batches}")
    variables = ewc_variables(model) if variables is None else list(variables)

    @tf.function(autograph=False, reduce_retracing=True)
    def squared_gradients(data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            y_pred = model(x, training=False)
            loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                      training=False)
        gradients = tape.gradient(ops.cast(loss, "float32"), variables)
        # An embedding's gradient is sparse (IndexedSlices): dense before squaring, so a
        # token that occurs twice adds the square of its summed gradient.
        return [tf.zeros(v.shape, "float32") if g is None
                else tf.square(tf.cast(tf.convert_to_tensor(g), "float32"))
                for v, g in zip(variables, gradients)]

    sums = [np.zeros(v.shape, "float64") for v in variables]
    count = 0
    for data in batches:
        if count == max_batches:
            break
        for total, square in zip(sums, squared_gradients(data)):
            total += np.asarray(square, "float64")
        count += 1
    if count == 0:
        raise ValueError("no batches to estimate the Fisher from")
    return {v.path: (total / count).astype("float32") for v, total in zip(variables, sums)}


def normalize_fisher(fisher):
    """`fisher` divided by its mean over every entry of every weight: mean(F) = 1, so that λ
    is on L2-SP's α scale (F = 1 everywhere is L2-SP).

    Raises:
        ValueError: the Fisher is 0 everywhere (or not finite): the loss does not reach
            the weights.

    Examples:
    >>> import numpy as np
    >>> normalize_fisher({"a": np.array([2.0, 6.0]), "b": np.array([0.0, 0.0])})  # mean 2
    {'a': array([1., 3.], dtype=float32), 'b': array([0., 0.], dtype=float32)}
    """
    total = sum(float(np.sum(values, dtype="float64")) for values in fisher.values())
    size = sum(np.size(values) for values in fisher.values())
    mean = total / max(size, 1)
    if not np.isfinite(mean) or mean <= 0:
        raise ValueError(f"the Fisher estimate's mean is {mean}: the loss's gradients do not "
                         "reach the anchored weights")
    return {path: (np.asarray(values, "float64") / mean).astype("float32")
            for path, values in fisher.items()}


def attach_ewc(variables, strength, fisher):
    """Regularises each of `variables` towards its current value with `EWC(strength)`,
    its squares weighed by `fisher[variable.path]`.

    Call it with the pretrained weights in place, before training (under the
    model's distribution strategy scope). Each variable gets a frozen copy of
    its value (w₀) and of its Fisher, as non-trainable `keras.Variable`s
    (`l2sp.anchor_at_current_values`).

    Args:
        variables: the variables to anchor (`ewc_variables(model)`).
        strength: λ, > 0.
        fisher: {variable path: array of its shape, ≥ 0} (`normalize_fisher(estimate_fisher(...))`
            or `load_fisher`).

    Returns:
        The `EWC` regularizers, in the order of `variables`.

    Raises:
        ValueError: strength ≤ 0; a variable's Fisher is missing, of another shape or
            negative; or a variable already has another regularizer.

    Examples:
    >>> import numpy as np
    >>> dense = keras.layers.Dense(2)
    >>> dense.build((None, 3))
    >>> fisher = {dense.kernel.path: np.full((3, 2), 2.0)}
    >>> _ = attach_ewc([dense.kernel], 0.1, fisher)
    >>> _ = dense.kernel.assign(dense.kernel + 1.0)
    >>> round(float(dense.losses[0]), 6)  # 0.1 × 6 entries × 2 × 1²
    1.2
    """
    if not strength > 0:
        raise ValueError(f"EWC strength must be > 0, got {strength}")
    variables = list(variables)
    for variable in variables:
        values = fisher.get(variable.path)
        if values is None:
            raise ValueError(f"the Fisher has no values for {variable.path}")
        if tuple(np.shape(values)) != tuple(variable.shape):
            raise ValueError(f"the Fisher of {variable.path} has shape {np.shape(values)}, "
                             f"the variable {tuple(variable.shape)}")
        if np.any(np.asarray(values) < 0):
            raise ValueError(f"the Fisher of {variable.path} has negative values")

    def make_penalty(variable, reference):
        weights = keras.Variable(np.asarray(fisher[variable.path], "float32"), dtype="float32",
                                 trainable=False, name=f"{variable.name}_fisher")
        return EWC(strength, reference=reference, fisher=weights)

    return anchor_at_current_values(variables, make_penalty)


def save_fisher(fisher, path):
    """Writes {variable path: array} to `path` as a NumPy `.npz` archive, atomically.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ewc_fisher.npz")
    >>> save_fisher({"transformer/block_0/kernel": np.ones((2, 2))}, path)
    >>> load_fisher(path)["transformer/block_0/kernel"].shape
    (2, 2)
    """
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.asarray(values, "float32") for name, values in fisher.items()})
    write_binary_atomically(path, lambda f: f.write(buffer.getvalue()))


def load_fisher(path):
    """{variable path: float32 array} that `save_fisher` wrote to `path`, in its order."""
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}
