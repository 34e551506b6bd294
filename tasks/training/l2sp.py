"""L2-SP: weight decay towards the pretrained weights, not towards 0.

Li, Grandvalet & Davoine (2018), "Explicit inductive bias for transfer
learning with convolutional networks": fine-tuning with the penalty
α‖θ − θ₀‖² on the pretrained parameters (θ₀ their starting point) keeps the
model near what pretraining learned, where plain L2 pulls it towards 0 and so
away from it. The penalty rides on Keras's variable regularizers, so every
model counts it: `model.losses` holds one term per regularised trainable
variable, which `compile`'s loss adds, and so does
`EncoderTaskModel._plus_layer_losses` for our models with their own
`compute_loss`.

EWC (`tasks/training/ewc.py`) is this penalty with each square weighed by
its Fisher information: it subclasses `L2SP` (overriding `weigh`) and
anchors its variables with the same `anchor_at_current_values`.
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="nlpzoo")
class L2SP(keras.regularizers.Regularizer):
    """`alpha · Σ (w − w₀)²`, computed in float32, with w₀ a frozen copy of the weights.

    Keras's L2 convention (`keras.regularizers.L2`: l2 · Σ w²), so the
    gradient is 2α(w − w₀); the paper's α/2‖w − w₀‖² is this with α halved.

    `reference` is w₀: a non-trainable `keras.Variable` holding the weights
    as they were when the regularizer was attached (`attach_l2sp` makes it).
    A variable, not a constant, so that a traced train step captures it by
    reference instead of copying a 100 MB encoder into the graph.

    Only `alpha` is serialised, not the reference: the penalty is a
    training-time device, and a reloaded model carries none (the variables'
    regularizers are not part of a layer's config). An `L2SP` rebuilt from
    its config has no reference and refuses to be called.

    Args:
        alpha: the strength, > 0.
        reference: w₀, a `keras.Variable` of the regularised variable's shape.

    Examples:
    >>> import numpy as np
    >>> reference = keras.Variable(np.array([1.0, 2.0]), trainable=False)
    >>> penalty = L2SP(0.5, reference=reference)
    >>> float(penalty(np.array([1.0, 4.0]))), penalty.get_config()
    (2.0, {'alpha': 0.5})
    """

    def __init__(self, alpha, reference=None):
        if not alpha > 0:
            raise ValueError(f"L2-SP alpha must be > 0, got {alpha}")
        self.alpha = float(alpha)
        self.reference = reference

    def __call__(self, x):
        if self.reference is None:
            raise ValueError("this L2SP has no reference weights: attach it with attach_l2sp")
        # float32 whatever the variables' dtype: a sum of many small squares.
        difference = ops.cast(x, "float32") - ops.cast(self.reference, "float32")
        return self.alpha * ops.sum(self.weigh(ops.square(difference)))

    def weigh(self, squares):
        """Each weight's share of the penalty: every square counts once (EWC weighs them)."""
        return squares

    def get_config(self):
        return {"alpha": self.alpha}


def anchor_at_current_values(variables, make_penalty):
    """Sets `variable.regularizer = make_penalty(variable, reference)` on each of `variables`,
    `reference` a frozen copy of the variable's current value (w₀).

    What L2-SP and EWC share: each copy is a new non-trainable `keras.Variable`
    (memory: one more copy of those weights); attaching again takes a fresh
    reference. Keras counts a variable regularizer only while the variable is
    trainable (`Layer._get_regularization_losses`), so a frozen variable costs
    nothing. Nothing is attached when a variable already has a regularizer
    that is not an `L2SP` (EWC included).

    Args:
        variables: the variables to anchor.
        make_penalty: `make_penalty(variable, reference)` → the regularizer.

    Returns:
        The regularizers, in the order of `variables`.

    Raises:
        ValueError: a variable already has another kind of regularizer.

    Examples:
    >>> kernel = keras.Variable([1.0, 2.0])
    >>> [penalty] = anchor_at_current_values(
    ...     [kernel], lambda variable, reference: L2SP(1.0, reference=reference))
    >>> _ = kernel.assign([2.0, 2.0])
    >>> float(kernel.regularizer(kernel))
    1.0
    """
    variables = list(variables)
    for variable in variables:
        if variable.regularizer is not None and not isinstance(variable.regularizer, L2SP):
            raise ValueError(f"{variable.path} already has a regularizer "
                             f"({variable.regularizer!r}); it would be replaced")
    regularizers = []
    for variable in variables:
        reference = keras.Variable(
            ops.copy(variable.value), dtype=variable.dtype, trainable=False,
            name=f"{variable.name}_reference")
        variable.regularizer = make_penalty(variable, reference)
        regularizers.append(variable.regularizer)
    return regularizers


def attach_l2sp(variables, alpha):
    """Regularises each of `variables` towards its current value with `L2SP(alpha)`.

    Call it once the pretrained weights are in place and before training
    (under the same distribution strategy scope as the model, so the
    references are placed like the variables). See `anchor_at_current_values`:
    a frozen copy of each variable is the reference, attaching again takes a
    fresh one, a frozen variable costs nothing.

    Args:
        variables: the variables to anchor, e.g. the encoder's:
            `[v for v in model.trainable_variables if v.path.startswith("transformer/")]`.
        alpha: the strength, > 0.

    Returns:
        The `L2SP` regularizers, in the order of `variables`.

    Raises:
        ValueError: alpha ≤ 0, or a variable already has another regularizer.

    Examples:
    >>> dense = keras.layers.Dense(2)
    >>> dense.build((None, 3))
    >>> _ = attach_l2sp([dense.kernel], alpha=0.1)
    >>> float(dense.losses[0])
    0.0
    >>> _ = dense.kernel.assign(dense.kernel + 1.0)
    >>> round(float(dense.losses[0]), 6)  # 0.1 × 6 entries × 1²
    0.6
    """
    if not alpha > 0:
        raise ValueError(f"L2-SP alpha must be > 0, got {alpha}")
    return anchor_at_current_values(
        variables, lambda variable, reference: L2SP(alpha, reference=reference))
