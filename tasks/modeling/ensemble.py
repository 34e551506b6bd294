"""Several trained models of one task, used as one model: their outputs averaged.

A task's `ensemble` hook (`Task.ensemble`) builds an `Ensemble` whose outputs
have the same form as one member's, so that everything the task does with a
model (`evaluate`, `write_predictions`, `calibrate`) works on it unchanged.
What "average" means is the task's choice:

- class probabilities (classification, softmax tagging, span NER): the mean
  of the members' probabilities, output as its logarithm (`mean_log_probabilities`),
  which softmax, arg-max and a from-logits cross-entropy read as the mean
  probabilities themselves;
- per-label probabilities (multi-label classification): the mean of the
  members' sigmoids, output as its logit (`mean_sigmoid_logits`);
- CRF tagging: see `tasks.tagging.ensemble`.

Examples:
>>> import numpy as np
>>> logits = [np.log([[0.2, 0.8]]), np.log([[0.6, 0.4]])]
>>> mean = np.exp(keras.ops.convert_to_numpy(mean_log_probabilities(logits)))
>>> mean.astype(np.float64).round(6).tolist()
[[0.4, 0.6]]
"""

import math

import keras
from keras import ops


def mean_log_probabilities(logits):
    """log(mean over members of softmax(logits))), float32, computed stably.

    Args:
        logits: the members' logits, a list of tensors of one shape [..., classes].

    Returns:
        A tensor of that shape: "logits" whose softmax is the mean of the
        members' class probabilities.
    """
    log_probabilities = ops.stack(
        [ops.log_softmax(ops.cast(x, "float32"), axis=-1) for x in logits], axis=0)
    return ops.logsumexp(log_probabilities, axis=0) - math.log(len(logits))


def mean_sigmoid_logits(logits):
    """logit(mean over members of sigmoid(logits)), float32, computed stably: the log of
    the mean probability minus the log of the mean of its complement.

    Args:
        logits: the members' per-label logits, a list of tensors of one shape [..., labels].

    Returns:
        A tensor of that shape whose sigmoid is the mean of the members' probabilities.

    Examples:
    >>> import numpy as np
    >>> logits = [np.log([[0.2 / 0.8]]), np.log([[0.6 / 0.4]])]
    >>> mean = keras.ops.sigmoid(mean_sigmoid_logits(logits))
    >>> keras.ops.convert_to_numpy(mean).astype(np.float64).round(6).tolist()
    [[0.4]]
    """
    logits = ops.stack([ops.cast(x, "float32") for x in logits], axis=0)
    # log σ(x) = -softplus(-x); log(1 - σ(x)) = -softplus(x); the log(n) of both means cancels.
    return (ops.logsumexp(-ops.softplus(-logits), axis=0)
            - ops.logsumexp(-ops.softplus(logits), axis=0))


def mean_outputs(outputs):
    """The plain mean of the members' outputs (float32): CRF emissions, scores."""
    return ops.mean(ops.stack([ops.cast(x, "float32") for x in outputs], axis=0), axis=0)


class Ensemble(keras.Model):
    """Models that read the same inputs, called together; `combine` merges their outputs.

    The ensemble is for inference and evaluation, not training (the members
    are frozen) and it is not saved: a task builds it from loaded members.

    Args:
        members: two or more models taking the same inputs.
        combine: a function from the list of the members' outputs to one output,
            e.g. `mean_log_probabilities`.

    Examples:
    >>> import numpy as np
    >>> members = [keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    ...            for _ in range(2)]
    >>> ensemble = Ensemble(members, mean_log_probabilities)
    >>> x = np.ones((4, 2), "float32")
    >>> mean = np.mean([keras.ops.convert_to_numpy(keras.ops.softmax(m(x))) for m in members], 0)
    >>> probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(ensemble(x)))
    >>> bool(np.allclose(probabilities, mean, atol=1e-6))
    True
    """

    def __init__(self, members, combine, **kwargs):
        kwargs.setdefault("name", "ensemble")
        super().__init__(**kwargs)
        if len(members) < 2:
            raise ValueError(f"an ensemble needs two or more models, got {len(members)}")
        self.members = list(members)
        for member in self.members:
            member.trainable = False
        self.combine = combine
        # Run as the members were compiled to run (XLA or not).
        self.jit_compile = bool(getattr(self.members[0], "jit_compile", False))

    def call(self, inputs, training=False):
        return self.combine([member(inputs, training=False) for member in self.members])
