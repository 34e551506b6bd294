"""Which task each batch of multi-task training comes from.

With N tasks of n_i training batches each and weights w_i, a batch comes
from task i with probability

    p_i ∝ w_i · n_i^(1/T)

T = 1 is proportional sampling (every example is seen about as often as in
single-task training); a larger T flattens the distribution towards the
smaller tasks (T → ∞: uniform, up to the weights), as in the temperature
sampling of multilingual and multi-task training (Arivazhagan et al. 2019;
Raffel et al. 2020). The draws are a pure function of the seed and the epoch.
"""

import numpy as np


def sampling_probabilities(sizes, weights=None, temperature=1.0):
    """p_i ∝ w_i · n_i^(1/T), as a float64 NumPy array summing to 1.

    Args:
        sizes: n_i, the number of training batches (or examples) of each task.
        weights: w_i ≥ 0, one per task (1 each by default); not all 0.
        temperature: T > 0.

    Examples:
    >>> sampling_probabilities([300, 100]).round(3).tolist()
    [0.75, 0.25]
    >>> sampling_probabilities([300, 100], temperature=2.0).round(3).tolist()  # √3 : 1
    [0.634, 0.366]
    >>> sampling_probabilities([300, 100], weights=[1, 3]).round(3).tolist()
    [0.5, 0.5]
    """
    sizes = np.asarray(sizes, np.float64)
    weights = np.ones_like(sizes) if weights is None else np.asarray(weights, np.float64)
    if sizes.ndim != 1 or len(sizes) == 0 or weights.shape != sizes.shape:
        raise ValueError("give one size and one weight per task")
    if (sizes <= 0).any():
        raise ValueError(f"every task needs training data; sizes {sizes.tolist()}")
    if (weights < 0).any() or not weights.sum() > 0:
        raise ValueError(f"weights must be >= 0 and not all 0; got {weights.tolist()}")
    if not temperature > 0:
        raise ValueError(f"the sampling temperature must be > 0, got {temperature}")
    scores = weights * sizes ** (1.0 / temperature)
    return scores / scores.sum()


def draw_tasks(probabilities, count, seed, epoch=0):
    """The task index of each of `count` batches: i.i.d. draws from `probabilities`.

    Examples:
    >>> draws = draw_tasks([0.75, 0.25], 1000, seed=1)
    >>> len(draws), sorted(set(draws.tolist()))
    (1000, [0, 1])
    >>> bool((draw_tasks([0.75, 0.25], 10, seed=1, epoch=2)
    ...       == draw_tasks([0.75, 0.25], 10, seed=1, epoch=2)).all())
    True
    """
    probabilities = np.asarray(probabilities, np.float64)
    rng = np.random.default_rng([int(seed), int(epoch)])
    return rng.choice(len(probabilities), size=int(count), p=probabilities / probabilities.sum())
