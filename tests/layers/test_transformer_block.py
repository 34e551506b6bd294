import numpy as np
import pytest

from nlpzoo.layers import TransformerEncoderBlock
from tests.helpers.layer_checks import run_layer_test


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



@pytest.mark.parametrize("gelu_approximate, op_type", [(False, "Erfc"), (True, "Tanh")])
def test_mixed_bfloat16_gelu_runs_in_float32(gelu_approximate, op_type):
    """bfloat16 in and out of the feed-forward net, float32 GELU in between."""
    import tensorflow as tf

    block = TransformerEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16, dropout=0.0,
                                    gelu_approximate=gelu_approximate, dtype="mixed_bfloat16")
    data = _inputs(4)
    out = block(**data)
    assert out.dtype == "bfloat16"

    @tf.function
    def call(inputs, padding_mask):
        return block(inputs, padding_mask=padding_mask)

    graph = call.get_concrete_function(**data).graph
    gelus = [op for op in graph.get_operations() if op.type == op_type]
    assert gelus and all(op.outputs[0].dtype.name == "float32" for op in gelus)
    intermediate = [op for op in graph.get_operations() if op.type in ("MatMul", "BatchMatMulV2")
                    and op.outputs[0].shape[-1] == 16]
    assert [op.outputs[0].dtype.name for op in intermediate] == ["bfloat16"]

    # The same block in float32 (same weights) differs by bfloat16 rounding only.
    reference = TransformerEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16,
                                        dropout=0.0, gelu_approximate=gelu_approximate)
    reference(**data)
    reference.set_weights(block.get_weights())
    np.testing.assert_allclose(np.asarray(out, "float32"), np.asarray(reference(**data)),
                               atol=0.1)
