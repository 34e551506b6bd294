"""Correlations of predicted scores with graded targets over a whole evaluation set (how STS
is evaluated): the bi-encoder's cosines, a regression classifier's scores."""

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
    """Pearson's correlation of two equally long sequences; 0.0 when either is constant
    (or shorter than 2), where it is undefined.

    Examples:
    >>> round(pearson([1, 2, 3], [2, 4, 7]), 4), pearson([1, 1, 1], [1, 2, 3])
    (0.9934, 0.0)
    """
    x = np.asarray(x, np.float64).reshape(-1)
    y = np.asarray(y, np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"pearson: {x.size} and {y.size} values")
    if x.size < 2:
        return 0.0
    x, y = x - x.mean(), y - y.mean()
    scale = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / scale) if scale > 0 else 0.0


def spearman(x, y):
    """Spearman's rank correlation (Pearson's of the average ranks); 0.0 where undefined.

    Examples:
    >>> spearman([0.1, 0.4, 0.2], [1, 3, 2])
    1.0
    """
    return pearson(average_ranks(x), average_ranks(y))
