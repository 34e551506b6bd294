"""Single-text and text-pair classification.

Its readers and pipeline (`tasks.text.text_readers`, `tasks.text.text_pipeline`) and its
loss, metrics and label outputs (`tasks.modeling.class_metrics`, `tasks.modeling.class_outputs`)
are shared with the bi-encoder and sentence embedding; this package re-exports the names.
"""

from nlpzoo.tasks.classification.model import Classifier
from nlpzoo.tasks.modeling.class_metrics import (
    BinaryF1,
    BinaryMCC,
    classification_loss,
    classification_metrics,
)
from nlpzoo.tasks.text.text_pipeline import encode_labels, make_dataset
from nlpzoo.tasks.text.text_readers import (
    FORMATS,
    ClassificationExample,
    infer_format,
    read_examples,
)

__all__ = [
    "FORMATS",
    "BinaryF1",
    "BinaryMCC",
    "ClassificationExample",
    "Classifier",
    "classification_loss",
    "classification_metrics",
    "encode_labels",
    "infer_format",
    "make_dataset",
    "read_examples",
]
