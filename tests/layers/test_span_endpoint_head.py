"""SpanEndpointHead: one dense layer's two columns as start and end logits, masked."""

import keras
import numpy as np

from nlpzoo.layers import SpanEndpointHead
from nlpzoo.layers.span_endpoint_head import MASKED_LOGIT
from tests.helpers.layer_checks import run_layer_test


def test_the_head_trains_compiles_and_keeps_float32_logits():
    rng = np.random.default_rng(0)
    run_layer_test(SpanEndpointHead, {"dropout": 0.1},
                   {"vectors": rng.normal(size=(3, 7, 8)).astype("float32"),
                    "allowed": (rng.random((3, 7)) < 0.7).astype("int32")},
                   expected_output_shape=(3, 2, 7), float32_outputs=(0,))


def test_logits_are_the_dense_layers_two_columns_where_allowed():
    head = SpanEndpointHead()
    vectors = np.random.default_rng(1).normal(size=(2, 5, 4)).astype("float32")
    allowed = np.array([[1, 0, 1, 1, 0], [1, 1, 1, 1, 1]])
    logits = keras.ops.convert_to_numpy(head(vectors, allowed=allowed))
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in head.dense.weights)
    expected = np.einsum("bld,dk->bkl", vectors, kernel) + bias[None, :, None]
    keep = np.broadcast_to(allowed[:, None, :].astype(bool), expected.shape)
    np.testing.assert_allclose(logits[keep], expected[keep], rtol=1e-5, atol=1e-6)
    assert (logits[~keep] == MASKED_LOGIT).all()
    # A softmax over a row gives the masked positions nothing.
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))
    assert (probabilities[~keep] == 0).all()
    np.testing.assert_allclose(probabilities.sum(-1), 1, rtol=1e-6)


def test_without_a_mask_every_position_is_scored():
    head = SpanEndpointHead()
    logits = keras.ops.convert_to_numpy(head(np.ones((1, 3, 4), "float32")))
    assert logits.shape == (1, 2, 3) and (logits > MASKED_LOGIT).all()


def test_config_round_trip():
    head = SpanEndpointHead(dropout=0.2, initializer_range=0.05, name="ends")
    clone = SpanEndpointHead.from_config(head.get_config())
    assert (clone.dropout, clone.initializer_range, clone.name) == (0.2, 0.05, "ends")
