"""The serving outputs of a span NER model, from raw sentences (see `tasks.modeling.serving`).

Words, windows and character offsets as for tagging (`tasks.tagging.serving`):
`words`, `num_words`, `word_start_char`, `word_end_char`, `entity_label`,
`entity_start`, `entity_end`, `entity_start_char`, `entity_end_char`,
`num_entities`, plus
`entity_score` (float32 [B, E], 0 as padding), the best non-NONE probability
of each entity. Decoding follows the model's options: flat greedy, flat
exact (weighted interval scheduling, in float64 as `tasks.span_ner.decoding`)
or nested, at its threshold. A model trained with document context also takes
`left_context` and `right_context`, as a tagger does (`tasks.tagging.serving`).
"""

import tensorflow as tf
from keras import ops

from nlpzoo.tasks.modeling.serving import (
    dense_rows,
    entity_outputs,
    first_max_index,
    word_outputs,
)
from nlpzoo.tasks.words.serving_windows import merge_window_spans, windowed_word_inputs


def _greedy(scores, qualifies, starts, ends, width):
    """Flat greedy selection [B, K] bool, as `tasks.span_ner.decoding.decode_flat(greedy)`.

    Candidates by descending score, then shorter, then earlier; each is kept
    unless it overlaps one already kept.
    """
    num_spans = tf.shape(scores)[1]
    by_width_then_start = tf.argsort((ends - starts) * (width + 1) + starts, stable=True)
    ranked = tf.gather(tf.where(qualifies, scores, -1.0), by_width_then_start, axis=1)
    order = tf.gather(by_width_then_start,
                      tf.argsort(ranked, axis=1, direction="DESCENDING", stable=True))
    counts = tf.reduce_sum(tf.cast(qualifies, tf.int32), axis=1)
    words = tf.range(width)[None, :]

    def body(step, occupied, selected):
        candidate = order[:, step]
        start = tf.gather(starts, candidate)[:, None]
        end = tf.gather(ends, candidate)[:, None]
        covered = (words >= start) & (words <= end)
        free = ~tf.reduce_any(occupied & covered, axis=1)
        take = (step < counts) & free
        occupied = occupied | (covered & take[:, None])
        selected = selected | (tf.one_hot(candidate, num_spans, on_value=True,
                                          off_value=False) & take[:, None])
        return step + 1, occupied, selected

    batch = tf.shape(scores)[0]
    _, _, selected = tf.while_loop(
        lambda step, occupied, selected: step < tf.reduce_max(tf.concat([counts, [0]], 0)),
        body,
        (tf.constant(0), tf.zeros([batch, width], tf.bool), tf.zeros([batch, num_spans], tf.bool)))
    return selected


def _exact_row(scores, qualifies, starts, ends, width):
    """One sentence's exact flat selection [K] bool (weighted interval scheduling).

    The same float64 recursion and tie rule as `tasks.span_ner.decoding._exact`:
    candidates by end then start; best[j + 1] = max(best[j], best[previous[j]]
    + score[j]); walking back, a candidate is left out whenever that is as good.
    """
    num_spans = tf.shape(scores)[0]
    index = tf.cast(tf.where(qualifies)[:, 0], tf.int32)
    order = tf.argsort(tf.gather(ends, index) * (width + 1) + tf.gather(starts, index),
                       stable=True)
    index = tf.gather(index, order)
    start, end = tf.gather(starts, index), tf.gather(ends, index)
    score = tf.gather(scores, index)
    previous = tf.cast(tf.searchsorted(end, start, side="left"), tf.int32)
    count = tf.shape(index)[0]

    def forward(j, best):
        value = tf.maximum(best.read(j), best.read(previous[j]) + score[j])
        return j + 1, best.write(j + 1, value)

    best = tf.TensorArray(tf.float64, size=count + 1, clear_after_read=False).write(
        0, tf.constant(0.0, tf.float64))
    _, best = tf.while_loop(lambda j, best: j < count, forward, (tf.constant(0), best))
    best = best.stack()

    def backward(j, keep):
        left_out = tf.equal(best[j], best[j - 1])
        keep = tf.tensor_scatter_nd_update(keep, [[j - 1]], [tf.logical_not(left_out)])
        return tf.where(left_out, j - 1, previous[j - 1]), keep

    _, keep = tf.while_loop(lambda j, keep: j > 0, backward,
                            (count, tf.zeros([count], tf.bool)))
    kept = tf.boolean_mask(index, keep)
    return tf.scatter_nd(kept[:, None], tf.ones_like(kept), [num_spans]) > 0


def span_ner_outputs(model, preprocessor, labels, text, threshold=0.5, decoding="flat",
                     method="greedy", left_context=None, right_context=None, stride=0):
    """Words and entities (with scores) of a `SpanNER` model, from raw sentences (and
    their document context, raw strings too), in windows overlapping by `stride` subwords."""
    windows = windowed_word_inputs(preprocessor, text, left_context, right_context, stride)
    max_width = int(model.max_span_width)
    probabilities = ops.softmax(model(windows.features, training=False), axis=-1)
    probabilities, valid = merge_window_spans(
        windows, ops.cast(probabilities, "float32"), max_width)  # [B, W·L, C], [B, W·L]
    width = tf.shape(valid)[1] // max_width
    span_starts = tf.range(width * max_width) // max_width  # span k = start·L + (end − start)
    span_ends = span_starts + tf.tile(tf.range(max_width), [width])
    entity_probabilities = probabilities[:, :, 1:]
    scores = tf.reduce_max(entity_probabilities, axis=-1)  # [B, K]
    best = first_max_index(entity_probabilities) + 1
    qualifies = valid & (
        tf.cast(scores, tf.float64) >= tf.constant(float(threshold), tf.float64))
    if decoding == "nested":
        selected = qualifies
    elif method == "greedy":
        selected = _greedy(scores, qualifies, span_starts, span_ends, width)
    elif method == "exact":
        # Sentence by sentence; map_fn cannot stack zero results, hence the cond.
        selected = tf.cond(
            tf.shape(scores)[0] > 0,
            lambda: tf.map_fn(
                lambda row: _exact_row(row[0], row[1], span_starts, span_ends, width),
                (tf.cast(scores, tf.float64), qualifies),
                fn_output_signature=tf.TensorSpec([None], tf.bool)),
            lambda: tf.zeros_like(qualifies))
    else:
        raise ValueError(f"unknown span decoding {decoding!r} / {method!r}")
    where = tf.cast(tf.where(selected), tf.int32)  # by row, then span index = (start, end)
    span = where[:, 1]
    outputs = entity_outputs(windows, where[:, 0], tf.gather(span_starts, span),
                              tf.gather(span_ends, span),
                              tf.gather(tf.constant(labels), tf.gather_nd(best, where)))
    outputs["entity_score"] = dense_rows(tf.gather_nd(scores, where), where[:, 0],
                                          tf.shape(scores)[0], 0.0)
    return {**word_outputs(windows), **outputs}
