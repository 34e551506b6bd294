"""A class label from logits, for every task that predicts one class per example
(classification, the bi-encoder): in the serving graph (`label_outputs`) and in NumPy
for prediction files (`softmax_probabilities`, `label_fields`)."""

import numpy as np
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


def softmax_probabilities(logits):
    """Class probabilities [N, C] (float64) from logits [N, C].

    Examples:
    >>> softmax_probabilities(np.log([[1.0, 3.0]])).round(4).tolist()
    [[0.25, 0.75]]
    """
    logits = np.asarray(logits, np.float64)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    return probabilities / probabilities.sum(-1, keepdims=True)


def label_fields(probabilities, labels):
    """`label` (the first most probable) and every class's `probabilities`, rounded to 6
    places, for one example's probabilities [C].

    Examples:
    >>> label_fields(np.array([0.25, 0.75]), ["0", "1"])
    {'label': '1', 'probabilities': {'0': 0.25, '1': 0.75}}
    """
    return {"label": labels[int(np.argmax(probabilities))],
            "probabilities": {label: round(float(p), 6)
                              for label, p in zip(labels, probabilities)}}
