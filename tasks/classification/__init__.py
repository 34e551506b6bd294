"""Single-text and text-pair classification."""

from tasks.classification.metrics import BinaryF1
from tasks.classification.model import (
    Classifier,
    classification_loss,
    classification_metrics,
)
from tasks.classification.pipeline import encode_labels, make_dataset
from tasks.classification.readers import (
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
