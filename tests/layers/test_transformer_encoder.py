import numpy as np
import pytest

from nlpzoo.layers import TransformerEncoder
from tests.helpers.layer_checks import run_layer_test

SMALL = dict(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8,
             intermediate_dim=16, max_sequence_length=16)


def encoder_inputs():
    """A padded batch of two sequences, the second a pair (tests/test_encoder.py shares it)."""
    token_ids = np.array([[2, 7, 9, 3, 0, 0], [2, 5, 3, 8, 4, 3]], "int32")
    return {
        "token_ids": token_ids,
        "segment_ids": np.array([[0] * 6, [0, 0, 0, 1, 1, 1]], "int32"),
        "padding_mask": (token_ids > 0).astype("int32"),
    }


@pytest.mark.parametrize("options", [
    {},
    {"norm_first": True, "gelu_approximate": True},
    {"embedding_dim": 4, "share_layers": True},
    {"position_offset": 2, "num_segments": 1},  # RoBERTa
    {"num_segments": 0, "pooler_activation": "relu"},  # DistilBERT
    {"embedding_dim": 4, "pooler_activation": "gelu"},  # ELECTRA
])
def test_layer_contract(options):
    run_layer_test(
        TransformerEncoder, dict(SMALL, **options), encoder_inputs(),
        expected_output_shape=(2, 6, 8),
        run_training_check=not options,  # one XLA fit step is enough
    )


def test_outputs_and_hidden_states():
    encoder = TransformerEncoder(**SMALL, dropout=0.0)
    out = encoder(**encoder_inputs())
    assert len(out["hidden_states"]) == 3
    np.testing.assert_allclose(out["hidden_states"][-1], out["sequence_output"])
    pooled = np.tanh(
        np.asarray(out["sequence_output"])[:, 0] @ encoder.pooler.kernel.numpy()
        + encoder.pooler.bias.numpy()
    )
    np.testing.assert_allclose(out["pooled_output"], pooled, atol=1e-5)


def test_padding_invariance():
    """Padding the same batch further does not change outputs at real positions."""
    encoder = TransformerEncoder(**SMALL, dropout=0.0)
    data = encoder_inputs()
    short = encoder(**data)
    padded = {name: np.pad(value, ((0, 0), (0, 5))) for name, value in data.items()}
    padded["token_ids"][:, 6:] = 11  # garbage ids at padded positions
    long = encoder(**padded)
    mask = data["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(long["sequence_output"])[:, :6][mask],
        np.asarray(short["sequence_output"])[mask], atol=1e-5)
    np.testing.assert_allclose(long["pooled_output"], short["pooled_output"], atol=1e-5)


def test_shared_layers_have_one_block_of_weights():
    shared = TransformerEncoder(**dict(SMALL, num_layers=4, share_layers=True))
    separate = TransformerEncoder(**dict(SMALL, num_layers=4))
    shared(**encoder_inputs())
    separate(**encoder_inputs())
    block_weights = len(separate.blocks[0].weights)
    assert len(separate.weights) - len(shared.weights) == 3 * block_weights


@pytest.mark.parametrize("activation, function", [
    ("tanh", np.tanh), ("relu", lambda x: np.maximum(x, 0.0)),
    ("gelu", lambda x: 0.5 * x * (1.0 + np.vectorize(__import__("math").erf)(x / np.sqrt(2.0)))),
])
def test_pooler_activation(activation, function):
    encoder = TransformerEncoder(**SMALL, dropout=0.0, pooler_activation=activation)
    outputs = encoder(**encoder_inputs())
    first = np.asarray(outputs["sequence_output"])[:, 0, :]
    kernel, bias = (variable.numpy() for variable in encoder.pooler.weights)
    np.testing.assert_allclose(np.asarray(outputs["pooled_output"]),
                               function(first @ kernel + bias), atol=1e-5)


def test_unknown_pooler_activation_is_refused():
    with pytest.raises(ValueError, match="pooler_activation must be one of tanh, relu, gelu"):
        TransformerEncoder(**SMALL, pooler_activation="sigmoid")


# ModernBERT's option values (global layer 0, a window of 2 each side in layer 1).
MODERNBERT = dict(num_segments=0, absolute_positions=False, norm_first=True, gated_feedforward=True, use_bias=False,
                  first_attention_norm=False, global_rope_theta=160_000.0,
                  local_rope_theta=10_000.0, local_attention=4,
                  global_attn_every_n_layers=2, pooler_activation="gelu",
                  layer_norm_epsilon=1e-5)


@pytest.mark.slow  # ~30 s, the XLA training step; test_modernbert_options_compile_under_xla
def test_modernbert_options_layer_contract():
    """Config round trip, mixed precision and one jit_compile=True training step (the
    local layer runs block by block on these 6-token inputs)."""
    run_layer_test(TransformerEncoder, dict(SMALL, **MODERNBERT), encoder_inputs(),
                   expected_output_shape=(2, 6, 8))


