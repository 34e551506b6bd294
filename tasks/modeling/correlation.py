"""Correlations of predicted scores with graded targets over a whole evaluation set (how STS
is evaluated): the bi-encoder's cosines, a regression classifier's scores."""

import logging

import numpy as np


def average_ranks(values):
    """1-based ranks of `values`, tied values sharing their mean rank.

    Examples:
    >>> average_ranks([0.5, 0.1, 0.5, 0.9]).tolist()
    [2.5, 1.0, 2.5, 4.0]
    """
    values = np.asarray(values, np.float64).reshape(-1)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def pearson(x, y):
    """Pearson's correlation of two equally long sequences; None where it is undefined
    (either constant, or shorter than 2): reported as JSON null, never as a number.

    Examples:
    >>> round(pearson([1, 2, 3], [2, 4, 7]), 4), pearson([1, 1, 1], [1, 2, 3])
    (0.9934, None)
    """
    x = np.asarray(x, np.float64).reshape(-1)
    y = np.asarray(y, np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"pearson: {x.size} and {y.size} values")
    if x.size < 2:
        return None
    x, y = x - x.mean(), y - y.mean()
    scale = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / scale) if scale > 0 else None


def spearman(x, y):
    """Spearman's rank correlation (Pearson's of the average ranks); None where undefined.

    Examples:
    >>> spearman([0.1, 0.4, 0.2], [1, 3, 2]), spearman([0.1, 0.4, 0.2], [2, 2, 2])
    (1.0, None)
    """
    return pearson(average_ranks(x), average_ranks(y))


def correlations(scores, targets, what="scores"):
    """{"pearson", "spearman"} of `scores` with `targets`; where they are undefined (the
    targets or the `what` are constant) each is None, and one warning line says why.

    Examples:
    >>> found = correlations([0.2, 0.5, 0.3], [1, 3, 2])
    >>> round(found["pearson"], 4), found["spearman"]
    (0.982, 1.0)
    """
    found = {"pearson": pearson(scores, targets), "spearman": spearman(scores, targets)}
    if found["pearson"] is None:
        targets = np.asarray(targets, np.float64).reshape(-1)
        constant = "the targets" if targets.size < 2 or np.ptp(targets) == 0 else f"the {what}"
        logging.warning("pearson and spearman are undefined (%s are all the same, or there "
                        "are fewer than 2): reported as null", constant)
    return found
