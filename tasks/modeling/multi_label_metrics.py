"""F1 of multi-label predictions (each example has any number of labels, each label its own
yes/no): micro-averaged (one TP/FP/FN count pooled over every label) and macro-averaged (the
mean of each label's F1), in Keras for training logs and in NumPy for whole-set evaluation.

A label's F1 is 2·TP / (2·TP + FP + FN), and 0 when it is neither present nor predicted
(scikit-learn's `f1_score(..., zero_division=0)`): a label the data never shows lowers the
macro average, as in scikit-learn.
"""

import keras
import numpy as np
from keras import ops

AVERAGES = ("micro", "macro")


def f1_from_counts(true_positives, false_positives, false_negatives):
    """2·TP / (2·TP + FP + FN) elementwise, 0 where the denominator is 0 (NumPy).

    Examples:
    >>> f1_from_counts(np.array([2, 0]), np.array([1, 0]), np.array([1, 0])).tolist()
    [0.6666666666666666, 0.0]
    """
    tp, fp, fn = (np.asarray(count, np.float64) for count in
                  (true_positives, false_positives, false_negatives))
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1e-300), 0.0)


def multi_label_scores(targets, predicted):
    """Micro and macro F1 (with micro precision and recall, and the share of examples
    whose whole label set is right) of 0/1 `predicted` [N, C] against 0/1 `targets` [N, C].

    Examples:
    >>> targets = np.array([[1, 0, 0], [1, 1, 0]])
    >>> predicted = np.array([[1, 1, 0], [1, 1, 0]])
    >>> scores = multi_label_scores(targets, predicted)  # TP 3, FP 1, FN 0; label 2 absent
    >>> [round(scores[name], 4) for name in ("micro_f1", "macro_f1", "exact_match")]
    [0.8571, 0.5556, 0.5]
    """
    targets = np.asarray(targets).astype(bool)
    predicted = np.asarray(predicted).astype(bool)
    tp = (targets & predicted).sum(0)
    fp = (~targets & predicted).sum(0)
    fn = (targets & ~predicted).sum(0)
    per_label = f1_from_counts(tp, fp, fn)
    tp_all, fp_all, fn_all = tp.sum(), fp.sum(), fn.sum()
    return {
        "micro_f1": float(f1_from_counts(tp_all, fp_all, fn_all)),
        "macro_f1": float(per_label.mean()) if per_label.size else 0.0,
        "micro_precision": float(tp_all / (tp_all + fp_all)) if tp_all + fp_all else 0.0,
        "micro_recall": float(tp_all / (tp_all + fn_all)) if tp_all + fn_all else 0.0,
        "exact_match": float((targets == predicted).all(1).mean()) if len(targets) else 0.0,
    }


@keras.saving.register_keras_serializable(package="nlpzoo")
class MultiLabelF1(keras.metrics.Metric):
    """Micro- or macro-averaged F1 from 0/1 targets [B, C] and per-label logits [B, C].

    A label is predicted when its probability (the sigmoid of its logit) is at
    least `threshold`. TP, FP and FN are counted per label over every batch,
    so the result is the F1 of the whole set however it was batched (see the
    module docstring for the averages and the empty-label convention).

    Args:
        num_labels: C, the number of labels.
        average: "micro" or "macro".
        threshold: the probability from which a label is predicted.

    Examples:
    >>> metric = MultiLabelF1(num_labels=3, average="micro")
    >>> metric.update_state(np.array([[1, 0, 0], [1, 1, 0]]),
    ...                     np.array([[2.0, 0.5, -1.0], [3.0, 1.0, -2.0]]))
    >>> round(float(metric.result()), 4)  # TP 3, FP 1, FN 0
    0.8571
    """

    def __init__(self, num_labels, average="micro", threshold=0.5, name=None,
                 dtype="float32", **kwargs):
        if average not in AVERAGES:
            raise ValueError(f"average must be one of {', '.join(AVERAGES)}, got {average!r}")
        super().__init__(name=name or f"{average}_f1", dtype=dtype, **kwargs)
        self.num_labels = int(num_labels)
        self.average = average
        self.threshold = float(threshold)
        # [3, C]: TP, FP, FN of each label, summed in float32 (exact below 2^24 examples).
        self.counts = self.add_variable((3, self.num_labels), initializer="zeros",
                                        name="counts")

    def update_state(self, y_true, y_pred, sample_weight=None):
        present = ops.cast(y_true, "float32") > 0.5
        predicted = ops.sigmoid(ops.cast(y_pred, "float32")) >= self.threshold
        weight = 1.0
        if sample_weight is not None:
            weight = ops.reshape(ops.cast(sample_weight, "float32"), (-1, 1))
        cells = [present & predicted, ~present & predicted, present & ~predicted]
        self.counts.assign_add(ops.stack([ops.sum(ops.cast(cell, "float32") * weight, axis=0)
                                          for cell in cells]))

    def result(self):
        tp, fp, fn = self.counts[0], self.counts[1], self.counts[2]
        if self.average == "micro":
            tp, fp, fn = ops.sum(tp), ops.sum(fp), ops.sum(fn)
        denominator = 2 * tp + fp + fn
        f1 = ops.where(denominator > 0, 2 * tp / ops.maximum(denominator, 1.0), 0.0)
        return f1 if self.average == "micro" else ops.mean(f1)

    def reset_state(self):
        self.counts.assign(ops.zeros((3, self.num_labels)))

    def get_config(self):
        return dict(super().get_config(), num_labels=self.num_labels, average=self.average,
                    threshold=self.threshold)
