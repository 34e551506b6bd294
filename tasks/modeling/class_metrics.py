"""Loss, metrics and best-model monitor of every task that predicts one class per example
(classification, the bi-encoder): cross-entropy, accuracy, and for binary tasks F1 of the
positive class and Matthews's correlation coefficient (CoLA's metric)."""

import math

import keras
from keras import ops


def _binary_outcomes(y_true, y_pred, sample_weight):
    """(labels, predicted classes, weights), flat, of a batch of two-class predictions."""
    y_true = ops.reshape(ops.cast(y_true, "int32"), (-1,))
    predicted = ops.reshape(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), (-1,))
    weight = ops.ones_like(y_true, "float32")
    if sample_weight is not None:
        weight = ops.reshape(ops.cast(sample_weight, "float32"), (-1,))
    return y_true, predicted, weight


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
        y_true, predicted, weight = _binary_outcomes(y_true, y_pred, sample_weight)
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
        y_true, predicted, weight = _binary_outcomes(y_true, y_pred, sample_weight)
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


@keras.saving.register_keras_serializable(package="nlpzoo")
class ClassificationCrossentropy(keras.losses.Loss):
    """Cross-entropy from integer labels and logits, with label smoothing and class weights.

    With `label_smoothing` ε the target gives the true class 1 − ε + ε/K and
    every other class ε/K (Szegedy et al. 2016), as Keras's
    `CategoricalCrossentropy(label_smoothing=ε)` on one-hot labels; with
    `class_weights` (one per class) each example's loss is multiplied by its
    true class's weight before the batch mean, as `fit(class_weight=...)`
    weighs examples.

    Examples:
    >>> import numpy as np
    >>> loss = ClassificationCrossentropy(label_smoothing=0.2)
    >>> logits = np.log(np.array([[0.5, 0.25, 0.25]], "float32"))
    >>> round(float(loss(np.array([0]), logits)), 4)  # 0.8667·ln 2 + 2·0.0667·ln 4
    0.7856
    >>> weighted = ClassificationCrossentropy(class_weights=[3.0, 1.0, 1.0])
    >>> round(float(weighted(np.array([0]), logits)), 4)  # 3·ln 2
    2.0794
    """

    def __init__(self, label_smoothing=0.0, class_weights=None,
                 name="classification_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        if class_weights is not None:
            check_class_weights(list(class_weights))
        self.label_smoothing = float(label_smoothing)
        self.class_weights = None if class_weights is None else [float(w) for w in class_weights]

    def call(self, y_true, y_pred):
        labels = ops.reshape(ops.cast(y_true, "int32"), ops.shape(y_pred)[:-1])
        one_hot = ops.one_hot(labels, ops.shape(y_pred)[-1], dtype=y_pred.dtype)
        losses = keras.losses.categorical_crossentropy(
            one_hot, y_pred, from_logits=True, label_smoothing=self.label_smoothing)
        if self.class_weights is not None:
            weights = ops.convert_to_tensor(self.class_weights, dtype=losses.dtype)
            losses = losses * ops.take(weights, labels)
        return losses

    def get_config(self):
        return dict(super().get_config(), label_smoothing=self.label_smoothing,
                    class_weights=self.class_weights)


def classification_loss(label_smoothing=0.0, class_weights=None):
    """Cross-entropy on logits from integer labels; `ClassificationCrossentropy` when
    label-smoothed (`label_smoothing` ε > 0) or weighted by class (`class_weights`)."""
    if label_smoothing or class_weights is not None:
        return ClassificationCrossentropy(label_smoothing, class_weights)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def check_class_weights(weights, name="class_weights"):
    """Refuses class weights that cannot train: a weight that is not a finite number
    >= 0 (a NaN weight makes every loss NaN from the first step), or all weights zero (a
    loss of 0 everywhere: the model would learn nothing and look finished). `name` is
    what the error calls them (the flag and its value, from a binary).

    Examples:
    >>> check_class_weights([1.0, 0.0])
    >>> check_class_weights([0, 0], "--class_weights=0,0")
    Traceback (most recent call last):
    ...
    ValueError: --class_weights=0,0: every weight is 0, so no example would count in the loss; give at least one weight > 0
    >>> check_class_weights([float("nan"), 1.0])
    Traceback (most recent call last):
    ...
    ValueError: class_weights: expected finite numbers >= 0, one per label; found nan
    """
    bad = [weight for weight in weights
           if not isinstance(weight, (int, float)) or isinstance(weight, bool)
           or not math.isfinite(weight) or weight < 0]
    if bad:
        raise ValueError(f"{name}: expected finite numbers >= 0, one per label; found "
                         f"{', '.join(map(str, bad))}")
    if not any(weights):
        raise ValueError(f"{name}: every weight is 0, so no example would count in the loss; "
                         "give at least one weight > 0")


def balanced_class_weights(labels, names):
    """scikit-learn's "balanced" weights n / (K · n_k) of the classes `names` (in that
    order) over the integer or string `labels` of the training examples.

    Examples:
    >>> balanced_class_weights(["a", "a", "a", "b"], ["a", "b"])
    [0.6667, 2.0]
    """
    labels = list(labels)
    counts = {name: 0 for name in names}
    for label in labels:
        counts[label] += 1
    missing = [name for name, count in counts.items() if count == 0]
    if missing:
        raise ValueError(f"balanced class weights need every class in the training data; "
                         f"none of {', '.join(map(str, missing))}")
    return [round(len(labels) / (len(names) * counts[name]), 4) for name in names]


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
