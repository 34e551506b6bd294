import numpy as np
import pytest

from nlpzoo.layers import MultiHeadSelfAttention
from tests.helpers.layer_checks import run_layer_test


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


def _unfused_attention(layer, x, padding_mask=None, attention_mask=None):
    """The pre-fusion path: three Dense calls, in Keras ops, for gradients."""
    from keras import ops

    def heads(v):
        b, t = v.shape[0], v.shape[1]
        return ops.transpose(ops.reshape(v, (b, t, layer.num_heads, layer.head_dim)),
                             (0, 2, 1, 3))

    q, k, v = (heads(d(x)) for d in (layer.query_dense, layer.key_dense, layer.value_dense))
    scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / np.sqrt(layer.head_dim)
    allowed = (attention_mask[:, None] if attention_mask is not None
               else padding_mask[:, None, None, :])
    scores = ops.where(allowed > 0, scores, -1e9)
    context = ops.matmul(ops.softmax(scores, axis=-1), v)
    context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), x.shape)
    return layer.output_dense(context)


def _randomize(layer, rng):
    """Weights large enough for peaked attention, and distinct biases, so a
    mix-up between query, key and value (or a lost gradient) would show."""
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))


@pytest.fixture
def fused(monkeypatch):
    """The fused query/key/value projection, off by default, switched on."""
    monkeypatch.setattr(MultiHeadSelfAttention, "fuse_qkv", True)


@pytest.mark.parametrize("packed", [False, True])
def test_fused_qkv_matches_unfused_outputs_and_gradients(packed, fused):
    """One [H, 3H] matmul gives the three projections' outputs and each kernel's gradient."""
    import tensorflow as tf

    rng = np.random.default_rng(4)
    x = tf.constant(rng.normal(size=(2, 6, 12)).astype("float32"))
    padding_mask = np.array([[1] * 6, [1, 1, 1, 1, 0, 0]], "int32")
    # Packed rows: two sequences per row, each attending only to itself.
    segments = np.array([[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 9]])
    attention_mask = ((segments[:, :, None] == segments[:, None, :])
                      & (segments[:, None, :] != 9)).astype("int32")
    masks = dict(attention_mask=attention_mask) if packed else dict(padding_mask=padding_mask)
    layer = MultiHeadSelfAttention(hidden_dim=12, num_heads=3, dropout=0.0)
    layer.build(x.shape)
    _randomize(layer, rng)
    weights = layer.trainable_weights
    assert len(weights) == 8  # four kernels, four biases, nothing new

    with tf.GradientTape(persistent=True) as tape:
        fused_out = layer(x, **masks)
        reference = _unfused_attention(layer, x, **masks)
        fused_loss = tf.reduce_sum(tf.sin(fused_out))
        reference_loss = tf.reduce_sum(tf.sin(reference))
    np.testing.assert_allclose(np.asarray(fused_out), np.asarray(reference), atol=1e-5)
    if not packed:
        np.testing.assert_allclose(np.asarray(fused_out),
                                   _numpy_attention(layer, x.numpy(), padding_mask), atol=1e-5)
    fused_grads = tape.gradient(fused_loss, weights)
    reference_grads = tape.gradient(reference_loss, weights)
    for weight, got, want in zip(weights, fused_grads, reference_grads):
        if weight is layer.key_dense.bias:
            # q·b_k shifts a whole row of scores: softmax ignores it.
            assert np.abs(np.asarray(got)).max() < 1e-4
            continue
        assert np.abs(np.asarray(want)).max() > 1e-3, weight.path  # a gradient that can differ
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5,
                                   err_msg=weight.path)


def test_fuse_qkv_switch(monkeypatch, fused):
    """With the class switch off, q/k/v are three Dense calls: same outputs."""
    import tensorflow as tf

    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1] * 5], "int32")
    layer = MultiHeadSelfAttention(hidden_dim=8, num_heads=2, dropout=0.0)
    layer.build(x.shape)
    _randomize(layer, rng)
    fused_out = np.asarray(layer(x, padding_mask=mask))
    monkeypatch.setattr(MultiHeadSelfAttention, "fuse_qkv", False)
    graph = tf.function(lambda x, m: layer(x, padding_mask=m)).get_concrete_function(
        tf.TensorSpec(x.shape), tf.TensorSpec(mask.shape, tf.int32)).graph
    widths = sorted(op.outputs[0].shape[-1] for op in graph.get_operations()
                    if op.type in ("MatMul", "BatchMatMulV2") and op.outputs[0].shape.rank == 2)
    assert widths == [8, 8, 8, 8]  # q, k, v and output: no fused [., 24] matmul
    np.testing.assert_allclose(np.asarray(layer(x, padding_mask=mask)), fused_out, atol=1e-5)


