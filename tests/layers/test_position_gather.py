"""`gather_positions` and the `PositionGather` layer against NumPy."""


import numpy as np
import tensorflow as tf

from nlpzoo.layers import PositionGather, gather_positions
from tests.helpers.layer_checks import check_xla_compiles, run_layer_test


def _expected(sequence, positions):
    clipped = np.clip(positions, 0, sequence.shape[1] - 1)
    return np.stack([sequence[b, clipped[b]] for b in range(len(sequence))])


def test_matches_numpy_and_clips_out_of_range_positions():
    rng = np.random.default_rng(0)
    sequence = rng.normal(size=(3, 7, 5)).astype("float32")
    positions = rng.integers(-3, 10, size=(3, 4)).astype("int32")
    np.testing.assert_array_equal(np.asarray(gather_positions(sequence, positions)),
                                  _expected(sequence, positions))


def test_any_trailing_shape_and_integer_values():
    sequence = np.arange(2 * 4 * 3 * 2).reshape(2, 4, 3, 2).astype("int32")
    positions = np.array([[3, 0], [1, 1]])
    out = np.asarray(gather_positions(sequence, positions))
    assert out.shape == (2, 2, 3, 2) and out.dtype == np.int32
    np.testing.assert_array_equal(out, _expected(sequence, positions))


def test_dynamic_length_under_xla():
    @tf.function(jit_compile=True, input_signature=[
        tf.TensorSpec((None, None, 3), tf.float32), tf.TensorSpec((None, None), tf.int32)])
    def gather(sequence, positions):
        return gather_positions(sequence, positions)

    sequence = np.random.default_rng(1).normal(size=(2, 6, 3)).astype("float32")
    positions = np.array([[5, 0, 2], [1, 9, 4]], "int32")
    np.testing.assert_array_equal(gather(sequence, positions).numpy(),
                                  _expected(sequence, positions))


def test_gradient_reaches_every_gathered_row():
    sequence = tf.Variable(np.ones((1, 4, 2), "float32"))
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(gather_positions(sequence, np.array([[1, 1, 3]])))
    gradient = tf.convert_to_tensor(tape.gradient(total, sequence)).numpy()
    np.testing.assert_array_equal(gradient[0, :, 0], [0, 2, 0, 1])


def test_layer_contract():
    rng = np.random.default_rng(2)
    data = {"sequence": rng.normal(size=(2, 6, 4)).astype("float32"),
            "positions": np.array([[1, 2, 5], [0, 3, 0]], "int32")}
    layer = run_layer_test(PositionGather, {}, data, expected_output_shape=(2, 3, 4),
                           run_training_check=False)  # no weights to train
    check_xla_compiles(layer, data)
    np.testing.assert_array_equal(np.asarray(layer(**data)),
                                  _expected(data["sequence"], data["positions"]))
