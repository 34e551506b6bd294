"""Raw text in, decoded predictions out, in one TensorFlow graph (what tools/export.py saves).

`export_saved_model` writes a TensorFlow SavedModel whose `serving_default`
signature takes a 1-D `tf.string` tensor `text` of raw sentences (a pair
classifier takes `text` and `text_pair`). Everything happens inside the
graph, with the model's own tokenizer (tensorflow-text, the same
`WordPieceTokenizer` normalisation as training) and the same padding to
bucket lengths as `tools/predict.py`, so both give the same predictions:

- classification: `[CLS] text [SEP]` (or `[CLS] a [SEP] b [SEP]`), truncated
  to `max_seq_length`. Outputs `label` (string [B]), `label_id` (int32 [B])
  and `probabilities` (float32 [B, C], softmax of the logits, columns in
  label-id order).
- tagging and span NER: each sentence is split into words at whitespace as
  Python's `str.split()` does (what `tools/predict.py` does with plain-text
  input); words whose subwords do not fit in `max_seq_length` are dropped
  (tagged `O`, never in an entity). Outputs, padded to the longest row:
  `words` (string [B, W], "" as padding), `num_words` (int32 [B]),
  `entity_label` (string [B, E], ""), `entity_start`, `entity_end` (int32
  [B, E], word offsets with an inclusive end as in `tools/predict.py`'s
  JSONL, -1 as padding) and `num_entities` (int32 [B]). Entities are sorted
  by start, then end.
  - tagging adds `tags` (string [B, W], "" as padding); a CRF decodes with
    Viterbi in the graph; entities are read from the tags as
    `tasks.tagging.tags_to_spans` (conlleval) reads them.
  - span NER adds `entity_score` (float32 [B, E], 0 as padding), the best
    non-NONE probability of each entity, and decodes with the model's
    options: flat greedy, flat exact (weighted interval scheduling, in
    float64 as `tasks.span_ner.decoding`) or nested, at its threshold.
"""

import tensorflow as tf
from keras import ops

from tasks.batching import bucket_lengths
from tasks.tagging.readers import split_tag
from tasks.word_pipeline import encode_words

SIGNATURE = "serving_default"

# Every character Python's str.isspace() accepts: str.split() splits at each of them.
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WHITESPACE_PATTERN = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE) + "]"
_TAG_PREFIXES = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4}


def split_words(texts):
    """[B] strings → string RaggedTensor [B, words], split as Python's `str.split()`.

    Examples:
    >>> split_words(tf.constant(["  EU\\u00a0rejects\\tGerman ", ""])).to_list()
    [[b'EU', b'rejects', b'German'], []]
    """
    spaced = tf.strings.regex_replace(texts, _WHITESPACE_PATTERN, " ")
    return tf.strings.split(spaced)


def _padded_length(longest, max_seq_length):
    """The bucket length a batch whose longest row is `longest` is padded to (as predict.py)."""
    lengths = tf.constant(bucket_lengths(max_seq_length), tf.int32)
    return tf.gather(lengths, tf.reduce_sum(tf.cast(lengths < longest, tf.int32)))


def _to_dense(ragged, length, padding=0):
    """A ragged [B, (n)] tensor right-padded to a dense [B, length] (length >= every n)."""
    dense = ragged.to_tensor(padding)
    return tf.pad(dense, [[0, 0], [0, length - tf.shape(dense)[1]]], constant_values=padding)


def _first_max_index(values):
    """Arg-max over the last axis, the first index on ties (as NumPy), int32."""
    best = tf.reduce_max(values, axis=-1, keepdims=True)
    positions = tf.range(tf.shape(values)[-1], dtype=tf.int32)
    candidates = tf.where(values == best, positions, tf.shape(values)[-1])
    return tf.reduce_min(candidates, axis=-1)


def _dense_rows(values, row_ids, num_rows, default):
    """Values listed row by row (row ids sorted) → dense [num_rows, longest row]."""
    ragged = tf.RaggedTensor.from_value_rowids(values, row_ids, nrows=num_rows)
    return ragged.to_tensor(default_value=default)


# ---------------------------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------------------------


def classification_outputs(model, tokenizer, labels, max_seq_length, text, text_pair=None):
    """`label`, `label_id` and `probabilities` of a classifier, from raw text."""
    segments = [tokenizer.tokenize_flat(text)]
    if text_pair is not None:
        segments.append(tokenizer.tokenize_flat(text_pair))
    token_ids, segment_ids = tokenizer.pack(segments, max_seq_length)
    length = _padded_length(tf.reduce_max(tf.cast(token_ids.row_lengths(), tf.int32)),
                            max_seq_length)
    features = {
        "token_ids": _to_dense(token_ids, length, tokenizer.pad_id),
        "segment_ids": _to_dense(segment_ids, length),
        "padding_mask": _to_dense(tf.ones_like(token_ids), length),
    }
    logits = ops.cast(model(features, training=False), "float32")
    probabilities = tf.nn.softmax(logits, axis=-1)
    label_id = _first_max_index(probabilities)
    return {
        "label": tf.gather(tf.constant(labels), label_id),
        "label_id": label_id,
        "probabilities": probabilities,
    }


