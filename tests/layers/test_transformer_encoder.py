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