def test_lora_path_unchanged_by_fusion():
    """With LoRA on, q/k/v stay separate LoraDense calls (and still match the reference)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1] * 5], "int32")
    layer = MultiHeadSelfAttention(hidden_dim=8, num_heads=2, dropout=0.0, lora_rank=2)
    layer.build(x.shape)
    _randomize(layer, rng)  # LoRA's B starts at zero: make the update count
    out = np.asarray(layer(x, padding_mask=mask))
    np.testing.assert_allclose(out, np.asarray(_unfused_attention(layer, x, padding_mask=mask)),
                               atol=1e-5)


def _graph_ops(layer, x, mask):
    import tensorflow as tf

    @tf.function
    def call(x, mask):
        return layer(x, padding_mask=mask)

    return call.get_concrete_function(
        tf.TensorSpec(x.shape, x.dtype), tf.TensorSpec(mask.shape, mask.dtype)
    ).graph.get_operations()


def test_mixed_bfloat16_softmax_in_float32_and_one_kernel_cast(fused):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 5, 12)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1] * 5], "int32")
    layer = MultiHeadSelfAttention(hidden_dim=12, num_heads=3, dropout=0.0,
                                   dtype="mixed_bfloat16")
    layer.build(x.shape)
    _randomize(layer, rng)
    out = layer(x, padding_mask=mask)
    assert out.dtype == "bfloat16"
    assert all(w.dtype == "float32" for w in layer.weights)

    ops_ = _graph_ops(layer, x, mask)
    softmaxes = [op for op in ops_ if op.type == "Softmax"]
    assert len(softmaxes) == 1 and softmaxes[0].outputs[0].dtype.name == "float32"
    # The scores are cast up to float32 before the mask and softmax.
    assert softmaxes[0].inputs[0].dtype.name == "float32"
    casts = [op for op in ops_ if op.type == "Cast"
             and op.outputs[0].dtype.name == "bfloat16"]
    kernel_casts = [tuple(op.outputs[0].shape) for op in casts
                    if op.outputs[0].shape.rank == 2]
    # Each kernel is cast once (q, k, v and output), never the [12, 36] copy again.
    assert sorted(kernel_casts) == [(12, 12)] * 4
    # One matmul, in bfloat16, makes query, key and value.
    fused_matmuls = [op for op in ops_ if op.type in ("MatMul", "BatchMatMulV2")
                     and op.outputs[0].shape[-1] == 36]
    assert len(fused_matmuls) == 1 and fused_matmuls[0].outputs[0].dtype.name == "bfloat16"
    projections = [op for op in ops_ if op.type in ("MatMul", "BatchMatMulV2")
                   and op.outputs[0].shape[-1] == 12]
    assert len(projections) == 1  # the output projection only
    # Same numbers as the float32 path, up to bfloat16 rounding.
    reference = _numpy_attention(layer, x, mask)
    np.testing.assert_allclose(np.asarray(out, "float32"), reference,
                               atol=0.05 * np.abs(reference).max())


def test_mixed_bfloat16_attention_dropout_in_float32():
    """Softmax and dropout in float32, then one cast for the context matmul
    (default, unfused projections)."""
    import tensorflow as tf

    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.ones((2, 5), "int32")
    layer = MultiHeadSelfAttention(hidden_dim=8, num_heads=2, dropout=0.5,
                                   dtype="mixed_bfloat16")

    @tf.function
    def call(x, mask):
        return layer(x, padding_mask=mask, training=True)

    graph = call.get_concrete_function(x, mask).graph
    softmaxes = [op for op in graph.get_operations() if op.type == "Softmax"]
    assert [op.outputs[0].dtype.name for op in softmaxes] == ["float32"]
    dropout_ops = [op for op in graph.get_operations() if "attention_dropout" in op.name
                   and op.outputs and op.outputs[0].dtype.is_floating]
    assert dropout_ops
    assert {op.outputs[0].dtype.name for op in dropout_ops} == {"float32"}
    context = [op for op in graph.get_operations() if op.type == "BatchMatMulV2"
               and op.outputs[0].shape[-1] == layer.head_dim]
    assert [op.inputs[0].op.type for op in context] == ["Cast"]
    assert "attention_dropout" in context[0].inputs[0].op.inputs[0].op.name

    # Training mode really drops: about half the probability mass survives per
    # row before rescaling, so outputs differ from inference.
    out_train = np.asarray(call(x, mask), "float32")
    out_infer = np.asarray(layer(x, padding_mask=mask), "float32")
    assert np.abs(out_train - out_infer).max() > 1e-3
