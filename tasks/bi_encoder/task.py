"""Sentence-BERT bi-encoder training on text pairs as a `Task`."""

import dataclasses
import json

import numpy as np

from nlpzoo.layers import POOLINGS
from nlpzoo.tasks.bi_encoder import readers
from nlpzoo.tasks.modeling.correlation import pearson, spearman
from nlpzoo.tasks.bi_encoder.model import (
    OBJECTIVES,
    BiEncoder,
    bi_encoder_loss,
    bi_encoder_metrics,
)
from nlpzoo.tasks.bi_encoder.pipeline import make_dataset
from nlpzoo.tasks.bi_encoder.predictions import predict_pairs, prediction_records
from nlpzoo.tasks.bi_encoder.serving import bi_encoder_outputs
from nlpzoo.tasks.modeling.class_metrics import classification_monitor
from nlpzoo.tasks.modeling.objective_flag import define_objective_flag
from nlpzoo.tasks.modeling.pooling_flag import define_pooling_flag
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.labels import sorted_label_names
from nlpzoo.tasks.text.prediction_io import looks_like_jsonl, write_output
from nlpzoo.tasks.io.progress import ProgressCallback
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.task import Task


@dataclasses.dataclass(frozen=True)
class BiEncoderOptions:
    """objective: "softmax" (classes over (u, v, |u − v|)) or "cosine" (cos(u, v)
    regressed on a score in [-1, 1]). pooling: how a text's token vectors become
    its sentence vector ("mean", "cls" or "max")."""

    objective: str = "softmax"
    pooling: str = "mean"

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, "
                             f"got {self.objective!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)} for the "
                             f"bi-encoder, got {self.pooling!r}")


@register_task
class BiEncoderTask(Task):
    """A Sentence-BERT bi-encoder trained on text pairs (MRPC TSV, JSONL).

    One encoder with one set of weights reads each text of a pair alone and
    pools it into a sentence vector (`BiEncoder`); the `softmax` objective
    classifies the pair from (u, v, |u − v|), the `cosine` objective
    regresses cos(u, v) on a graded score (see `tasks.bi_encoder.readers`
    for the data). The best model has the highest validation F1 of class 1
    (softmax, two classes; accuracy otherwise) or Spearman correlation of
    cosine and score (cosine). Predictions are JSONL with the cosine of each
    pair, and the label with its probability (softmax); the exported model
    also serves both sentence vectors.

    Examples:
    >>> BiEncoderTask().monitor(num_classes=2)
    ('val_f1', 'max')
    >>> BiEncoderTask(objective="cosine").monitor(num_classes=0)
    ('val_spearman', 'max')
    """

    name = "bi_encoder"
    pipeline_tag = "sentence-similarity"
    formats = readers.FORMATS
    Options = BiEncoderOptions
    head_options = ("num_classes", "labels")

    @classmethod
    def define_flags(cls, flag_values):
        define_objective_flag(flag_values)
        define_pooling_flag(flag_values)

    @classmethod
    def options_from_flags(cls, flag_values):
        return {"objective": flag_values.objective or "softmax",
                "pooling": flag_values.pooling or "mean"}, {}

    @property
    def logged_metrics(self):
        """Correlations of the cosine objective (Keras cannot compute them batch by batch)."""
        return ("spearman", "pearson") if self.options.objective == "cosine" else ()

    # === Data ===

    def read(self, path, data_format=None, columns=None):
        """Text pairs of an MRPC, CSV/TSV or JSONL file; `columns` (a
        `tasks.text.columns.Columns`) names a CSV/TSV/JSONL file's columns."""
        return readers.read_pairs(path, data_format, self.options.objective, columns=columns)

    def label_names(self, examples):
        """Softmax: the classes, sorted (numerically when all are integers); cosine: none."""
        if self.options.objective == "cosine":
            return []
        return sorted_label_names(example.label for example in examples)

    def texts(self, examples):
        for example in examples:
            yield example.text
            yield example.text_pair

    def make_dataset(self, examples, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        return make_dataset(examples, preprocessor, labels, objective=self.options.objective,
                            batch_size=batch_size, training=training, seed=seed)

    # === Model ===

    def model_head_options(self, labels):
        return {"num_classes": len(labels)} if self.options.objective == "softmax" else {}

    def build_model(self, encoder, num_classes=2, labels=None, dropout=0.1):
        if labels is not None:
            num_classes = len(labels)
        return BiEncoder(encoder, objective=self.options.objective, num_classes=num_classes,
                         pooling=self.options.pooling, dropout=dropout, name="bi_encoder")

    def loss(self):
        return bi_encoder_loss(self.options.objective)

    def metrics(self, model):
        return bi_encoder_metrics(self.options.objective, model.num_classes)

    def monitor(self, num_classes):
        if self.options.objective == "cosine":
            return ("val_spearman", "max")
        return classification_monitor(num_classes)

    def evaluate(self, model, dataset, examples, labels):
        """Softmax: loss, accuracy (and F1); cosine: the mean squared error and the Pearson
        and Spearman correlations of cosine and score."""
        if self.options.objective == "softmax":
            return super().evaluate(model, dataset, examples, labels)
        cosines = np.asarray(model.predict(dataset, verbose=0, callbacks=[
            ProgressCallback("predicting")]), np.float64).reshape(-1)
        scores = np.asarray([readers.score_of(example) for example in examples])
        return {"mse": float(np.mean((cosines - scores) ** 2)),
                "pearson": pearson(cosines, scores), "spearman": spearman(cosines, scores),
                "examples": len(examples)}

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        """A data file (MRPC, JSONL; labels optional and unused) or `text<TAB>text_pair`
        lines."""
        if input_format != "text" and looks_like_jsonl(path):  # whatever the training format
            return readers.read_pairs(path, "jsonl", self.options.objective, labeled=False)
        if input_format != "text":
            try:
                return readers.read_pairs(path, data_format, self.options.objective, labeled=False)
            except DataFormatError:
                if input_format == "data":
                    raise
        return readers.read_tab_separated_pairs(path)

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        """JSONL: both texts, the cosine of their vectors and (softmax) the label, its
        probability and every class's probability."""
        outputs = predict_pairs(model, self.preprocessor_of(preprocessor), examples, labels,
                                self.options.objective, batch_size)
        write_output(output, [json.dumps(record, ensure_ascii=False) + "\n"
                              for record in prediction_records(examples, outputs, labels)])
        return f"{len(examples)} text pairs"

    # === Serving ===

    def serving_inputs(self):
        return ("text", "text_pair")

    def serving_outputs(self, model, preprocessor, labels, text, text_pair):
        return bi_encoder_outputs(model, preprocessor, labels, text, text_pair)

