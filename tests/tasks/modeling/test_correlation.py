"""Pearson's and Spearman's correlations (tasks/modeling/correlation.py) against brute force."""

import itertools
import logging

import numpy as np
import pytest

from nlpzoo.tasks.modeling.correlation import average_ranks, correlations, pearson, spearman


def _brute_force_ranks(values):
    """Rank i = 1 + #(values below it) + (#(values equal to it, itself excluded)) / 2: the
    mean of the positions its ties share, counted pair by pair."""
    return np.array([1 + sum(other < value for other in values)
                     + sum(values[j] == value for j in range(len(values)) if j != i) / 2
                     for i, value in enumerate(values)], np.float64)


def _brute_force_pearson(x, y):
    """Σ (x - x̄)(y - ȳ) / √(Σ (x - x̄)² · Σ (y - ȳ)²), one term at a time."""
    n = len(x)
    mean_x, mean_y = sum(x) / n, sum(y) / n
    covariance = sum((a - mean_x) * (b - mean_y) for a, b in zip(x, y))
    spread_x = sum((a - mean_x) ** 2 for a in x)
    spread_y = sum((b - mean_y) ** 2 for b in y)
    return covariance / np.sqrt(spread_x * spread_y)


def test_average_ranks_share_the_mean_position_of_ties():
    assert average_ranks([3.0, 1.0, 3.0, 2.0, 3.0]).tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]
    rng = np.random.default_rng(0)
    for _ in range(20):
        values = list(rng.integers(0, 6, 15).astype(float))  # many ties
        np.testing.assert_array_equal(average_ranks(values), _brute_force_ranks(values))


def test_pearson_and_spearman_equal_the_formulas_term_by_term():
    rng = np.random.default_rng(1)
    for size in (2, 3, 7, 50):
        x = list(rng.normal(size=size))
        y = list(np.round(np.array(x) + rng.normal(size=size), 1))  # ties in y
        x[: size // 3] = [x[0]] * (size // 3)                          # and in x
        assert pearson(x, y) == pytest.approx(_brute_force_pearson(x, y), abs=1e-12)
        assert spearman(x, y) == pytest.approx(
            _brute_force_pearson(_brute_force_ranks(x), _brute_force_ranks(y)), abs=1e-12)


def test_spearman_by_hand_with_ties():
    # ranks of x: 1, 2.5, 2.5, 4; of y: 2, 1, 3, 4. Centred (mean 2.5): x -1.5, 0, 0, 1.5;
    # y -0.5, -1.5, 0.5, 1.5. Σxy = 0.75 + 2.25 = 3; Σx² = 4.5; Σy² = 5: 3 / √22.5.
    assert spearman([0.1, 0.5, 0.5, 0.9], [2.0, 1.0, 3.0, 4.0]) == pytest.approx(3 / 22.5 ** 0.5)
    assert spearman([1, 2, 3], [10, 20, 1000]) == 1.0  # monotone, not linear
    assert pearson([1, 2, 3], [10, 20, 1000]) < 0.9


def test_spearman_is_invariant_under_monotone_maps_and_flips_under_negation():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=30), rng.normal(size=30)
    assert spearman(np.exp(x), y ** 3) == pytest.approx(spearman(x, y), abs=1e-12)
    assert spearman(-x, y) == pytest.approx(-spearman(x, y), abs=1e-12)


def test_undefined_correlations_are_none_never_a_number():
    assert pearson([1.0, 1.0, 1.0], [0.0, 0.5, 1.0]) is None
    assert spearman([2.0], [3.0]) is None and pearson([], []) is None
    assert spearman([0.3, 0.1, 0.2], [4.0, 4.0, 4.0]) is None
    with pytest.raises(ValueError, match="3 and 2 values"):
        pearson([1, 2, 3], [1, 2])


def test_undefined_correlations_say_why_in_one_warning(caplog):
    with caplog.at_level(logging.WARNING):
        assert correlations([0.3, 0.1, 0.2], [4.0, 4.0, 4.0]) == {"pearson": None,
                                                                 "spearman": None}
    assert [record.getMessage() for record in caplog.records] == [
        "pearson and spearman are undefined (the targets are all the same, or there are fewer "
        "than 2): reported as null"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        correlations([0.5, 0.5, 0.5], [1.0, 2.0, 3.0], "predicted scores")
    assert "(the predicted scores are all the same" in caplog.records[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert correlations([0.1, 0.5, 0.3], [1.0, 2.0, 3.0])["spearman"] == pytest.approx(0.5)
    assert not caplog.records


def test_correlations_match_scipy_when_it_is_installed():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.normal(size=50)
        y = np.round(x + rng.normal(size=50), 1)  # ties in y
        x[:5] = x[0]                               # and in x
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
        np.testing.assert_allclose(average_ranks(y), stats.rankdata(y))


def test_every_permutation_of_four_distinct_values():
    """Spearman of distinct values is 1 − 6 Σ d² / (n (n² − 1)), d the rank differences."""
    x = [0.3, 0.1, 0.4, 0.2]
    for y in itertools.permutations([1.0, 2.0, 3.0, 4.0]):
        d = average_ranks(x) - average_ranks(y)
        assert spearman(x, y) == pytest.approx(1 - 6 * (d ** 2).sum() / (4 * 15), abs=1e-12)
