"""The serving outputs of a classifier, from raw text (see `tasks.modeling.serving`).

Inputs `text` (and `text_pair` for a pair classifier), 1-D strings, packed
as `[CLS] text [SEP]` (or `[CLS] a [SEP] b [SEP]`) and truncated to
`max_seq_length` by the model's `TextPreprocessor`. Outputs `label` (string
[B]), `label_id` (int32 [B]) and `probabilities` (float32 [B, C], softmax of
the logits, columns in label-id order).
"""

import tensorflow as tf
from keras import ops

from nlpzoo.tasks.modeling.serving import first_max_index


def label_outputs(logits, labels):
    """`label`, `label_id` and `probabilities` from class logits [B, C] (any task's head).

    Examples:
    >>> outputs = label_outputs(tf.constant([[0.0, 2.0], [1.0, 1.0]]), ["no", "yes"])
    >>> outputs["label"].numpy().tolist(), outputs["label_id"].numpy().tolist()
    ([b'yes', b'no'], [1, 0])
    """
    probabilities = tf.nn.softmax(ops.cast(logits, "float32"), axis=-1)
    label_id = first_max_index(probabilities)
    return {
        "label": tf.gather(tf.constant(labels), label_id),
        "label_id": label_id,
        "probabilities": probabilities,
    }


def classification_outputs(model, preprocessor, labels, text, text_pair=None):
    """`label`, `label_id` and `probabilities` of a classifier, from raw text."""
    return label_outputs(model(preprocessor(text, text_pair), training=False), labels)
