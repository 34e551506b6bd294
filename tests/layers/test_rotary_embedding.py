"""Rotary position embeddings against a brute-force rotation in complex numbers."""

import numpy as np
import pytest
from keras import ops

from nlpzoo.layers.rotary_embedding import apply_rotary, rotary_frequencies


def brute_force(x, positions, theta):
    """Each pair (i, i + d/2) is a complex number turned by position · theta^(-2i/d)."""
    half = x.shape[-1] // 2
    angles = positions[:, None, :, None] * theta ** (-2.0 * np.arange(half) / x.shape[-1])
    turned = (x[..., :half] + 1j * x[..., half:]) * np.exp(1j * angles)
    return np.concatenate([turned.real, turned.imag], axis=-1)


@pytest.mark.parametrize("theta", [10.0, 10_000.0, 160_000.0])
def test_rotation_equals_brute_force(theta):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 7, 8)).astype("float32")
    positions = np.array([np.arange(7), [0, 1, 2, 0, 1, 2, 3]])  # the second: packed
    np.testing.assert_allclose(ops.convert_to_numpy(apply_rotary(x, positions, theta)),
                               brute_force(x, positions, theta), atol=1e-5)


def test_scores_depend_on_the_distance_only():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(2, 1, 1, 1, 16)).astype("float32")

    def score(i, j):
        rotated_q = apply_rotary(q, np.array([[i]]), 100.0)
        rotated_k = apply_rotary(k, np.array([[j]]), 100.0)
        return float(ops.sum(rotated_q * rotated_k))

    assert score(3, 1) == pytest.approx(score(12, 10), abs=1e-4)
    assert score(3, 1) != pytest.approx(score(3, 2), abs=1e-3)


def test_odd_head_size_is_refused():
    with pytest.raises(ValueError, match="even head_dim"):
        rotary_frequencies(5, 10.0)
