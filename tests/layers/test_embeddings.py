import numpy as np

from nlpzoo.layers import TextEmbeddings
from tests.helpers.layer_checks import run_layer_test


def _inputs():
    token_ids = np.array([[2, 5, 7, 3, 0], [2, 9, 3, 0, 0]], dtype="int32")
    return {"token_ids": token_ids, "segment_ids": np.array([[0, 0, 0, 1, 1]] * 2, "int32")}


def test_layer_contract():
    run_layer_test(
        TextEmbeddings,
        dict(vocabulary_size=20, hidden_dim=8, max_sequence_length=16, dropout=0.0),
        _inputs(),
        expected_output_shape=(2, 5, 8),
    )


def test_factorized_embeddings_contract():
    run_layer_test(
        TextEmbeddings,
        dict(vocabulary_size=20, hidden_dim=8, embedding_dim=4, max_sequence_length=16),
        _inputs(),
        expected_output_shape=(2, 5, 8),
    )


def test_sum_of_tables_then_layer_norm():
    layer = TextEmbeddings(vocabulary_size=20, hidden_dim=6, max_sequence_length=8, dropout=0.0)
    inputs = _inputs()
    out = np.asarray(layer(**inputs))
    tok = layer.token_embedding.embeddings.numpy()
    pos = layer.position_embedding.embeddings.numpy()
    seg = layer.segment_embedding.embeddings.numpy()
    summed = tok[inputs["token_ids"]] + pos[None, :5] + seg[inputs["segment_ids"]]
    mean = summed.mean(-1, keepdims=True)
    var = summed.var(-1, keepdims=True)
    expected = (summed - mean) / np.sqrt(var + 1e-12)
    np.testing.assert_allclose(out, expected, atol=1e-4)


def test_factorized_tables_have_embedding_width():
    layer = TextEmbeddings(vocabulary_size=20, hidden_dim=8, embedding_dim=4)
    layer(**_inputs())
    assert layer.token_embedding.embeddings.shape == (20, 4)
    assert layer.projection.kernel.shape == (4, 8)


def test_family_options_contract():
    # RoBERTa's offset positions and single segment type; DistilBERT's missing segment table.
    for options in (dict(position_offset=2, num_segments=1), dict(num_segments=0)):
        run_layer_test(
            TextEmbeddings,
            dict(vocabulary_size=20, hidden_dim=8, max_sequence_length=16, dropout=0.0,
                 **options),
            _inputs(),
            expected_output_shape=(2, 5, 8),
        )


def test_position_offset_reads_later_rows_also_for_given_position_ids():
    layer = TextEmbeddings(vocabulary_size=20, hidden_dim=6, max_sequence_length=8,
                           num_segments=1, position_offset=2, dropout=0.0)
    inputs = _inputs()
    out = np.asarray(layer(**inputs))
    assert layer.position_embedding.embeddings.shape == (10, 6)  # 8 usable + the offset
    tok = layer.token_embedding.embeddings.numpy()
    pos = layer.position_embedding.embeddings.numpy()
    seg = layer.segment_embedding.embeddings.numpy()
    summed = tok[inputs["token_ids"]] + pos[None, 2:7] + seg[0]  # segment ids ignored
    expected = (summed - summed.mean(-1, keepdims=True)) / np.sqrt(
        summed.var(-1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(out, expected, atol=1e-4)
    position_ids = np.tile(np.arange(5, dtype="int32"), (2, 1))
    np.testing.assert_allclose(np.asarray(layer(**inputs, position_ids=position_ids)), out,
                               atol=1e-6)


def test_no_segment_table():
    layer = TextEmbeddings(vocabulary_size=20, hidden_dim=8, num_segments=0)
    layer(**_inputs())
    assert layer.segment_embedding is None
    assert [variable.path.split("/")[1] for variable in layer.weights].count(
        "segment_embedding") == 0
