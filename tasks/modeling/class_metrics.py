"""Loss, metrics and best-model monitor of every task that predicts one class per example
(classification, the bi-encoder): cross-entropy, accuracy, and F1 of the positive class for
binary tasks."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="nlpzoo")
class BinaryF1(keras.metrics.Metric):
    """F1 of class 1 from integer labels and two-class logits (or probabilities).

    Counts true positives, false positives and false negatives over all
    batches; F1 = 2·TP / (2·TP + FP + FN), 0 when there is no positive at all.

    Examples:
    >>> import numpy as np
    >>> metric = BinaryF1()
    >>> metric.update_state(np.array([1, 0, 1, 1]),
    ...     np.array([[0., 1.], [0., 1.], [1., 0.], [0., 1.]]))
    >>> round(float(metric.result()), 4)
    0.6667
    """

    def __init__(self, name="f1", dtype="float32", **kwargs):
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.true_positives = self.add_variable((), initializer="zeros", name="tp")
        self.false_positives = self.add_variable((), initializer="zeros", name="fp")
        self.false_negatives = self.add_variable((), initializer="zeros", name="fn")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.reshape(ops.cast(y_true, "int32"), (-1,))
        predicted = ops.reshape(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), (-1,))
        weight = ops.ones_like(y_true, "float32")
        if sample_weight is not None:
            weight = ops.reshape(ops.cast(sample_weight, "float32"), (-1,))
        true_positive = ops.cast((y_true == 1) & (predicted == 1), "float32") * weight
        false_positive = ops.cast((y_true != 1) & (predicted == 1), "float32") * weight
        false_negative = ops.cast((y_true == 1) & (predicted != 1), "float32") * weight
        self.true_positives.assign_add(ops.sum(true_positive))
        self.false_positives.assign_add(ops.sum(false_positive))
        self.false_negatives.assign_add(ops.sum(false_negative))

    def result(self):
        denominator = 2 * self.true_positives + self.false_positives + self.false_negatives
        return ops.where(
            denominator > 0, 2 * self.true_positives / ops.maximum(denominator, 1.0), 0.0
        )

    def reset_state(self):
        for variable in (self.true_positives, self.false_positives, self.false_negatives):
            variable.assign(0.0)


def classification_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def classification_metrics(num_classes):
    """Accuracy, plus F1 of class 1 for binary tasks."""
    metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    if num_classes == 2:
        metrics.append(BinaryF1(name="f1"))
    return metrics


def classification_monitor(num_classes):
    """The logged validation metric that picks the best model, and its direction: F1 of
    class 1 for two classes, accuracy otherwise.

    Examples:
    >>> classification_monitor(2), classification_monitor(6)
    (('val_f1', 'max'), ('val_accuracy', 'max'))
    """
    return ("val_f1", "max") if num_classes == 2 else ("val_accuracy", "max")
