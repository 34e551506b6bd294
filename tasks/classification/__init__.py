"""Single-text and text-pair classification."""

from nlpzoo.tasks.classification.metrics import BinaryF1
from nlpzoo.tasks.classification.model import (
    Classifier,
    classification_loss,
    classification_metrics,
)
from nlpzoo.tasks.classification.pipeline import encode_labels, make_dataset
from nlpzoo.tasks.classification.readers import (
    FORMATS,
    ClassificationExample,
    infer_format,
    read_examples,
)

__all__ = [
    "FORMATS",
    "BinaryF1",
    "ClassificationExample",
    "Classifier",
    "classification_loss",
    "classification_metrics",
    "encode_labels",
    "infer_format",
    "make_dataset",
    "read_examples",
]
