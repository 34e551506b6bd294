"""The classification model: an encoder, its pooled output, a classification head."""

import keras

from layers import ClassificationHead
from tasks.classification.metrics import BinaryF1


def build_classifier(encoder, num_classes, dropout=0.1, head_hidden_dim=None):
    """A functional model from encoder inputs to `num_classes` float32 logits.

    Args:
        encoder: a functional encoder model with inputs `token_ids`,
            `segment_ids`, `padding_mask` and a `pooled_output` output.
        num_classes: number of classes (2 or more).
        dropout: dropout before the logits.
        head_hidden_dim: width of an optional extra dense + tanh layer.
    """
    if num_classes < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask")}
    pooled = encoder(inputs)["pooled_output"]
    logits = ClassificationHead(
        num_classes,
        dropout=dropout,
        hidden_dim=head_hidden_dim,
        name="classification_head",
    )(pooled)
    return keras.Model(inputs, logits, name="classifier")


def classification_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def classification_metrics(num_classes):
    """Accuracy, plus F1 of class 1 for binary tasks."""
    metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    if num_classes == 2:
        metrics.append(BinaryF1(name="f1"))
    return metrics
