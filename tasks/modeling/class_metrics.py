"""Loss, metrics and best-model monitor of every task that predicts one class per example
(classification, the bi-encoder): cross-entropy, accuracy, and for binary tasks F1 of the
positive class and Matthews's correlation coefficient (CoLA's metric)."""

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


@keras.saving.register_keras_serializable(package="nlpzoo")
class BinaryMCC(keras.metrics.Metric):
    """Matthews's correlation coefficient of a binary task, from integer labels and
    two-class logits (or probabilities), over all batches:

    MCC = (TP·TN − FP·FN) / √((TP + FP)(TP + FN)(TN + FP)(TN + FN)),

    0 when a factor of the denominator is 0 (one class only, in the labels or
    the predictions), as scikit-learn and GLUE's CoLA scorer define it.

    Examples:
    >>> import numpy as np
    >>> metric = BinaryMCC()
    >>> metric.update_state(np.array([1, 0, 1, 1]),
    ...     np.array([[0., 1.], [0., 1.], [1., 0.], [0., 1.]]))
    >>> round(float(metric.result()), 4)  # TP 2, TN 0, FP 1, FN 1: −1/√(3·3·1·1)
    -0.3333
    """

    def __init__(self, name="mcc", dtype="float32", **kwargs):
        super().__init__(name=name, dtype=dtype, **kwargs)
        # [TP, TN, FP, FN], summed in float32 (counts stay exact below 2^24 examples).
        self.counts = self.add_variable((4,), initializer="zeros", name="counts")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.reshape(ops.cast(y_true, "int32"), (-1,))
        predicted = ops.reshape(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), (-1,))
        weight = ops.ones_like(y_true, "float32")
        if sample_weight is not None:
            weight = ops.reshape(ops.cast(sample_weight, "float32"), (-1,))
        positive, predicted_positive = y_true == 1, predicted == 1
        cells = [positive & predicted_positive, ~positive & ~predicted_positive,
                 ~positive & predicted_positive, positive & ~predicted_positive]
        self.counts.assign_add(ops.stack([ops.sum(ops.cast(cell, "float32") * weight)
                                          for cell in cells]))

    def result(self):
        tp, tn, fp, fn = (self.counts[i] for i in range(4))
        denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
        return ops.where(denominator > 0,
                         (tp * tn - fp * fn) / ops.sqrt(ops.maximum(denominator, 1.0)), 0.0)

    def reset_state(self):
        self.counts.assign(ops.zeros((4,)))


def classification_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def classification_metrics(num_classes):
    """Accuracy, plus F1 of class 1 and MCC for binary tasks."""
    metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    if num_classes == 2:
        metrics.extend([BinaryF1(name="f1"), BinaryMCC(name="mcc")])
    return metrics


def classification_monitor(num_classes):
    """The logged validation metric that picks the best model, and its direction: F1 of
    class 1 for two classes, accuracy otherwise.

    Examples:
    >>> classification_monitor(2), classification_monitor(6)
    (('val_f1', 'max'), ('val_accuracy', 'max'))
    """
    return ("val_f1", "max") if num_classes == 2 else ("val_accuracy", "max")
