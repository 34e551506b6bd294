"""The multi-label objective of a classifier: any number of labels per text (or pair), each
its own yes/no, learned with binary cross-entropy on one logit per label.

Labels come from a JSONL list (`"labels": ["sports", "politics"]`) or a
CSV/TSV cell joined by a separator (`sports|politics`, `--label_separator`),
in the column or key `labels` unless `--label_column` names another
(`tasks.text.text_readers.read_examples`). The label set is every name the
training data uses, sorted. The head is the classifier's with one float32
logit per label. Keras logs micro- and macro-averaged F1 at threshold 0.5
batch by batch (`tasks.modeling.multi_label_metrics`, exact over the set);
after training each label gets its own F1-best threshold on the validation
data (`tasks.modeling.label_thresholds`), which evaluation, prediction files,
`model.predict` and the exported model use.
"""

import keras
import numpy as np

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.modeling.label_thresholds import DEFAULT_THRESHOLD, labels_over_thresholds
from nlpzoo.tasks.modeling.multi_label_metrics import MultiLabelF1, multi_label_scores
from nlpzoo.tasks.text.labels import LabelSet, sorted_label_names

# What the best epoch is chosen by: micro F1 (every label decision counts once).
MULTI_LABEL_MONITOR = ("val_micro_f1", "max")


def check_multi_label_options(multi_label, objective, class_weights, thresholds,
                              label_separator):
    """Raises a one-line `ValueError` for options that do not go with multi-label (or
    multi-label options without it).

    Examples:
    >>> check_multi_label_options(True, "classification", None, [0.3, 0.5], "|")
    >>> check_multi_label_options(True, "regression", None, None, "|")
    Traceback (most recent call last):
    ...
    ValueError: multi_label predicts label sets; the regression objective predicts ...
    """
    if not multi_label:
        if thresholds is not None:
            raise ValueError("thresholds are per-label decision thresholds of a multi-label "
                             "classifier: set multi_label=True (--multi_label)")
        return
    if objective != "classification":
        raise ValueError(f"multi_label predicts label sets; the {objective} objective "
                         "predicts one score per example: give one of them")
    if class_weights is not None:
        raise ValueError(f"class_weights={class_weights} weigh the classes of a single-label "
                         "cross-entropy; multi-label training has one binary cross-entropy "
                         "per label and takes no class weights")
    if not label_separator:
        raise ValueError("label_separator must be a non-empty string")
    if thresholds is not None and not all(0.0 <= float(t) <= 1.0 for t in thresholds):
        raise ValueError(f"thresholds must be probabilities in [0, 1], got {list(thresholds)}")


def multi_label_names(examples):
    """Every label name the examples use, sorted (numerically when all are integers); a
    `ValueError` when they use none.

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> multi_label_names([ClassificationExample("a", ("y", "x")),
    ...                    ClassificationExample("b", ())])
    ['x', 'y']
    """
    names = sorted_label_names(name for example in examples for name in example.label)
    if not names:
        raise ValueError("no example has a label: a multi-label classifier needs at least "
                         "one label in the training data")
    return names


