"""`tasks.words.windows` inside the exported graph: long raw texts in overlapping windows.

The same plan and the same merge as `tools/predict.py` (a test checks that
they agree): each text is cut into windows of whole words of at most
`max_seq_length - 2` subwords, overlapping by up to `stride` subwords; each
window is encoded with the words around it as context (the document context
inputs at the text's two ends); each word, or span, takes its prediction
from the window where it has the most context. A text that fits is one
window, encoded exactly as before.
"""

import typing

import tensorflow as tf

from nlpzoo.tasks.text.ragged_rows import (
    concat_rows,
    row_prefix,
    row_slices,
    row_suffix,
    row_sums,
    value_rowids,
)
from nlpzoo.tasks.text.word_splitting import split_texts, split_texts_with_offsets

_FAR = 2 ** 30  # beyond any subword count: closes the prefix sums of shorter rows


class WordWindows(typing.NamedTuple):
    """Raw texts as windows: what the serving functions run the model on and merge.

    words, char_starts, char_ends: [B, (W)] ragged, the cleaned words of each
        text and their character offsets (`split_texts_with_offsets`).
    features: dense model features of the N windows.
    rows, starts, ends: int32 [N], each window's text and its words
        `[start, end)`, in text order.
    kept: int32 [N], the window's words the encoder kept (all but a word
        longer than the whole window).
    """

    words: tf.RaggedTensor
    char_starts: tf.RaggedTensor
    char_ends: tf.RaggedTensor
    features: dict
    rows: tf.Tensor
    starts: tf.Tensor
    ends: tf.Tensor
    kept: tf.Tensor


def plan_windows(counts, budget, stride):
    """`tasks.words.windows.plan_windows` for a batch: counts [B, (W)] → rows, starts, ends [N].

    A text with no word gets no window.

    Examples:
    >>> rows, starts, ends = plan_windows(tf.ragged.constant([[2, 2, 2, 2, 2], [1], []]), 6, 2)
    >>> rows.numpy().tolist(), starts.numpy().tolist(), ends.numpy().tolist()
    ([0, 0, 1], [0, 2, 0], [3, 5, 1])
    """
    counts = tf.cast(counts, tf.int32)
    num_words = tf.cast(counts.row_lengths(), tf.int32)
    batch = tf.shape(num_words)[0]
    dense = counts.to_tensor(0)
    prefix = tf.concat([tf.zeros([batch, 1], tf.int32), tf.cumsum(dense, axis=1)], axis=1)
    positions = tf.range(tf.shape(prefix)[1])[None, :]
    prefix = tf.where(positions <= num_words[:, None], prefix, _FAR)  # sorted in every row

    def at(index):
        return tf.gather(prefix, index, batch_dims=1)

    def body(start, active, rows, starts, ends):
        # The most whole words that fit from `start` (at least one).
        end = tf.searchsorted(prefix, (at(start) + budget)[:, None], side="right")[:, 0] - 1
        end = tf.minimum(tf.maximum(end, start + 1), num_words)
        # The next window starts where at most `stride` subwords of this one remain,
        # and leaves room for the next word.
        next_count = at(tf.minimum(end + 1, num_words)) - at(end)
        overlap = tf.minimum(stride, budget - next_count)
        following = tf.searchsorted(prefix, (at(end) - overlap)[:, None], side="left")[:, 0]
        following = tf.minimum(tf.maximum(following, start + 1), end)
        rows = rows.write(rows.size(), tf.boolean_mask(tf.range(batch), active))
        starts = starts.write(starts.size(), tf.boolean_mask(start, active))
        ends = ends.write(ends.size(), tf.boolean_mask(end, active))
        more = active & (end < num_words)
        return tf.where(more, following, start), more, rows, starts, ends

    def arrays():
        return tf.TensorArray(tf.int32, size=0, dynamic_size=True, infer_shape=False,
                              element_shape=tf.TensorShape([None]))

    _, _, rows, starts, ends = tf.while_loop(
        lambda start, active, *_: tf.reduce_any(active), body,
        (tf.zeros([batch], tf.int32), num_words > 0, arrays(), arrays(), arrays()))
    rows, starts, ends = (tf.ensure_shape(values.concat(), [None])
                          for values in (rows, starts, ends))
    order = tf.argsort(rows * (tf.reduce_max(tf.concat([num_words, [0]], 0)) + 1) + starts,
                       stable=True)
    return tf.gather(rows, order), tf.gather(starts, order), tf.gather(ends, order)


def _only_where(values, keep):
    """values [N, (K)] ragged with the rows where `keep` [N] is False emptied."""
    lengths = values.row_lengths()
    return row_prefix(values, tf.where(keep, lengths, tf.zeros_like(lengths)))


def _at_most(values, count, last):
    """values [B, (K)] ragged cut to the last (or first) `count` (scalar or [B]) items of
    each row."""
    lengths = tf.minimum(values.row_lengths(), tf.cast(count, tf.int64))
    return row_suffix(values, lengths) if last else row_prefix(values, lengths)


