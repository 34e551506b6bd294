"""Single-text and text-pair classification as a `Task`."""

import dataclasses
import json

from absl import flags

from nlpzoo.tasks.classification.model import Classifier
from nlpzoo.tasks.classification.predictions import class_probabilities, prediction_record
from nlpzoo.tasks.modeling.class_metrics import (
    balanced_class_weights,
    classification_loss,
    classification_metrics,
    classification_monitor,
)
from nlpzoo.tasks.modeling.class_outputs import label_fields
from nlpzoo.tasks.modeling.pooling_flag import define_pooling_flag
from nlpzoo.tasks.text import text_readers as readers
from nlpzoo.tasks.text.text_pipeline import make_dataset
from nlpzoo.tasks.classification.serving import classification_outputs
from nlpzoo.tasks.modeling.ensemble import Ensemble, mean_log_probabilities
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.labels import sorted_label_names
from nlpzoo.tasks.text.raw_inputs import check_targets, label_name
from nlpzoo.tasks.text.prediction_io import looks_like_jsonl, read_text_lines, write_output
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.task import Task


@dataclasses.dataclass(frozen=True)
class ClassificationOptions:
    """paired_input: the model reads text pairs (`[CLS] a [SEP] b [SEP]`); label_smoothing:
    ε of the label-smoothed cross-entropy it trains with (0: plain cross-entropy);
    class_weights: each class's weight in the loss, in the order of the sorted labels, or
    "balanced" until `adapt` computes them from the training labels (None: all 1)."""

    paired_input: bool = False
    label_smoothing: float = 0.0
    class_weights: object = None


