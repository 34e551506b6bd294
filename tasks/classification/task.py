"""Single-text and text-pair classification as a `Task`."""

import dataclasses
import json

from absl import flags

from nlpzoo.tasks.classification.model import Classifier
from nlpzoo.tasks.classification.predictions import (
    class_probabilities,
    predicted_scores,
    prediction_record,
    score_record,
)
from nlpzoo.tasks.classification.regression import (
    CORRELATIONS,
    REGRESSION_MONITOR,
    check_regression_head,
    check_regression_options,
    evaluation_metrics,
    regression_loss,
    regression_metrics,
    regression_targets,
)
from nlpzoo.tasks.modeling.class_metrics import (
    balanced_class_weights,
    classification_loss,
    classification_metrics,
    classification_monitor,
)
from nlpzoo.tasks.modeling.class_outputs import label_fields
from nlpzoo.tasks.modeling.objective_flag import define_objective_flag
from nlpzoo.tasks.modeling.pooling_flag import define_pooling_flag
from nlpzoo.tasks.text import text_readers as readers
from nlpzoo.tasks.text.text_pipeline import make_dataset
from nlpzoo.tasks.classification.serving import classification_outputs, score_outputs
from nlpzoo.tasks.io.progress import ProgressCallback
from nlpzoo.tasks.modeling.ensemble import Ensemble, mean_log_probabilities, mean_outputs
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
    "balanced" until `adapt` computes them from the training labels (None: all 1);
    objective: "classification" (a label) or "regression" (one score per example, learned
    with the mean squared error against numeric labels; no smoothing, no class weights)."""

    paired_input: bool = False
    label_smoothing: float = 0.0
    class_weights: object = None
    objective: str = "classification"

    def __post_init__(self):
        check_regression_options(self.objective, self.label_smoothing, self.class_weights)


@register_task
class ClassificationTask(Task):
    """Single-text and text-pair classification (TREC, MRPC, CSV/TSV, JSONL).

    The model is a `Classifier` (the encoder's pooled output, or a `pooling`
    of its token vectors → logits); the
    best model is the one with the highest validation F1 of class 1 for two
    classes, accuracy otherwise. Predictions are JSONL records with the label
    and the class probabilities. With `objective="regression"` the head is
    one linear unit trained with the mean squared error against numeric
    labels (`tasks.classification.regression`); the best model has the
    highest validation Spearman correlation, and predictions carry a `score`.

    Examples:
    >>> ClassificationTask().monitor(num_classes=2)
    ('val_f1', 'max')
    >>> ClassificationTask(paired_input=True).serving_inputs()
    ('text', 'text_pair')
    >>> ClassificationTask(objective="regression").monitor(num_classes=0)
    ('val_spearman', 'max')
    """

    name = "classification"
    pipeline_tag = "text-classification"
    formats = readers.FORMATS
    Options = ClassificationOptions
    head_options = ("num_classes", "labels", "head_hidden_dim", "pooling")
    ensemble_free_options = ("label_smoothing", "class_weights")  # how it trained

    @classmethod
    def define_flags(cls, flag_values):
        define_objective_flag(flag_values)
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
        if flag_values.objective:
            options["objective"] = flag_values.objective
        return options, head

    @classmethod
    def from_metadata(cls, metadata):
        options = dict(metadata.get("task_options") or {})
        # Models saved before the option existed: their preset said whether they read pairs.
        options.setdefault("paired_input", str(metadata.get("preset", "")).endswith(
            "_pair_classifier"))
        return cls(**options)

    @property
    def regression(self):
        """Whether the model predicts one score per example (the regression objective)."""
        return self.options.objective == "regression"

    @property
    def logged_metrics(self):
        """Regression: the correlations over the whole validation set, after every epoch."""
        return CORRELATIONS if self.regression else ()

    # === Data ===

    def read(self, path, data_format=None, columns=None):
        """The examples of a TREC, MRPC, CSV/TSV or JSONL file; `columns` (a
        `tasks.text.columns.Columns`) names a CSV/TSV/JSONL file's columns. Regression:
        a label that is not a number is an error naming its file and line."""
        examples = readers.read_examples(path, data_format, columns)
        if self.regression:
            regression_targets(examples)
        return examples

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
        """Labels in a stable order: sorted, numerically when all are integers; none for
        regression (its labels are scores)."""
        if self.regression:
            return []
        return sorted_label_names(example.label for example in examples)

    def default_labels(self, num_classes):
        """"0" … "n-1"; none for regression.

        >>> ClassificationTask(objective="regression").default_labels(1)
        []
        """
        return [] if self.regression else super().default_labels(num_classes)

    def texts(self, examples):
        for example in examples:
            yield example.text
            if example.text_pair is not None:
                yield example.text_pair

    def make_dataset(self, examples, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        """Batched `(features, label id)`, or `(features, float32 score)` for regression."""
        targets = regression_targets(examples) if self.regression else None
        return make_dataset(examples, preprocessor, labels, batch_size=batch_size,
                            training=training, seed=seed, targets=targets)

    # === Model ===

    def preset_for(self, encoder_preset, head_options):
        return f"{encoder_preset}_{'pair_' if self.options.paired_input else ''}classifier"

    def model_head_options(self, labels):
        return {} if self.regression else super().model_head_options(labels)

    def build_model(self, encoder, num_classes=None, labels=None, dropout=0.1,
                    head_hidden_dim=None, pooling="pooler"):
        """A `Classifier`: `num_classes` logits (the labels' number; 2 when neither is
        given), or one score for regression (`num_classes` 1 or left out, no labels)."""
        if self.regression:
            check_regression_head(num_classes, labels)
            num_classes = 1
        elif labels is not None:
            num_classes = len(labels)
        return Classifier(encoder, num_classes or 2, dropout=dropout,
                          head_hidden_dim=head_hidden_dim, pooling=pooling, name="classifier")

    def loss(self):
        if self.regression:
            return regression_loss()
        weights = self.options.class_weights
        if weights == "balanced":  # never silently unweighted
            raise ValueError("class_weights='balanced' is computed from the training labels: "
                             "call task.adapt(train_examples) before building the model")
        return classification_loss(self.options.label_smoothing, weights)

    def metrics(self, model):
        if self.regression:
            return regression_metrics()
        return classification_metrics(model.output_shape[-1])

    def monitor(self, num_classes):
        """The validation metric that picks the best model (regression: Spearman)."""
        return REGRESSION_MONITOR if self.regression else classification_monitor(num_classes)

    def evaluate(self, model, dataset, examples, labels):
        """Classification: Keras's loss and metrics. Regression: `mse`, `pearson` and
        `spearman` of the scores over all of `examples` at once (one pass of `dataset`,
        which keeps their order)."""
        if not self.regression:
            return super().evaluate(model, dataset, examples, labels)
        scores = model.predict(dataset, verbose=0, callbacks=[ProgressCallback("predicting")])
        return {**evaluation_metrics(scores, regression_targets(examples)),
                "examples": len(examples)}

    def build_ensemble(self, models):
        """The mean of the models' class probabilities (as logits: its logarithm), or of
        their scores (regression), compiled with this task's loss and metrics, so
        `evaluate` and predictions read it as one."""
        ensemble = Ensemble(models, mean_outputs if self.regression else mean_log_probabilities)
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
        """JSONL: the text (and text pair), the label and every class's probability (or,
        regression, the `score`). Examples are batched by length
        (`tasks.words.length_sorting`) and written in input order."""
        preprocessor = self.preprocessor_of(preprocessor)
        # Batched by length (tasks.words.length_sorting): the same rows, less padding. The
        # input's labels (if any) are not read.
        outputs = self.predict_outputs(model, preprocessor, examples, labels, batch_size)
        lines = []
        for example, row in zip(examples, outputs):
            fields = ({"score": round(float(row), 6)} if self.regression
                      else label_fields(row, labels))
            record = {"text": example.text, **fields}
            if example.text_pair is not None:
                record["text_pair"] = example.text_pair
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        write_output(output, lines)
        return f"{len(examples)} texts"

    # === Raw inputs ===

    def raw_examples(self, inputs, targets=None, labels=None):
        """`ClassificationExample`s of texts, or of `(text, text_pair)` pairs for a pair
        classifier; `targets` are label names or ids (None: the first label, unused), or
        numbers (regression).

        >>> ClassificationTask().raw_examples(["Who is he ?"], [1], ["DESC", "HUM"])[0].label
        'HUM'
        >>> ClassificationTask(objective="regression").raw_examples(["a b"], [4.5])[0].label
        '4.5'
        """
        check_targets(inputs, targets)
        examples = []
        for index, item in enumerate(inputs):
            paired = isinstance(item, tuple)
            if paired != self.options.paired_input or (paired and len(item) != 2):
                wanted = "(text, text_pair) pairs" if self.options.paired_input else "texts"
                raise ValueError(f"x[{index}]: this classifier reads {wanted}, got {item!r}")
            text, pair = item if paired else (item, None)
            if self.regression:
                label = "0" if targets is None else str(targets[index])
            else:
                label = (labels[0] if targets is None
                         else label_name(targets[index], labels, f"y[{index}]"))
            examples.append(readers.ClassificationExample(text=text, label=label, text_pair=pair,
                                                          source="y", line=index))
        return examples

    def predict_outputs(self, model, preprocessor, examples, labels, batch_size=32):
        """Class probabilities [N, C] (regression: scores [N]), batched by length (as
        tools/predict.py does)."""
        outputs_of = predicted_scores if self.regression else class_probabilities
        return outputs_of(model, self.preprocessor_of(preprocessor), examples, batch_size)

    def decode_predictions(self, examples, outputs, labels):
        """`{"label", "score", "scores"}` per example (`prediction_record`); regression:
        `{"score"}` (`score_record`)."""
        if self.regression:
            return [score_record(score) for score in outputs]
        return [prediction_record(row, labels) for row in outputs]

    # === Serving ===

    def serving_inputs(self):
        return ("text", "text_pair") if self.options.paired_input else ("text",)

    def serving_outputs(self, model, preprocessor, labels, text, text_pair=None):
        if self.regression:
            return score_outputs(model, preprocessor, text, text_pair)
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