@pytest.mark.parametrize("blocks", [True, False])
def test_modernbert_options_compile_under_xla(blocks):
    """XLA compiles the forward pass and its gradient, blocked or dense local attention."""
    import tensorflow as tf

    from nlpzoo.layers import MultiHeadSelfAttention

    encoder = TransformerEncoder(**SMALL, **MODERNBERT, dropout=0.0)
    data = encoder_inputs()
    eager = np.asarray(encoder(**data)["sequence_output"])
    MultiHeadSelfAttention.local_blocks = blocks
    try:
        @tf.function(jit_compile=True)
        def step(token_ids, padding_mask):
            with tf.GradientTape() as tape:
                out = encoder(token_ids, None, padding_mask)["sequence_output"]
                loss = tf.reduce_sum(out ** 2)
            return out, tape.gradient(loss, encoder.trainable_variables)

        out, gradients = step(data["token_ids"], data["padding_mask"])
    finally:
        MultiHeadSelfAttention.local_blocks = "auto"
    np.testing.assert_allclose(np.asarray(out), eager, atol=1e-5)
    for variable, gradient in zip(encoder.trainable_variables, gradients):
        if "pooler" not in variable.path:  # the loss does not read the pooler
            assert np.isfinite(tf.convert_to_tensor(gradient).numpy()).all(), variable.path


def test_modernbert_options_have_no_position_table_biases_or_first_norm():
    encoder = TransformerEncoder(**SMALL, **MODERNBERT)
    encoder(**encoder_inputs())
    names = [variable.path for variable in encoder.weights]
    assert not any("position_embedding" in name or "segment" in name for name in names)
    assert not any(name.endswith(("bias", "beta")) for name in names if "pooler" not in name)
    assert encoder.blocks[0].attention_norm is None and encoder.blocks[1].attention_norm
    assert [block.attention.window for block in encoder.blocks] == [0, 2]
    assert [block.attention.rope_theta for block in encoder.blocks] == [160_000.0, 10_000.0]
    assert encoder.blocks[0].intermediate_dense.kernel.shape == (8, 32)  # 2 × intermediate


def test_modernbert_padding_invariance_in_blocks():
    encoder = TransformerEncoder(**SMALL, **MODERNBERT, dropout=0.0)
    data = encoder_inputs()
    short = encoder(**data)
    padded = {name: np.pad(value, ((0, 0), (0, 9))) for name, value in data.items()}
    padded["token_ids"][:, 6:] = 11
    long = encoder(**padded)
    mask = data["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(long["sequence_output"])[:, :6][mask],
                               np.asarray(short["sequence_output"])[mask], atol=1e-5)


def test_modernbert_packing_measures_positions_and_windows_per_example():
    """Packed rows hold several examples: rotary angles and windows restart with each
    one, so the outputs equal the unpacked ones (lengths longer than the window)."""
    encoder = TransformerEncoder(**dict(SMALL, max_sequence_length=32), **MODERNBERT,
                                 dropout=0.0)
    rng = np.random.default_rng(0)
    lengths = [12, 3, 7, 5, 9]
    ids = np.zeros((5, 12), "int32")
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(1, 30, size=length)
    mask = (ids > 0).astype("int32")
    plain = encoder(ids, None, mask)
    encoder.pack_length = 24  # rows of 24: [12, 9, 3], [7, 5]
    packed = encoder(ids, None, mask)
    for got, want in zip(packed["hidden_states"], plain["hidden_states"]):
        np.testing.assert_allclose(np.asarray(got)[mask > 0], np.asarray(want)[mask > 0],
                                   atol=1e-5)


def test_old_configs_load_with_bert_behaviour():
    config = TransformerEncoder(**SMALL).get_config()
    for name in ("global_rope_theta", "local_rope_theta", "local_attention",
                 "global_attn_every_n_layers", "gated_feedforward", "use_bias",
                 "first_attention_norm"):
        del config[name]
    restored = TransformerEncoder.from_config(config).get_config()
    expected = TransformerEncoder(**SMALL).get_config()
    assert {k: v for k, v in restored.items() if k != "name"} == {
        k: v for k, v in expected.items() if k != "name"}


def test_modernbert_option_combinations_are_refused():
    with pytest.raises(ValueError, match="attention_norm=False needs norm_first=True"):
        TransformerEncoder(**SMALL, first_attention_norm=False)
    with pytest.raises(ValueError, match="cannot alternate"):
        TransformerEncoder(**SMALL, share_layers=True, local_attention=4,
                           global_attn_every_n_layers=2)
    with pytest.raises(ValueError, match="relative_attention takes no rope_theta"):
        TransformerEncoder(**SMALL, relative_attention="disentangled", global_rope_theta=10.0)