# ---------------------------------------------------------------------------------------------
# Word-level tasks
# ---------------------------------------------------------------------------------------------


def _word_inputs(tokenizer, max_seq_length, text):
    """(words [B, W] ragged, model features, kept words [B]) from raw sentences."""
    words = split_words(text)
    token_ids, starts = encode_words(tokenizer, words, max_seq_length)
    length = _padded_length(tf.reduce_max(tf.cast(token_ids.row_lengths(), tf.int32)),
                            max_seq_length)
    # As in training and predict.py, word features are padded to the token length too.
    features = {
        "token_ids": _to_dense(token_ids, length, tokenizer.pad_id),
        "segment_ids": _to_dense(tf.zeros_like(token_ids), length),
        "padding_mask": _to_dense(tf.ones_like(token_ids), length),
        "word_starts": _to_dense(starts, length),
        "word_mask": _to_dense(tf.ones_like(starts), length),
    }
    kept = tf.cast(starts.row_lengths(), tf.int32)
    return words, features, kept


def _word_outputs(words):
    return {"words": words.to_tensor(""),
            "num_words": tf.cast(words.row_lengths(), tf.int32)}


def _entity_outputs(batch, row_ids, starts, ends, labels):
    return {
        "entity_label": _dense_rows(labels, row_ids, batch, ""),
        "entity_start": _dense_rows(starts, row_ids, batch, -1),
        "entity_end": _dense_rows(ends, row_ids, batch, -1),
        "num_entities": tf.cast(tf.math.bincount(tf.cast(row_ids, tf.int32), minlength=batch,
                                                 maxlength=batch), tf.int32),
    }