def multi_hot_targets(examples, labels):
    """float32 [N, C]: 1 where an example has the label. A label not in `labels` is a
    `ValueError` that names the example's file and line.

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> multi_hot_targets([ClassificationExample("a", ("z", "x")),
    ...                    ClassificationExample("b", ())], ["x", "y", "z"]).tolist()
    [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    label_set = LabelSet(labels)
    targets = np.zeros((len(examples), len(label_set)), np.float32)
    for row, example in enumerate(examples):
        if isinstance(example.label, str):
            raise DataFormatError(f"{example.source}:{example.line}: a multi-label example's "
                                  f"labels are a list, found {example.label!r}")
        for name in example.label:
            targets[row, label_set.id(name, f"{example.source}:{example.line}")] = 1.0
    return targets


def multi_label_loss(label_smoothing=0.0):
    """Keras's binary cross-entropy on logits, averaged over labels and examples; label
    smoothing ε pulls each target towards 1/2 (1 → 1 − ε/2, 0 → ε/2)."""
    return keras.losses.BinaryCrossentropy(from_logits=True, label_smoothing=label_smoothing)


def multi_label_metrics(num_labels):
    """Micro- and macro-averaged F1 at threshold 0.5 (`val_micro_f1` picks the best epoch)."""
    return [MultiLabelF1(num_labels, "micro", name="micro_f1"),
            MultiLabelF1(num_labels, "macro", name="macro_f1")]


def thresholds_of(thresholds, num_labels):
    """The task's per-label thresholds as float64 [C]; 0.5 for each label when None.

    Examples:
    >>> thresholds_of(None, 2).tolist(), thresholds_of([0.2, 0.7], 2).tolist()
    ([0.5, 0.5], [0.2, 0.7])
    """
    if thresholds is None:
        return np.full(num_labels, DEFAULT_THRESHOLD)
    thresholds = np.asarray(thresholds, np.float64)
    if thresholds.shape != (num_labels,):
        raise ValueError(f"{len(thresholds)} thresholds for {num_labels} labels")
    return thresholds


def sigmoid(logits):
    """Per-label probabilities (float64) from logits, stable for large |logits|.

    Examples:
    >>> sigmoid(np.array([0.0, np.log(3.0), -800.0])).round(4).tolist()
    [0.5, 0.75, 0.0]
    """
    logits = np.asarray(logits, np.float64)
    exp = np.exp(-np.abs(logits))
    return np.where(logits >= 0, 1 / (1 + exp), exp / (1 + exp))


def binary_cross_entropy(logits, targets):
    """The mean binary cross-entropy of `logits` against 0/1 `targets` (what the loss is
    without smoothing), float64, over every label of every example.

    Examples:
    >>> logits, targets = np.array([[0.0, np.log(3.0)]]), np.array([[1, 0]])
    >>> round(binary_cross_entropy(logits, targets), 4)  # (ln 2 + ln 4) / 2
    1.0397
    """
    logits = np.asarray(logits, np.float64)
    targets = np.asarray(targets, np.float64)
    losses = np.maximum(logits, 0) - logits * targets + np.log1p(np.exp(-np.abs(logits)))
    return float(losses.mean()) if losses.size else 0.0


def evaluation_metrics(logits, targets, thresholds):
    """`loss` (binary cross-entropy), `micro_f1`, `macro_f1`, `micro_precision`,
    `micro_recall` and `exact_match` (the share of examples whose label set is exactly
    right) of `logits` [N, C] against 0/1 `targets` [N, C] at per-label `thresholds`.

    Examples:
    >>> logits = np.log(np.array([[3.0, 1 / 3], [1 / 3, 1 / 3]]))  # probabilities .75, .25
    >>> metrics = evaluation_metrics(logits, np.array([[1, 1], [0, 0]]), [0.5, 0.2])
    >>> metrics["micro_f1"], metrics["exact_match"]  # label 1 over 0.2 twice: TP 2, FP 1
    (0.8, 0.5)
    """
    predicted = labels_over_thresholds(sigmoid(logits), thresholds)
    return {"loss": binary_cross_entropy(logits, targets),
            **multi_label_scores(targets, predicted)}


def predicted_label_names(probabilities, labels, thresholds):
    """The labels over their threshold, in label-id order.

    Examples:
    >>> predicted_label_names(np.array([0.9, 0.1, 0.6]), ["a", "b", "c"], [0.5, 0.05, 0.7])
    ['a', 'b']
    """
    over = labels_over_thresholds(probabilities, thresholds)
    return [label for label, yes in zip(labels, over) if yes]


def multi_label_record(probabilities, labels, thresholds):
    """What `model.predict` on raw texts returns for one example: the predicted `labels`
    (over their thresholds, in label-id order) and every label's probability (`scores`),
    unrounded.

    Examples:
    >>> multi_label_record(np.array([0.75, 0.25]), ["sports", "weather"], [0.5, 0.5])
    {'labels': ['sports'], 'scores': {'sports': 0.75, 'weather': 0.25}}
    """
    return {"labels": predicted_label_names(probabilities, labels, thresholds),
            "scores": {label: float(p) for label, p in zip(labels, probabilities)}}


def multi_label_fields(probabilities, labels, thresholds):
    """A prediction file's fields of one example: the predicted `labels` and every
    label's probability (`probabilities`), rounded to 6 places.

    Examples:
    >>> multi_label_fields(np.array([0.75, 0.25]), ["sports", "weather"], [0.5, 0.2])
    {'labels': ['sports', 'weather'], 'probabilities': {'sports': 0.75, 'weather': 0.25}}
    """
    return {"labels": predicted_label_names(probabilities, labels, thresholds),
            "probabilities": {label: round(float(p), 6) for label, p in zip(labels,
                                                                            probabilities)}}
