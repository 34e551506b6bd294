"""Local attention: the blocked computation against the dense band, and a 4,096-token input."""

import time

import numpy as np
import pytest
from keras import ops

from nlpzoo.layers import MultiHeadSelfAttention, TransformerEncoder
from nlpzoo.layers.windowed_attention import local_attention_in_blocks, window_mask


def dense_banded(q, k, v, mask, window):
    """Brute force in float64: softmax over keys within `window` that are real."""
    length = q.shape[2]
    scores = np.einsum("bhqd,bhkd->bhqk", q.astype("float64"), k.astype("float64"))
    allowed = (np.abs(np.arange(length)[:, None] - np.arange(length)) <= window)[None, None] \
        & (mask[:, None, None, :] > 0)
    scores = np.where(allowed, scores, -1e30)  # padded queries may see no real key
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("length, window, block_size", [
    (1, 1, None), (7, 2, None), (16, 4, None), (23, 3, 5), (40, 8, 8), (9, 64, None)])
def test_blocks_equal_the_dense_band(length, window, block_size):
    rng = np.random.default_rng(length)
    q, k, v = (rng.normal(size=(2, 2, length, 4)).astype("float32") for _ in range(3))
    mask = np.ones((2, length), "int32")
    mask[1, max(1, length - 3):] = 0  # right padding
    ours = ops.convert_to_numpy(local_attention_in_blocks(q, k, v, mask, window, block_size))
    expected = dense_banded(q, k, v, mask, window)
    real = mask.astype(bool)
    np.testing.assert_allclose(ours.transpose(0, 2, 1, 3)[real],
                               expected.transpose(0, 2, 1, 3)[real], atol=1e-5)


def test_window_mask_restarts_with_the_positions():
    # A packed row: two examples, positions restart; window 1.
    mask = ops.convert_to_numpy(window_mask(np.array([[0, 1, 2, 0, 1]]),
                                            np.array([[0, 1, 2, 0, 1]]), 1))[0]
    # The band alone reaches into the next example (position 1 there); the block-diagonal
    # mask of packed rows, which the attention combines with it, cuts that off.
    assert mask[2].tolist() == [False, True, True, False, True]
    assert mask[3].tolist() == [True, True, False, True, True]


def test_a_window_wider_than_the_blocks_is_refused():
    x = np.zeros((1, 1, 4, 2), "float32")
    with pytest.raises(ValueError, match="window <= block_size"):
        local_attention_in_blocks(x, x, x, np.ones((1, 4)), window=3, block_size=2)


MODERNBERT_TINY = dict(vocabulary_size=50, num_layers=3, num_heads=2, hidden_dim=16,
                       intermediate_dim=24, num_segments=0, absolute_positions=False,
                       norm_first=True, gated_feedforward=True, use_bias=False,
                       first_attention_norm=False,
                       global_rope_theta=160_000.0, local_rope_theta=10_000.0,
                       local_attention=8, global_attn_every_n_layers=3, dropout=0.0,
                       max_sequence_length=8192, pooler_activation="gelu")


def test_an_encoder_computes_the_same_in_blocks_and_dense():
    encoder = TransformerEncoder(**MODERNBERT_TINY)
    ids = np.random.default_rng(0).integers(1, 50, size=(2, 37)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 30:] = 0
    outputs = {}
    try:
        for blocks in (True, False):
            MultiHeadSelfAttention.local_blocks = blocks
            outputs[blocks] = ops.convert_to_numpy(encoder(ids, None, mask)["sequence_output"])
    finally:
        MultiHeadSelfAttention.local_blocks = "auto"
    np.testing.assert_allclose(outputs[True][mask > 0], outputs[False][mask > 0], atol=1e-5)


def test_a_4096_token_input_runs_in_linear_memory_in_the_local_layers():
    """Three layers (one global, two local windows of 8): the local layers' scores are
    [B, heads, 4096 / 4, 4, 12], not [B, heads, 4096, 4096]."""
    encoder = TransformerEncoder(**MODERNBERT_TINY)
    ids = np.random.default_rng(0).integers(1, 50, size=(1, 4096)).astype("int32")
    start = time.perf_counter()
    out = encoder(ids, None, np.ones_like(ids))["sequence_output"]
    elapsed = time.perf_counter() - start
    assert out.shape == (1, 4096, 16) and np.isfinite(ops.convert_to_numpy(out)).all()
    assert elapsed < 20, elapsed
