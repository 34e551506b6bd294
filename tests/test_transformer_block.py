import numpy as np
import pytest

from layers import TransformerEncoderBlock
from tests.layer_test_utils import run_layer_test


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"inputs": rng.normal(size=(2, 5, 8)).astype("float32"),
            "padding_mask": np.array([[1, 1, 1, 0, 0], [1] * 5], "int32")}


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_contract(norm_first):
    run_layer_test(
        TransformerEncoderBlock,
        dict(hidden_dim=8, num_heads=2, intermediate_dim=16, norm_first=norm_first),
        _inputs(),
        expected_output_shape=(2, 5, 8),
    )


def _layer_norm(x, eps=1e-12):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)


def _dense(layer, x):
    return x @ layer.kernel.numpy() + layer.bias.numpy()


def _gelu_erf(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def test_post_ln_block_matches_numpy_with_exact_gelu():
    block = TransformerEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16, dropout=0.0)
    data = _inputs(3)
    out = np.asarray(block(**data))
    attended = np.asarray(block.attention(data["inputs"], padding_mask=data["padding_mask"]))
    x = _layer_norm(data["inputs"] + attended)
    ff = _dense(block.output_dense, _gelu_erf(_dense(block.intermediate_dense, x)))
    np.testing.assert_allclose(out, _layer_norm(x + ff), atol=1e-4)

