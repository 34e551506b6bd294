"""The regression objective of a classifier: one score per text (or pair), learned with the
mean squared error against a numeric label (STS-B's 0-5 similarity, a review's rating).

Labels come from the same files as class labels (the TSV/CSV/JSONL `label`
column, or `--label_column`), read as numbers; the head is the classifier's
with one linear unit. Keras logs the loss and `mse` batch by batch; the
Pearson and Spearman correlations are computed once over the whole
validation set (`evaluation_metrics`), because a mean of per-batch
correlations is not the correlation of the set.
"""

import math

import keras
import numpy as np

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.modeling.correlation import correlations

OBJECTIVES = ("classification", "regression")
# What the best epoch is chosen by: Spearman, as STS is ranked (and it ignores the scale).
REGRESSION_MONITOR = ("val_spearman", "max")
# Logged after every epoch by the task's evaluation (Keras cannot compute them per batch).
CORRELATIONS = ("spearman", "pearson")


def regression_target(example):
    """An example's label as a finite number; anything else is an error naming the file
    and line.

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> regression_target(ClassificationExample("a b", " 3.8"))
    3.8
    >>> regression_target(ClassificationExample("a b", "high", source="sts.tsv", line=7))
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: sts.tsv:7: ... must be a number, found 'high'
    """
    try:
        value = float(example.label)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataFormatError(f"{example.source}:{example.line}: a regression label must be a "
                              f"number, found {example.label!r}")
    return value


def regression_targets(examples):
    """The labels of `examples` as float32 scores [N] (`regression_target` of each)."""
    return np.asarray([regression_target(example) for example in examples], np.float32)


def check_distinct_targets(examples):
    """Refuses training examples whose regression targets are all the same: nothing to
    learn but that constant, and every correlation it would be chosen by undefined. The
    error names the file.

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> check_distinct_targets([ClassificationExample("a", "2", source="sts.tsv", line=1),
    ...                         ClassificationExample("b", "2.0", source="sts.tsv", line=2)])
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: sts.tsv: every regression label is 2.0 (2 examples); training needs at least two distinct targets
    """
    examples = list(examples)
    targets = regression_targets(examples)
    if len(np.unique(targets)) < 2:
        source = examples[0].source if examples else "the training data"
        value = f"{float(targets[0])}" if len(targets) else "missing"
        raise DataFormatError(f"{source}: every regression label is {value} ({len(targets)} "
                              "example" + ("" if len(targets) == 1 else "s") +
                              "); training needs at least two distinct targets")


def regression_loss():
    """The mean squared error of the score (Keras's own: a saved model needs no custom
    objects)."""
    return keras.losses.MeanSquaredError()


def regression_metrics():
    """What Keras computes batch by batch (exactly over the set: a mean of squares): `mse`."""
    return [keras.metrics.MeanSquaredError(name="mse")]


def evaluation_metrics(scores, targets):
    """`mse`, `pearson` and `spearman` (average ranks for ties) of predicted `scores`
    against `targets`, over all of them at once.

    Examples:
    >>> metrics = evaluation_metrics([0.1, 0.4, 0.2, 0.3], [0.0, 1.0, 0.0, 0.5])
    >>> {name: round(value, 4) for name, value in metrics.items()}
    {'mse': 0.1125, 'pearson': 0.9439, 'spearman': 0.9487}
    """
    scores = np.asarray(scores, np.float64).reshape(-1)
    targets = np.asarray(targets, np.float64).reshape(-1)
    return {"mse": float(np.mean((scores - targets) ** 2)) if scores.size else 0.0,
            **correlations(scores, targets, "predicted scores")}


def check_regression_options(objective, label_smoothing, class_weights):
    """Raises a one-line `ValueError` for an unknown objective, or an option that only
    class labels have (label smoothing, class weights) with the regression objective.

    Examples:
    >>> check_regression_options("regression", 0.0, None)
    >>> check_regression_options("regression", 0.1, None)
    Traceback (most recent call last):
    ...
    ValueError: label_smoothing=0.1 smooths class labels; the regression objective has none ...
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if objective != "regression":
        return
    if label_smoothing:
        raise ValueError(f"label_smoothing={label_smoothing} smooths class labels; the "
                         "regression objective has none (it trains with the mean squared "
                         "error)")
    if class_weights is not None:
        raise ValueError(f"class_weights={class_weights} weigh classes; the regression "
                         "objective has none (it trains with the mean squared error)")


def check_regression_head(num_classes, labels):
    """Raises a one-line `ValueError` unless the head is one score: `num_classes` 1 or
    None, no `labels`.

    Examples:
    >>> check_regression_head(None, None), check_regression_head(1, [])
    (None, None)
    >>> check_regression_head(3, None)
    Traceback (most recent call last):
    ...
    ValueError: the regression objective ...: num_classes must be 1 or left out, got 3
    """
    if labels:
        raise ValueError(f"the regression objective predicts one score per example, not "
                         f"labels; got {len(labels)} labels")
    if num_classes not in (None, 1):
        raise ValueError("the regression objective predicts one score per example: "
                         f"num_classes must be 1 or left out, got {num_classes}")