def windowed_word_inputs(preprocessor, text, left_context=None, right_context=None,
                         stride=0):
    """Raw texts [B] → `WordWindows`, with a `WordPreprocessor`.

    `left_context` and `right_context` ([B] raw strings, "" for none; see
    `tasks.words.document_context`) are packed before a text's first window and
    after its last; the other windows get the text's own words around them.
    `stride` is the overlap in subwords (`tasks.words.windows.resolve_stride`).
    """
    words, char_starts, char_ends = split_texts_with_offsets(text)
    counts = tf.cast(preprocessor.word_pieces(words).row_lengths(axis=2), tf.int32)
    budget = preprocessor.max_seq_length - 2
    rows, starts, ends = plan_windows(counts, budget, stride)
    num_words = tf.cast(words.row_lengths(), tf.int32)
    # At most as many context words a side as the window leaves subwords free: all that can
    # be packed (`tasks.words.windows.context_words`), so windows stay linear in the text.
    free = tf.maximum(budget - row_sums(row_slices(counts, starts, ends, rows)), 0)
    left = row_slices(words, tf.maximum(starts - free, 0), starts, rows)
    right = row_slices(words, ends, tf.minimum(ends + free, tf.gather(num_words, rows)), rows)
    if left_context is not None:
        around = tf.gather(_at_most(split_texts(left_context), budget, last=True), rows)
        left = _at_most(concat_rows([_only_where(around, tf.equal(starts, 0)), left]), free,
                        last=True)
    if right_context is not None:
        around = tf.gather(_at_most(split_texts(right_context), budget, last=False), rows)
        right = _at_most(concat_rows(
            [right, _only_where(around, tf.equal(ends, tf.gather(num_words, rows)))]), free,
            last=False)
    features, kept = preprocessor.encode_words(row_slices(words, starts, ends, rows), left, right)
    return WordWindows(words, char_starts, char_ends, preprocessor.pad(features), rows, starts,
                       ends, tf.cast(kept.row_lengths(), tf.int32))


def _best_pairs(targets, contexts, num_targets):
    """Which of many (target, context) pairs gives each target its value: the most context,
    then the earliest pair. Returns a bool mask over the pairs."""
    count = tf.shape(targets)[0]
    key = tf.cast(contexts, tf.int64) * tf.cast(count + 1, tf.int64) + tf.cast(
        count - tf.range(count), tf.int64)
    best = tf.math.unsorted_segment_max(key, targets, num_targets)
    return tf.equal(key, tf.gather(best, targets))


def merge_window_words(windows, values):
    """Per-window word values [N, Ww] → per-text values [B, W] (dense, 0 as padding) and a
    bool mask [B, W] of the words whose owner window kept them (the others are cut off)."""
    lengths = windows.ends - windows.starts
    local = tf.ragged.range(lengths)  # [N, (Ww)]
    pair_window = tf.cast(value_rowids(local), tf.int32)
    position = tf.cast(local.flat_values, tf.int32)
    length = tf.gather(lengths, pair_window)
    offsets = tf.cast(tf.gather(windows.words.row_starts(), tf.gather(windows.rows, pair_window)),
                      tf.int32)
    targets = offsets + tf.gather(windows.starts, pair_window) + position
    total = tf.cast(tf.size(windows.words.flat_values), tf.int32)
    best = _best_pairs(targets, tf.minimum(position, length - 1 - position), total)
    width = tf.shape(values)[1]
    padded = tf.pad(values, [[0, 0], [0, tf.maximum(tf.reduce_max(tf.concat([lengths, [0]], 0))
                                                    - width, 0)]])
    pair_values = tf.gather_nd(padded, tf.stack([pair_window, position], axis=1))
    pair_kept = position < tf.gather(windows.kept, pair_window)
    flat_values = tf.scatter_nd(tf.boolean_mask(targets, best)[:, None],
                                tf.boolean_mask(pair_values, best), [total])
    flat_kept = tf.scatter_nd(tf.boolean_mask(targets, best)[:, None],
                              tf.boolean_mask(pair_kept, best), [total])
    return (windows.words.with_flat_values(flat_values).to_tensor(),
            windows.words.with_flat_values(flat_kept).to_tensor(False))


def merge_window_spans(windows, probabilities, max_width):
    """Per-window span probabilities [N, Ww·L, C] → per-text [B, W·L, C] and a bool mask
    [B, W·L] of the spans some window scored (inside its kept words); span k = start·L + width."""
    lengths = windows.ends - windows.starts
    window_width = tf.shape(probabilities)[1] // max_width
    count = tf.shape(probabilities)[0]
    local_start = tf.tile((tf.range(window_width * max_width) // max_width)[None, :], [count, 1])
    local_end = local_start + tf.tile(tf.range(max_width), [window_width])[None, :]
    valid = local_end < windows.kept[:, None]  # [N, Ww·L]
    where = tf.cast(tf.where(valid), tf.int32)
    pair_window, pair_span = where[:, 0], where[:, 1]
    start = tf.gather_nd(local_start, where)
    end = tf.gather_nd(local_end, where)
    offsets = tf.cast(tf.gather(windows.words.row_starts(), tf.gather(windows.rows, pair_window)),
                      tf.int32)
    first_word = offsets + tf.gather(windows.starts, pair_window) + start
    targets = first_word * max_width + (end - start)
    total_words = tf.cast(tf.size(windows.words.flat_values), tf.int32)
    best = _best_pairs(
        targets, tf.minimum(start, tf.gather(lengths, pair_window) - 1 - end),
        total_words * max_width)
    chosen = tf.boolean_mask(targets, best)[:, None]
    num_classes = tf.shape(probabilities)[2]
    flat = tf.scatter_nd(chosen, tf.gather_nd(probabilities, tf.boolean_mask(where, best)),
                         tf.stack([total_words * max_width, num_classes]))
    flat_valid = tf.scatter_nd(chosen, tf.ones_like(tf.boolean_mask(targets, best), tf.bool),
                               [total_words * max_width])
    spans = tf.RaggedTensor.from_row_lengths(
        tf.reshape(flat, [total_words, max_width, num_classes]), windows.words.row_lengths())
    spans_valid = tf.RaggedTensor.from_row_lengths(
        tf.reshape(flat_valid, [total_words, max_width]), windows.words.row_lengths())
    batch = windows.words.nrows()
    dense = tf.reshape(spans.to_tensor(0.0), [batch, -1, num_classes])
    return dense, tf.reshape(spans_valid.to_tensor(False), [batch, -1])
