"""What a classifier's predictions say about each example: its label and the probabilities."""

import numpy as np

from nlpzoo.tasks.classification.pipeline import text_columns
from nlpzoo.tasks.text.length_sorting import (
    compiles_each_shape,
    encode_texts,
    predict_encoded_in_length_order,
)


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


def class_probabilities(model, preprocessor, examples, batch_size):
    """Class probabilities [N, C] (float64) of `examples`, in order, batched by length.

    The examples are encoded once and predicted in dense batches of similar
    lengths (`tasks.text.length_sorting.predict_encoded_in_length_order`); the rows
    come back in the order of `examples`.

    Args:
        model: the classifier (or an ensemble): logits [batch, C].
        preprocessor: its `TextPreprocessor`.
        examples: `ClassificationExample`s (all with or all without `text_pair`).
        batch_size: examples per batch.

    Examples:
    >>> import keras
    >>> from nlpzoo.tasks.classification.readers import ClassificationExample
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    >>> class Length(keras.Model):  # logits [0, real tokens]: the batch's padding is masked
    ...     def call(self, features):
    ...         tokens = keras.ops.sum(keras.ops.cast(features["padding_mask"], "float32"), 1)
    ...         return keras.ops.stack([keras.ops.zeros_like(tokens), tokens], axis=1)
    >>> examples = [ClassificationExample(text, "x") for text in ("a", "a a a a", "a a")]
    >>> probabilities = class_probabilities(Length(), preprocessor, examples, batch_size=2)
    >>> np.log(probabilities[:, 1] / probabilities[:, 0]).round(3).tolist()
    [3.0, 6.0, 4.0]
    """
    texts, pairs = text_columns(examples)
    rows = predict_encoded_in_length_order(
        encode_texts(preprocessor, texts, pairs),
        lambda features: np.asarray(model.predict_on_batch(features)), batch_size,
        preprocessor.padding_values, preprocessor.max_seq_length,
        pad_to_buckets=compiles_each_shape(model))
    return softmax_probabilities(np.stack(rows)) if rows else np.zeros((0, 0))
