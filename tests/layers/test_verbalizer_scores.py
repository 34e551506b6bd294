"""VerbalizerScores and PatternRows: hand-computed values, config round trips, float32
under mixed precision."""

import keras
import numpy as np

from nlpzoo.layers import PatternRows, VerbalizerScores


def _log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_scores_are_mean_piece_log_probabilities_averaged_over_patterns():
    rng = np.random.default_rng(0)
    batch, patterns, masks, vocabulary = 3, 2, 3, 11
    logits = rng.normal(size=(batch * patterns, masks, vocabulary)).astype("float32")
    pieces = np.array([[4, -1, -1], [5, 6, -1], [7, 8, 9]])  # 1, 2 and 3 pieces
    ids = np.broadcast_to(pieces, (batch, 3, masks))
    scores = VerbalizerScores(num_patterns=patterns)(logits, ids).numpy()
    log_p = _log_softmax(logits.astype(np.float64))
    for b in range(batch):
        for c, word in enumerate(pieces):
            word = [piece for piece in word if piece >= 0]
            per_pattern = [np.mean([log_p[b * patterns + p, j, piece]
                                    for j, piece in enumerate(word)])
                           for p in range(patterns)]
            np.testing.assert_allclose(scores[b, c], np.mean(per_pattern), atol=1e-5)


def test_config_round_trips_and_mixed_precision_stays_float32():
    layer = VerbalizerScores(num_patterns=3, dtype="mixed_bfloat16")
    again = VerbalizerScores.from_config(layer.get_config())
    assert again.num_patterns == 3 and again.dtype_policy.name == "float32"
    logits = np.zeros((3, 1, 5), "float32")
    scores = again(keras.ops.cast(logits, "bfloat16"), np.array([[[1], [2]]]))
    assert keras.backend.standardize_dtype(scores.dtype) == "float32"
    np.testing.assert_allclose(scores.numpy(), np.full((1, 2), -np.log(5)), atol=1e-6)


def test_pattern_rows_put_each_pattern_of_an_example_on_its_own_row():
    values = np.arange(2 * 4 * 3).reshape(2, 4, 3)  # B=2, T=4, P=3
    rows = PatternRows()(values).numpy()
    assert rows.shape == (6, 4)
    for b in range(2):
        for p in range(3):
            np.testing.assert_array_equal(rows[b * 3 + p], values[b, :, p])
    assert PatternRows.from_config(PatternRows().get_config()).compute_output_shape(
        (2, None, 3)) == (6, None)
