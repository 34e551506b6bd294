"""The serving outputs of a classifier, from raw text (see `tasks.modeling.serving`).

Inputs `text` (and `text_pair` for a pair classifier), 1-D strings, packed
as `[CLS] text [SEP]` (or `[CLS] a [SEP] b [SEP]`) and truncated to
`max_seq_length` by the model's `TextPreprocessor`. Outputs `label` (string
[B]), `label_id` (int32 [B]) and `probabilities` (float32 [B, C], softmax of
the logits, columns in label-id order); a regression classifier's: `score`
(float32 [B]); a multi-label classifier's: `probabilities` (float32 [B, C],
each label's sigmoid), `labels` (string [B, L]: the labels at or over their
thresholds, in label-id order, "" as padding) and `num_labels` (int32 [B]).
"""

import tensorflow as tf
from keras import ops

from nlpzoo.tasks.modeling.class_outputs import label_outputs
from nlpzoo.tasks.modeling.serving import dense_rows


def classification_outputs(model, preprocessor, labels, text, text_pair=None):
    """`label`, `label_id` and `probabilities` of a classifier, from raw text."""
    return label_outputs(model(preprocessor(text, text_pair), training=False), labels)


def score_outputs(model, preprocessor, text, text_pair=None):
    """`score` (float32 [B]) of a regression classifier, from raw text."""
    scores = model(preprocessor(text, text_pair), training=False)
    return {"score": ops.reshape(ops.cast(scores, "float32"), (-1,))}


def multi_label_outputs(model, preprocessor, labels, thresholds, text, text_pair=None):
    """`probabilities`, `labels` and `num_labels` of a multi-label classifier, from raw
    text; a label is predicted when its probability is at least its threshold.

    Examples:
    >>> identity = lambda features, training: features
    >>> outputs = multi_label_outputs(identity, lambda text, pair: tf.constant(text),
    ...                               ["a", "b"], [0.5, 0.2], [[2.0, -1.0], [-3.0, -3.0]])
    >>> outputs["labels"].numpy().tolist(), outputs["num_labels"].numpy().tolist()
    ([[b'a', b'b'], [b'', b'']], [2, 0])
    """
    logits = ops.cast(model(preprocessor(text, text_pair), training=False), "float32")
    probabilities = tf.sigmoid(logits)
    over = probabilities >= tf.constant(thresholds, tf.float32)
    where = tf.cast(tf.where(over), tf.int32)  # [K, 2] (row, label id), row by row
    names = tf.gather(tf.constant([str(label) for label in labels]), where[:, 1])
    return {"probabilities": probabilities,
            "labels": dense_rows(names, where[:, 0], tf.shape(logits)[0], ""),
            "num_labels": tf.reduce_sum(tf.cast(over, tf.int32), axis=1)}
