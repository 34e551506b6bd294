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


def word_outputs(windows):
    """`words` (string [B, W], "" as padding), `num_words` (int32 [B]), and each word's
    `word_start_char`, `word_end_char` (int32 [B, W], -1 as padding: character
    offsets into the text as given, `tasks.text.word_splitting.split_texts_with_offsets`)."""
    return {"words": windows.words.to_tensor(""),
            "num_words": tf.cast(windows.words.row_lengths(), tf.int32),
            "word_start_char": windows.char_starts.to_tensor(-1),
            "word_end_char": windows.char_ends.to_tensor(-1)}


def entity_outputs(windows, row_ids, starts, ends, labels):
    """Entities listed row by row → `entity_label`, `entity_start`, `entity_end`
    ([B, E], "" or -1 as padding; `end` inclusive), `entity_start_char`,
    `entity_end_char` ([B, E], -1 as padding: `text[start_char:end_char]` is the
    entity as written) and `num_entities` [B]."""
    batch = windows.words.nrows(out_type=tf.int32)
    row_ids = tf.cast(row_ids, tf.int32)
    first = tf.cast(tf.gather(windows.words.row_starts(), row_ids), tf.int32)
    start_char = tf.gather(windows.char_starts.flat_values, first + starts)
    end_char = tf.gather(windows.char_ends.flat_values, first + ends)
    return {
        "entity_label": dense_rows(labels, row_ids, batch, ""),
        "entity_start": dense_rows(starts, row_ids, batch, -1),
        "entity_end": dense_rows(ends, row_ids, batch, -1),
        "entity_start_char": dense_rows(start_char, row_ids, batch, -1),
        "entity_end_char": dense_rows(end_char, row_ids, batch, -1),
        "num_entities": tf.math.bincount(row_ids, minlength=batch, maxlength=batch,
                                         dtype=tf.int32),
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
    # Not `archive.track(model)`: that lists the model's Keras variables beside the
    # tf.Variables inside them, which the endpoint's captures already save, and the
    # SavedModel held every weight twice. The endpoint's variables are saved once.
    archive.track(preprocessor.tokenizer())  # its vocabulary table
    archive.add_endpoint(SIGNATURE, function, input_signature=signature)
    archive.write_out(path, verbose=False)
