"""Which task each batch of multi-task training comes from.

With N tasks of n_i training batches each and weights w_i, a batch comes
from task i with probability

    p_i ∝ w_i · n_i^(1/T)

T = 1 is proportional sampling (every example is seen about as often as in
single-task training); a larger T flattens the distribution towards the
smaller tasks (T → ∞: uniform, up to the weights), as in the temperature
sampling of multilingual and multi-task training (Arivazhagan et al. 2019;
Raffel et al. 2020). An epoch's batches follow these shares exactly (up to rounding), in an order
that is a pure function of the seed and the epoch.
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
    """The task index of each of `count` batches, in random order, in the given shares.

    Stratified, not i.i.d.: task i gets `count · p_i` batches rounded by
    largest remainders (so every share is within 1/count of p_i; i.i.d.
    draws would stray by ±1.5% at 1,000 batches and p = 2/3), in an order
    drawn from `(seed, epoch)`.

    Examples:
    >>> draws = draw_tasks([0.75, 0.25], 1000, seed=1)
    >>> len(draws), int((draws == 1).sum())
    (1000, 250)
    >>> draws[:8].tolist() != sorted(draws[:8].tolist()) or draws[:8].tolist()
    True
    >>> bool((draw_tasks([0.75, 0.25], 10, seed=1, epoch=2)
    ...       == draw_tasks([0.75, 0.25], 10, seed=1, epoch=2)).all())
    True
    """
    probabilities = np.asarray(probabilities, np.float64)
    wanted = probabilities / probabilities.sum() * int(count)
    counts = np.floor(wanted).astype(int)
    remainders = wanted - counts
    counts[np.argsort(-remainders, kind="stable")[:int(count) - counts.sum()]] += 1
    rng = np.random.default_rng([int(seed), int(epoch)])
    return rng.permutation(np.repeat(np.arange(len(probabilities)), counts))