@register_task
class ClassificationTask(Task):
    """Single-text and text-pair classification (TREC, MRPC, CSV/TSV, JSONL).

    The model is a `Classifier` (the encoder's pooled output, or a `pooling`
    of its token vectors → logits); the
    best model is the one with the highest validation F1 of class 1 for two
    classes, accuracy otherwise. Predictions are JSONL records with the label
    and the class probabilities.

    Examples:
    >>> ClassificationTask().monitor(num_classes=2)
    ('val_f1', 'max')
    >>> ClassificationTask(paired_input=True).serving_inputs()
    ('text', 'text_pair')
    """

    name = "classification"
    pipeline_tag = "text-classification"
    formats = readers.FORMATS
    Options = ClassificationOptions
    head_options = ("num_classes", "labels", "head_hidden_dim", "pooling")
    ensemble_free_options = ("label_smoothing", "class_weights")  # how it trained

    @classmethod
    def define_flags(cls, flag_values):
        define_pooling_flag(flag_values)
        flags.DEFINE_integer("head_hidden_dim", None, "Classification: width of an extra "
                             "dense + tanh layer before the logits (none when omitted).",
                             lower_bound=1, flag_values=flag_values)
        flags.DEFINE_float("label_smoothing", 0.0, "Classification: train against "
                           "label-smoothed targets, 1 - e + e/K for the true class and e/K "
                           "for the others (0: plain cross-entropy).", lower_bound=0.0,
                           upper_bound=0.99, flag_values=flag_values)
        flags.DEFINE_string("class_weights", None, "Classification: each class's weight in "
                            "the loss: 'balanced' (n / (K * n_k) from the training labels, "
                            "scikit-learn's) or comma-separated weights in the order of the "
                            "sorted labels (config.json's labels). All 1 when omitted.",
                            flag_values=flag_values)

    @classmethod
    def options_from_flags(cls, flag_values):
        head = {"pooling": flag_values.pooling or "pooler"}
        if flag_values.head_hidden_dim is not None:
            head["head_hidden_dim"] = flag_values.head_hidden_dim
        options = ({"label_smoothing": flag_values.label_smoothing}
                   if flag_values.label_smoothing else {})
        if flag_values.class_weights:
            options["class_weights"] = _parse_class_weights(flag_values.class_weights)
        return options, head

    @classmethod
    def from_metadata(cls, metadata):
        options = dict(metadata.get("task_options") or {})
        # Models saved before the option existed: their preset said whether they read pairs.
        options.setdefault("paired_input", str(metadata.get("preset", "")).endswith(
            "_pair_classifier"))
        return cls(**options)

    # === Data ===

    def read(self, path, data_format=None, columns=None):
        """The examples of a TREC, MRPC, CSV/TSV or JSONL file; `columns` (a
        `tasks.text.columns.Columns`) names a CSV/TSV/JSONL file's columns."""
        return readers.read_examples(path, data_format, columns)

    def adapt(self, examples):
        """Reads pairs or single texts as the examples hold them; resolves "balanced" class
        weights from their labels and checks given ones against the number of labels."""
        changes = {"paired_input": examples[0].text_pair is not None}
        weights = self.options.class_weights
        if weights is not None:
            names = self.label_names(examples)
            if weights == "balanced":
                changes["class_weights"] = balanced_class_weights(
                    (example.label for example in examples), names)
            elif len(weights) != len(names):
                raise ValueError(f"class_weights has {len(weights)} weights for the "
                                 f"{len(names)} labels ({', '.join(map(str, names))})")
        return self.with_options(**changes)

    def label_names(self, examples):
        """Labels in a stable order: sorted, numerically when all are integers."""
        return sorted_label_names(example.label for example in examples)

    def texts(self, examples):
        for example in examples:
            yield example.text
            if example.text_pair is not None:
                yield example.text_pair

    def make_dataset(self, examples, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        return make_dataset(examples, preprocessor, labels, batch_size=batch_size,
                            training=training, seed=seed)

    # === Model ===

    def preset_for(self, encoder_preset, head_options):
        return f"{encoder_preset}_{'pair_' if self.options.paired_input else ''}classifier"

    def build_model(self, encoder, num_classes=2, labels=None, dropout=0.1,
                    head_hidden_dim=None, pooling="pooler"):
        if labels is not None:
            num_classes = len(labels)
        return Classifier(encoder, num_classes, dropout=dropout, head_hidden_dim=head_hidden_dim,
                          pooling=pooling, name="classifier")

    def loss(self):
        weights = self.options.class_weights
        return classification_loss(self.options.label_smoothing,
                                   None if weights in (None, "balanced") else weights)

    def metrics(self, model):
        return classification_metrics(model.output_shape[-1])

    def monitor(self, num_classes):
        """The validation metric that picks the best model."""
        return classification_monitor(num_classes)

    def build_ensemble(self, models):
        """The mean of the models' class probabilities (as logits: its logarithm), compiled
        with this task's loss and metrics, so `evaluate` and predictions read it as one."""
        ensemble = Ensemble(models, mean_log_probabilities)
        ensemble.compile(loss=self.loss(), metrics=self.metrics(models[0]),
                         jit_compile=ensemble.jit_compile)
        return ensemble

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None,
                              columns=None):
        """The texts of a data file (labels optional and unused), JSON lines (read as
        JSONL whatever the training format; a bad record is an error naming its line), a
        `.csv`/`.tsv` table (its `text` and `text_pair` columns, or those `columns` name:
        the run's `--text_column`...; an error, never lines of text, when it has none) or,
        with "text" or when no data format reads the file, one text a line."""
        if input_format != "text" and looks_like_jsonl(path):
            return readers.read_jsonl(path, require_label=False, columns=columns)
        if input_format != "text" and path.lower().endswith((".csv", ".tsv")):
            # A table is never read as lines of text (its header would be a text): the
            # texts are its text (and text pair) columns; the label column is optional.
            return readers.read_delimited(path, path[-3:].lower(), columns,
                                          require_label=False)
        if input_format != "text":
            try:
                data_format = data_format or readers.infer_format(path, columns)
                if data_format in ("csv", "tsv"):
                    return readers.read_delimited(path, data_format, columns,
                                                  require_label=False)
                return self.read(path, data_format, columns)
            except DataFormatError:
                if input_format == "data":
                    raise
        examples = [readers.ClassificationExample(text=line, label="", source=path, line=number)
                    for number, line in read_text_lines(path)]
        if not examples:
            raise DataFormatError(f"{path}: no texts found")
        return examples

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        """JSONL: the text (and text pair), the label and every class's probability.
        Examples are batched by length (`tasks.words.length_sorting`) and written in input order."""
        preprocessor = self.preprocessor_of(preprocessor)
        # Batched by length (tasks.words.length_sorting): the same rows, less padding. The
        # input's labels (if any) are not read.
        probabilities = class_probabilities(model, preprocessor, examples, batch_size)
        lines = []
        for example, row in zip(examples, probabilities):
            record = {"text": example.text, **label_fields(row, labels)}
            if example.text_pair is not None:
                record["text_pair"] = example.text_pair
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        write_output(output, lines)
        return f"{len(examples)} texts"

    # === Raw inputs ===

    def raw_examples(self, inputs, targets=None, labels=None):
        """`ClassificationExample`s of texts, or of `(text, text_pair)` pairs for a pair
        classifier; `targets` are label names or ids (None: the first label, unused).

        >>> ClassificationTask().raw_examples(["Who is he ?"], [1], ["DESC", "HUM"])[0].label
        'HUM'
        """
        check_targets(inputs, targets)
        examples = []
        for index, item in enumerate(inputs):
            paired = isinstance(item, tuple)
            if paired != self.options.paired_input or (paired and len(item) != 2):
                wanted = "(text, text_pair) pairs" if self.options.paired_input else "texts"
                raise ValueError(f"x[{index}]: this classifier reads {wanted}, got {item!r}")
            text, pair = item if paired else (item, None)
            label = (labels[0] if targets is None
                     else label_name(targets[index], labels, f"y[{index}]"))
            examples.append(readers.ClassificationExample(text=text, label=label, text_pair=pair,
                                                          source="y", line=index))
        return examples

    def predict_outputs(self, model, preprocessor, examples, labels, batch_size=32):
        """Class probabilities [N, C], batched by length (as tools/predict.py does)."""
        return class_probabilities(model, self.preprocessor_of(preprocessor), examples,
                                   batch_size)

    def decode_predictions(self, examples, outputs, labels):
        """`{"label", "score", "scores"}` per example (`prediction_record`)."""
        return [prediction_record(row, labels) for row in outputs]

    # === Serving ===

    def serving_inputs(self):
        return ("text", "text_pair") if self.options.paired_input else ("text",)

    def serving_outputs(self, model, preprocessor, labels, text, text_pair=None):
        return classification_outputs(model, preprocessor, labels, text, text_pair)


def _parse_class_weights(value):
    """--class_weights: "balanced", or comma-separated non-negative numbers.

    >>> _parse_class_weights("balanced"), _parse_class_weights("1, 2.5")
    ('balanced', [1.0, 2.5])
    """
    if value.strip() == "balanced":
        return "balanced"
    try:
        weights = [float(part) for part in value.split(",")]
    except ValueError:
        raise ValueError(f"--class_weights={value}: expected 'balanced' or comma-separated "
                         "numbers, one per label")
    if any(weight < 0 for weight in weights):
        raise ValueError(f"--class_weights={value}: weights must be >= 0")
    return weights
