"""What a classifier's predictions say about each example: its label and the probabilities,
a regression classifier's score, or a multi-label classifier's label probabilities."""

import numpy as np

from nlpzoo.tasks.classification.multi_label import sigmoid
from nlpzoo.tasks.modeling.class_outputs import softmax_probabilities
from nlpzoo.tasks.text.text_pipeline import text_columns
from nlpzoo.tasks.words.length_sorting import (
    compiles_each_shape,
    encode_texts,
    predict_encoded_in_length_order,
)


def model_outputs(model, preprocessor, examples, batch_size):
    """The model's outputs [N, C] (float64) for `examples`, in order, batched by length.

    The examples are encoded once and predicted in dense batches of similar
    lengths (`tasks.words.length_sorting.predict_encoded_in_length_order`); the rows
    come back in the order of `examples`. C is the number of classes (logits),
    or 1 for a regression classifier (its scores).

    Args:
        model: the classifier (or an ensemble): [batch, C].
        preprocessor: its `TextPreprocessor`.
        examples: `ClassificationExample`s (all with or all without `text_pair`).
        batch_size: examples per batch.

    Examples:
    >>> import keras
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    >>> class Length(keras.Model):  # one score, the real tokens: the padding is masked
    ...     def call(self, features):
    ...         mask = keras.ops.cast(features["padding_mask"], "float32")
    ...         return keras.ops.sum(mask, 1, keepdims=True)
    >>> examples = [ClassificationExample(text, "x") for text in ("a", "a a a a", "a a")]
    >>> model_outputs(Length(), preprocessor, examples, batch_size=2).tolist()
    [[3.0], [6.0], [4.0]]
    """
    texts, pairs = text_columns(examples)
    rows = predict_encoded_in_length_order(
        encode_texts(preprocessor, texts, pairs),
        lambda features: np.asarray(model.predict_on_batch(features)), batch_size,
        preprocessor.padding_values, preprocessor.max_seq_length,
        pad_to_buckets=compiles_each_shape(model))
    return np.stack(rows).astype(np.float64) if rows else np.zeros((0, 0))


def class_probabilities(model, preprocessor, examples, batch_size):
    """Class probabilities [N, C] (float64) of `examples`, in order, batched by length
    (`model_outputs`, then a softmax; the arguments are `model_outputs`', the model's
    outputs logits [batch, C]).

    Examples:
    >>> import keras
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
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
    logits = model_outputs(model, preprocessor, examples, batch_size)
    return softmax_probabilities(logits) if len(logits) else logits


def label_probabilities(model, preprocessor, examples, batch_size):
    """A multi-label classifier's per-label probabilities [N, C] (float64) of `examples`,
    in order, batched by length (`model_outputs`, then each logit's sigmoid).

    Examples:
    >>> import keras
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    >>> class Length(keras.Model):  # logits [real tokens - 3, 0]
    ...     def call(self, features):
    ...         tokens = keras.ops.sum(keras.ops.cast(features["padding_mask"], "float32"), 1)
    ...         return keras.ops.stack([tokens - 3, keras.ops.zeros_like(tokens)], axis=1)
    >>> examples = [ClassificationExample(text, ()) for text in ("a", "a a a a")]
    >>> label_probabilities(Length(), preprocessor, examples, batch_size=1).round(4).tolist()
    [[0.5, 0.5], [0.9526, 0.5]]
    """
    return sigmoid(model_outputs(model, preprocessor, examples, batch_size))


def predicted_scores(model, preprocessor, examples, batch_size):
    """A regression classifier's scores [N] (float64) of `examples`, in order, batched by
    length (`model_outputs` of its one-unit head).

    Examples:
    >>> import keras
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    >>> class Length(keras.Model):
    ...     def call(self, features):
    ...         mask = keras.ops.cast(features["padding_mask"], "float32")
    ...         return keras.ops.sum(mask, 1, keepdims=True) / 2
    >>> examples = [ClassificationExample(text, "0.5") for text in ("a", "a a a a")]
    >>> predicted_scores(Length(), preprocessor, examples, batch_size=1).tolist()
    [1.5, 3.0]
    """
    return model_outputs(model, preprocessor, examples, batch_size).reshape(-1)


def prediction_record(probabilities, labels):
    """What `model.predict` on raw texts returns for one example: the most probable
    `label`, its probability (`score`) and every label's (`scores`), unrounded.

    Examples:
    >>> prediction_record(np.array([0.25, 0.75]), ["DESC", "HUM"])
    {'label': 'HUM', 'score': 0.75, 'scores': {'DESC': 0.25, 'HUM': 0.75}}
    """
    best = int(np.argmax(probabilities))
    return {"label": labels[best], "score": float(probabilities[best]),
            "scores": {label: float(p) for label, p in zip(labels, probabilities)}}


def score_record(score):
    """What `model.predict` on raw texts returns for one example of a regression
    classifier: its `score`, unrounded.

    Examples:
    >>> score_record(np.float32(0.25))
    {'score': 0.25}
    """
    return {"score": float(score)}
