"""GeGLU against numpy (exact erf GELU and its tanh approximation)."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from nlpzoo.layers.gated_feedforward import gated_gelu


@pytest.mark.parametrize("approximate", [False, True])
def test_gated_gelu_equals_numpy(approximate):
    x = np.random.default_rng(0).normal(size=(2, 3, 10)).astype("float32")
    values, gate = x[..., :5].astype("float64"), x[..., 5:]
    if approximate:
        inner = math.sqrt(2 / math.pi) * (values + 0.044715 * values**3)
        gelu = 0.5 * values * (1 + np.tanh(inner))
    else:
        gelu = 0.5 * values * (1 + np.vectorize(math.erf)(values / math.sqrt(2)))
    np.testing.assert_allclose(ops.convert_to_numpy(gated_gelu(x, approximate)), gelu * gate,
                               atol=1e-6)


def test_keeps_the_input_dtype():
    x = np.ones((1, 4), "float32")
    assert keras.backend.standardize_dtype(gated_gelu(ops.cast(x, "bfloat16")).dtype) == \
        "bfloat16"
