"""What a classifier's predictions say about each example: its label and the probabilities."""

import numpy as np


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
