"""Raw text in, decoded predictions out, in one TensorFlow graph (what tools/export.py saves).

`export_saved_model` writes a TensorFlow SavedModel whose `serving_default`
signature takes 1-D `tf.string` tensors named by `task.serving_inputs()`
(`text`; a pair classifier `text` and `text_pair`) and returns
`task.serving_outputs(...)`. Everything happens inside the graph, with the
model's own preprocessor (the same `encode` as the training pipeline, and
the same padding to bucket lengths as `tools/predict.py`), so both give the
same predictions. Each task documents its outputs in its `serving.py`.

This module holds what the tasks' serving outputs share.
"""

import tensorflow as tf

from tasks.text_cleaning import split_words

SIGNATURE = "serving_default"


def first_max_index(values):
    """Arg-max over the last axis, the first index on ties (as NumPy), int32.

    Examples:
    >>> first_max_index(tf.constant([[0.2, 0.4, 0.4], [0.5, 0.1, 0.4]])).numpy().tolist()
    [1, 0]
    """
    best = tf.reduce_max(values, axis=-1, keepdims=True)
    positions = tf.range(tf.shape(values)[-1], dtype=tf.int32)
    candidates = tf.where(values == best, positions, tf.shape(values)[-1])
    return tf.reduce_min(candidates, axis=-1)


def dense_rows(values, row_ids, num_rows, default):
    """Values listed row by row (row ids sorted) → dense [num_rows, longest row].

    Examples:
    >>> dense_rows(tf.constant([7, 8, 9]), tf.constant([0, 0, 2]), 3, -1).numpy().tolist()
    [[7, 8], [-1, -1], [9, -1]]
    """
    ragged = tf.RaggedTensor.from_value_rowids(values, row_ids, nrows=num_rows)
    return ragged.to_tensor(default_value=default)


def word_inputs(preprocessor, text, left_context=None, right_context=None):
    """(words [B, W] ragged, dense model features, kept words [B]) from raw sentences,
    with a `WordPreprocessor`.

    `left_context` and `right_context` ([B] raw strings, "" for none; see
    `tasks.document_context`) are the words of the neighbouring sentences,
    packed around each sentence as unlabelled context; None: no context.
    """
    words = split_words(text)
    left = None if left_context is None else split_words(left_context)
    right = None if right_context is None else split_words(right_context)
    features, counts = preprocessor.encode_words(words, left, right)
    return words, preprocessor.pad(features), tf.cast(counts.row_lengths(), tf.int32)


def word_outputs(words):
    """`words` (string [B, W], "" as padding) and `num_words` (int32 [B])."""
    return {"words": words.to_tensor(""),
            "num_words": tf.cast(words.row_lengths(), tf.int32)}


def entity_outputs(batch, row_ids, starts, ends, labels):
    """Entities listed row by row → `entity_label`, `entity_start`, `entity_end`
    ([B, E], "" or -1 as padding; `end` inclusive) and `num_entities` [B]."""
    return {
        "entity_label": dense_rows(labels, row_ids, batch, ""),
        "entity_start": dense_rows(starts, row_ids, batch, -1),
        "entity_end": dense_rows(ends, row_ids, batch, -1),
        "num_entities": tf.cast(tf.math.bincount(tf.cast(row_ids, tf.int32), minlength=batch,
                                                 maxlength=batch), tf.int32),
    }


def serving_function(task, model, preprocessor, labels):
    """`(function, input_signature)` of the serving signature of a trained model.

    Args:
        task: the model's `Task` (with its options: span NER threshold, ...).
        model: the trained task model.
        preprocessor: its preprocessor (any `TextPreprocessor`; converted to
            the task's own class).
        labels: label names in id order.
    """
    labels = [str(label) for label in labels]
    preprocessor = task.preprocessor_of(preprocessor)
    names = tuple(task.serving_inputs())
    signature = [tf.TensorSpec([None], tf.string, name=name) for name in names]

    def serve(*inputs):
        return task.serving_outputs(model, preprocessor, labels, **dict(zip(names, inputs)))

    return serve, signature


def export_saved_model(task, model, preprocessor, labels, path):
    """Writes a SavedModel with the `serving_default` signature (see the module docstring)."""
    import keras

    preprocessor = task.preprocessor_of(preprocessor)
    function, signature = serving_function(task, model, preprocessor, labels)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(preprocessor.tokenizer())  # its vocabulary table
    archive.add_endpoint(SIGNATURE, function, input_signature=signature)
    archive.write_out(path, verbose=False)
