"""tasks.ragged_rows against TensorFlow's own ragged ops and Python slicing, on random rows
(empty rows and empty tensors included), in a traced graph as the input pipelines run them."""

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.text.ragged_rows import (
    concat_rows,
    merge_inner_rows,
    row_exclusive_cumsum,
    row_prefix,
    row_slices,
    row_suffix,
    row_sums,
    split_rows,
    value_rowids,
)


def _random_rows(rng, rows, longest=5):
    return [rng.integers(0, 100, rng.integers(0, longest + 1)).tolist() for _ in range(rows)]


def _traced(function, *args):
    return tf.function(function, autograph=False)(*args)


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_row_operations_equal_tensorflow_and_python(rows):
    rng = np.random.default_rng(rows)
    lists = _random_rows(rng, rows)
    values = tf.ragged.constant(lists, tf.int32, ragged_rank=1, inner_shape=()) if rows else \
        tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([0], tf.int64))
    assert _traced(value_rowids, values).numpy().tolist() == values.value_rowids().numpy().tolist()
    assert _traced(row_sums, values).numpy().tolist() == [sum(row) for row in lists]
    assert _traced(row_exclusive_cumsum, values).to_list() == [
        np.cumsum([0] + row[:-1]).tolist() if row else [] for row in lists]
    begin = [int(rng.integers(0, len(row) + 1)) for row in lists]
    end = [int(rng.integers(b, len(row) + 1)) for b, row in zip(begin, lists)]
    begin_t, end_t = tf.constant(begin, tf.int32, [rows]), tf.constant(end, tf.int32, [rows])
    assert _traced(row_slices, values, begin_t, end_t).to_list() == [
        row[b:e] for row, b, e in zip(lists, begin, end)]
    assert _traced(row_prefix, values, end_t).to_list() == [row[:e] for row, e in zip(lists, end)]
    assert _traced(row_suffix, values, begin_t).to_list() == [
        row[len(row) - b:] for row, b in zip(lists, begin)]
    others = [tf.ragged.constant(_random_rows(rng, rows), tf.int32, ragged_rank=1) if rows
              else values for _ in range(2)]
    parts = [values, *others]
    assert _traced(lambda *p: concat_rows(list(p)), *parts).to_list() == tf.concat(
        parts, axis=1).to_list()


def test_row_slices_picks_rows_and_keeps_inner_ragged_dimensions():
    pieces = tf.ragged.constant([[[1, 2], [3]], [], [[4], [5, 6], [7]]])  # [B, (W), (P)]
    sliced = _traced(lambda p: row_slices(p, tf.constant([1, 0, 0]), tf.constant([3, 1, 2]),
                                          rows=tf.constant([2, 0, 2])), pieces)
    assert sliced.to_list() == [[[5, 6], [7]], [[1, 2]], [[4], [5, 6]]]
    assert _traced(merge_inner_rows, pieces).to_list() == pieces.merge_dims(1, 2).to_list()


def test_concat_rows_keeps_strings():
    left = tf.ragged.constant([["a"], []])
    right = tf.ragged.constant([["b", "c"], ["d"]])
    assert _traced(lambda a, b: concat_rows([a, b]), left, right).to_list() == [
        [b"a", b"b", b"c"], [b"d"]]


@pytest.mark.parametrize("count", [0, 2, 4])
def test_split_rows_equals_slicing(count):
    values = tf.ragged.constant([[1, 2], [], [3], [4, 5, 6]])
    first, rest = _traced(lambda v: split_rows(v, count), values)
    assert first.to_list() == values[:count].to_list()
    assert rest.to_list() == values[count:].to_list()
