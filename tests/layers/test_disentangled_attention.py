"""DeBERTa-v2/v3 disentangled attention: bucket maths against transformers, the scores
against a brute-force loop, the encoder option's contract (XLA, mixed precision, .keras),
and packing measuring distances inside each example."""

import math
import os

import numpy as np
import pytest

from nlpzoo.layers import TransformerEncoder
from nlpzoo.layers.disentangled_attention import (
    DisentangledSelfAttention,
    RelativePositionEmbeddings,
    log_bucket,
    relative_position_index,
)
from tests.helpers.layer_checks import run_layer_test
from tests.helpers.paths import ROOT

DEBERTA = dict(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8,
               intermediate_dim=16, max_sequence_length=32, num_segments=0,
               absolute_positions=False, relative_attention="disentangled",
               position_buckets=4, max_relative_positions=8, pooler_activation="gelu",
               layer_norm_epsilon=1e-7)


def test_log_buckets_equal_transformers_at_deberta_v3_settings():
    # make_log_bucket_position(d, 256, 512) for d in [-1100, 1100], recorded by
    # tests/fixtures/make_family_reference.py.
    with np.load(os.path.join(ROOT, "tests", "fixtures", "families", "deberta-v2",
                              "reference.npz")) as stored:
        distances, expected = stored["bucket_distances"], stored["buckets_256_512"]
    np.testing.assert_array_equal(np.asarray(log_bucket(distances, 256, 512)), expected)


def _index_by_hand(positions, buckets, max_distance):
    """The relative index of each (query, key) pair, one pair at a time."""
    span = buckets if buckets > 0 else max_distance
    length = len(positions)
    index = np.zeros((length, length), "int64")
    for i in range(length):
        for j in range(length):
            d = positions[i] - positions[j]
            if buckets > 0 and abs(d) > buckets // 2:
                mid = buckets // 2
                d = int(math.copysign(
                    math.ceil(math.log(abs(d) / mid) / math.log((max_distance - 1) / mid)
                              * (mid - 1)) + mid, d))
            index[i, j] = min(max(d + span, 0), 2 * span - 1)
    return index


@pytest.mark.parametrize("buckets, max_distance", [(0, 5), (8, 40), (16, 30)])
def test_relative_index_by_hand(buckets, max_distance):
    positions = np.array([0, 1, 2, 3, 5, 8, 13, 21, 34, 55])  # distances in every regime
    index = np.asarray(relative_position_index(positions[None], buckets, max_distance))
    np.testing.assert_array_equal(index[0], _index_by_hand(positions, buckets, max_distance))


def test_scores_equal_a_brute_force_loop():
    hidden, heads, length = 8, 2, 6
    head_dim = hidden // heads
    rng = np.random.default_rng(0)
    layer = DisentangledSelfAttention(hidden, heads, dropout=0.0)
    relative = RelativePositionEmbeddings(hidden, position_buckets=4, max_relative_positions=8)
    table = relative.normalized()
    relative.table.embeddings.assign(rng.normal(size=(8, hidden)).astype("float32"))
    table = np.asarray(relative.normalized())
    index = np.asarray(relative_position_index(np.arange(length)[None], 4, 8))
    x = rng.normal(size=(1, length, hidden)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1, 0]])
    layer.build(x.shape)
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.5)
    out = np.asarray(layer(x, padding_mask=mask, relative_embeddings=table,
                           relative_index=index))

    def project(dense, values):
        return values @ dense.kernel.numpy() + dense.bias.numpy()

    q, k, v = (project(d, x[0]) for d in (layer.query_dense, layer.key_dense, layer.value_dense))
    position_q, position_k = project(layer.query_dense, table), project(layer.key_dense, table)
    context = np.zeros((length, hidden))
    for h in range(heads):
        part = slice(h * head_dim, (h + 1) * head_dim)
        scores = np.zeros((length, length))
        for i in range(length):
            for j in range(length):
                r = index[0, i, j]
                scores[i, j] = (q[i, part] @ k[j, part] + q[i, part] @ position_k[r, part]
                                + k[j, part] @ position_q[r, part]) / math.sqrt(3 * head_dim)
        scores = np.where(mask[0][None, :] > 0, scores, -1e9)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        context[:, part] = weights @ v[:, part]
    expected = project(layer.output_dense, context)
    np.testing.assert_allclose(out[0], expected, atol=1e-4, rtol=1e-4)


def encoder_inputs():
    token_ids = np.array([[2, 7, 9, 3, 11, 12, 0, 0], [2, 5, 3, 8, 4, 3, 6, 9]], "int32")
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": (token_ids > 0).astype("int32")}


def test_encoder_contract_with_disentangled_attention():
    # Config and .keras round trips, XLA (HLO and a jit_compile=True fit step), mixed precision.
    run_layer_test(TransformerEncoder, DEBERTA, encoder_inputs(), expected_output_shape=(2, 8, 8))


def test_the_encoder_has_no_absolute_positions_and_one_relative_table():
    encoder = TransformerEncoder(**DEBERTA)
    encoder(**encoder_inputs())
    names = {variable.path for variable in encoder.weights}
    assert not any("position_embedding" in name for name in names)
    assert encoder.relative_embeddings.table.embeddings.shape == (8, 8)  # 2 · 4 buckets
    assert encoder.get_config()["relative_attention"] == "disentangled"


def test_padding_embeddings_are_zeroed_and_do_not_reach_real_tokens():
    encoder = TransformerEncoder(**DEBERTA, dropout=0.0)
    data = encoder_inputs()
    out = encoder(**data)
    np.testing.assert_array_equal(np.asarray(out["hidden_states"][0])[0, 6:], 0.0)
    other = dict(data, token_ids=np.where(data["padding_mask"] > 0, data["token_ids"], 13))
    again = encoder(**other)
    real = data["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(again["sequence_output"])[real],
                               np.asarray(out["sequence_output"])[real], atol=1e-6)


def test_packed_rows_measure_distances_inside_each_example():
    """Packed, every example's outputs equal its own unpacked outputs (long enough
    that the bucketed distances differ from the row's)."""
    rng = np.random.default_rng(3)
    lengths = [3, 11, 5, 9, 2]
    token_ids = np.zeros((len(lengths), 12), "int32")
    for row, length in enumerate(lengths):
        token_ids[row, :length] = rng.integers(1, 30, size=length)
    data = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": (token_ids > 0).astype("int32")}
    encoder = TransformerEncoder(**DEBERTA, dropout=0.0)
    unpacked = encoder(**data)
    encoder.pack_length = 16
    packed = encoder(**data)
    real = data["padding_mask"].astype(bool)
    for ours, theirs in zip(packed["hidden_states"], unpacked["hidden_states"]):
        np.testing.assert_allclose(np.asarray(ours)[real], np.asarray(theirs)[real], atol=2e-5)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="relative_attention must be one of"):
        TransformerEncoder(**dict(DEBERTA, relative_attention="rotary"))
    with pytest.raises(ValueError, match="leave no relative position"):
        TransformerEncoder(**dict(DEBERTA, position_buckets=4, max_relative_positions=1))
    layer = DisentangledSelfAttention(8, 2)
    with pytest.raises(ValueError, match="needs relative_embeddings and relative_index"):
        layer(np.zeros((1, 3, 8), "float32"))