def tags_to_entities(prefixes, types, type_names):
    """Entities of tag sequences, vectorised, as `tasks.tagging.tags_to_spans` reads tags.

    A non-`O` tag starts an entity unless it is `I-x`/`E-x` right after
    `B-x`/`I-x` of the same type, which extends it.

    Args:
        prefixes: int32 [B, W] tag prefixes (0 `O`, 1 `B`, 2 `I`, 3 `E`, 4 `S`).
        types: int32 [B, W] entity type ids (anything at `O`).
        type_names: the entity type names, by type id.

    Returns:
        `(row_ids, starts, ends, labels)`: one value per entity, row by row,
        by start; `end` inclusive.

    Examples:
    >>> prefixes = tf.constant([[1, 2, 0, 2, 1, 2]])  # B-PER I-PER O I-LOC B-LOC I-ORG
    >>> types = tf.constant([[0, 0, 0, 1, 1, 2]])
    >>> rows, starts, ends, labels = tags_to_entities(prefixes, types, ["PER", "LOC", "ORG"])
    >>> starts.numpy().tolist(), ends.numpy().tolist(), labels.numpy().tolist()
    ([0, 3, 4, 5], [1, 3, 4, 5], [b'PER', b'LOC', b'LOC', b'ORG'])
    """
    batch, width = tf.shape(prefixes)[0], tf.shape(prefixes)[1]
    previous_prefix = tf.pad(prefixes[:, :-1], [[0, 0], [1, 0]])  # O before the first word
    previous_type = tf.pad(types[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
    continues = ((previous_prefix == 1) | (previous_prefix == 2)) & (
        (prefixes == 2) | (prefixes == 3)) & (previous_type == types)
    begins = (prefixes != 0) & ~continues
    member = begins | continues
    # Entity k (row-major over all rows) owns its start and the positions that continue it;
    # continuing positions follow their start in the same row, so a running count works.
    entity_of = tf.reshape(tf.cumsum(tf.cast(begins, tf.int32), axis=1), [-1])
    row_offsets = tf.cumsum(tf.reduce_sum(tf.cast(begins, tf.int32), axis=1), exclusive=True)
    entity_of = entity_of + tf.repeat(row_offsets, width) - 1
    positions = tf.tile(tf.range(width, dtype=tf.int32), [batch])
    flat_member = tf.reshape(member, [-1])
    total = tf.reduce_sum(tf.cast(begins, tf.int32))
    ends = tf.math.unsorted_segment_max(tf.boolean_mask(positions, flat_member),
                                        tf.boolean_mask(entity_of, flat_member), total)
    where = tf.cast(tf.where(begins), tf.int32)  # [entities, 2], row-major
    type_ids = tf.gather_nd(types, where)
    labels = tf.gather(tf.constant(list(type_names) or [""]), type_ids)
    return where[:, 0], where[:, 1], ends, labels


def tagging_outputs(model, tokenizer, labels, max_seq_length, text):
    """Words, tags and entities of a `SequenceTagger`, from raw sentences."""
    words, features, kept = _word_inputs(tokenizer, max_seq_length, text)
    tag_ids = ops.cast(model.decode(features), "int32")  # [B, padded words]
    num_words = tf.cast(words.row_lengths(), tf.int32)
    width = tf.reduce_max(tf.concat([num_words, [0]], 0))
    tag_ids = tf.pad(tag_ids, [[0, 0], [0, tf.maximum(width - tf.shape(tag_ids)[1], 0)]])
    tag_ids = tag_ids[:, :width]
    position = tf.range(width)[None, :]
    decoded = position < kept[:, None]  # words cut off by max_seq_length are "O"

    type_names = sorted({split_tag(label)[1] for label in labels if label != "O"})
    prefixes, types = [], []
    for label in labels:
        prefix, entity_type = split_tag(label)
        prefixes.append(_TAG_PREFIXES[prefix])
        types.append(type_names.index(entity_type) if entity_type is not None else -1)
    prefix = tf.where(decoded, tf.gather(tf.constant(prefixes, tf.int32), tag_ids), 0)
    entity_type = tf.where(decoded, tf.gather(tf.constant(types, tf.int32), tag_ids), -1)
    tags = tf.where(decoded, tf.gather(tf.constant(labels), tag_ids), "O")
    tags = tf.where(position < num_words[:, None], tags, "")

    row_ids, starts, ends, entity_labels = tags_to_entities(prefix, entity_type, type_names)
    return {**_word_outputs(words), "tags": tags,
            **_entity_outputs(tf.shape(tag_ids)[0], row_ids, starts, ends, entity_labels)}


# ---------------------------------------------------------------------------------------------
# Span NER
# ---------------------------------------------------------------------------------------------


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


def span_ner_outputs(model, tokenizer, labels, max_seq_length, text, threshold=0.5,
                     decoding="flat", method="greedy"):
    """Words and entities (with scores) of a `SpanNER` model, from raw sentences."""
    words, features, kept = _word_inputs(tokenizer, max_seq_length, text)
    probabilities = ops.softmax(model(features, training=False), axis=-1)
    probabilities = ops.cast(probabilities, "float32")  # [B, W·L, C]
    max_width = int(model.max_span_width)
    width = tf.shape(features["word_mask"])[1]
    span_starts = tf.repeat(tf.range(width), max_width)  # span k = start·L + (end − start)
    span_ends = span_starts + tf.tile(tf.range(max_width), [width])
    entity_probabilities = probabilities[:, :, 1:]
    scores = tf.reduce_max(entity_probabilities, axis=-1)  # [B, K]
    best = _first_max_index(entity_probabilities) + 1
    qualifies = (span_ends[None, :] < kept[:, None]) & (
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
    outputs = _entity_outputs(tf.shape(scores)[0], where[:, 0], tf.gather(span_starts, span),
                              tf.gather(span_ends, span),
                              tf.gather(tf.constant(labels), tf.gather_nd(best, where)))
    outputs["entity_score"] = _dense_rows(tf.gather_nd(scores, where), where[:, 0],
                                          tf.shape(scores)[0], 0.0)
    return {**_word_outputs(words), **outputs}


# ---------------------------------------------------------------------------------------------
# The serving function and the SavedModel
# ---------------------------------------------------------------------------------------------


def serving_function(model, tokenizer, labels, config, task_options=None):
    """`(function, input_signature)` of the serving signature for a trained model.

    Args:
        model: a trained task model (classifier, `SequenceTagger`, `SpanNER`).
        tokenizer: its `WordPieceTokenizer`.
        labels: label names in id order.
        config: at least `task` and `max_seq_length`; `preset` tells a pair
            classifier (two inputs) from a single-text one.
        task_options: the task's options (span NER `threshold`, `decoding`,
            `flat_method`); `config["task_options"]` by default.
    """
    labels = [str(label) for label in labels]
    max_seq_length = int(config["max_seq_length"])
    options = dict(config.get("task_options") or {}) if task_options is None else task_options
    task = config["task"]
    text = tf.TensorSpec([None], tf.string, name="text")
    if task == "classification":
        from zoo.presets import TASK_PRESETS  # here: zoo imports tasks

        preset = TASK_PRESETS.get(config.get("preset"))
        if preset is not None and preset.paired_input:
            def serve_pairs(text, text_pair):
                return classification_outputs(model, tokenizer, labels, max_seq_length,
                                              text, text_pair)
            return serve_pairs, [text, tf.TensorSpec([None], tf.string, name="text_pair")]

        def serve(text):
            return classification_outputs(model, tokenizer, labels, max_seq_length, text)
        return serve, [text]
    if task == "tagging":
        def serve(text):
            return tagging_outputs(model, tokenizer, labels, max_seq_length, text)
        return serve, [text]
    if task == "span_ner":
        decoding = dict(threshold=float(options.get("threshold", 0.5)),
                        decoding=options.get("decoding", "flat"),
                        method=options.get("flat_method", "greedy"))

        def serve(text):
            return span_ner_outputs(model, tokenizer, labels, max_seq_length, text, **decoding)
        return serve, [text]
    raise ValueError(f"cannot export a {task!r} model")


def export_saved_model(model, tokenizer, labels, config, path):
    """Writes a SavedModel with the `serving_default` signature (see the module docstring)."""
    import keras

    function, signature = serving_function(model, tokenizer, labels, config)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(tokenizer)  # its vocabulary lookup table
    archive.add_endpoint(SIGNATURE, function, input_signature=signature)
    archive.write_out(path, verbose=False)
