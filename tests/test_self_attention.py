import numpy as np

from layers import MultiHeadSelfAttention
from tests.layer_test_utils import run_layer_test


def _numpy_attention(layer, x, mask):
    def dense(d, v):
        return v @ d.kernel.numpy() + d.bias.numpy()

    b, t, h = x.shape
    n, d = layer.num_heads, layer.head_dim

    def heads(v):
        return v.reshape(b, t, n, d).transpose(0, 2, 1, 3)

    q, k, v = (heads(dense(layer_, x)) for layer_ in
               (layer.query_dense, layer.key_dense, layer.value_dense))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    scores = np.where(mask[:, None, None, :] > 0, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    context = (p @ v).transpose(0, 2, 1, 3).reshape(b, t, h)
    return dense(layer.output_dense, context)


def test_layer_contract():
    rng = np.random.default_rng(0)
    run_layer_test(
        MultiHeadSelfAttention,
        dict(hidden_dim=8, num_heads=2, dropout=0.0),
        {"inputs": rng.normal(size=(2, 5, 8)).astype("float32"),
         "padding_mask": np.array([[1, 1, 1, 0, 0], [1] * 5], "int32")},
        expected_output_shape=(2, 5, 8),
    )


def test_matches_numpy_reference():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 6, 12)).astype("float32")
    mask = np.array([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], "int32")
    layer = MultiHeadSelfAttention(hidden_dim=12, num_heads=3, dropout=0.0)
    out = np.asarray(layer(x, padding_mask=mask))
    np.testing.assert_allclose(out, _numpy_attention(layer, x, mask), atol=1e-5)


def test_padded_keys_get_no_attention():
    """Changing what sits at padded positions does not change real outputs."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 6, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0]], "int32")
    layer = MultiHeadSelfAttention(hidden_dim=8, num_heads=2, dropout=0.0)
    before = np.asarray(layer(x, padding_mask=mask))
    noisy = x.copy()
    noisy[:, 4:] = rng.normal(scale=100.0, size=(1, 2, 8))
    after = np.asarray(layer(noisy, padding_mask=mask))
    np.testing.assert_allclose(after[:, :4], before[:, :4], atol=1e-5)
