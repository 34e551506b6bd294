"""Single-text and text-pair classification as a `Task`."""

import dataclasses
import json

import numpy as np
from absl import flags

from nlpzoo.tasks.classification.model import Classifier
from nlpzoo.tasks.classification.multi_label import (
    MULTI_LABEL_MONITOR,
    check_multi_label_options,
    multi_hot_targets,
    multi_label_fields,
    multi_label_loss,
    multi_label_metrics,
    multi_label_names,
    multi_label_record,
    sigmoid,
    thresholds_of,
)
from nlpzoo.tasks.classification.multi_label import (
    evaluation_metrics as multi_label_evaluation,
)
from nlpzoo.tasks.classification.predictions import (
    class_probabilities,
    label_probabilities,
    predicted_scores,
    prediction_record,
    score_record,
)
from nlpzoo.tasks.classification.regression import (
    CORRELATIONS,
    REGRESSION_MONITOR,
    check_distinct_targets,
    check_regression_head,
    check_regression_options,
    evaluation_metrics,
    regression_loss,
    regression_metrics,
    regression_targets,
)
from nlpzoo.tasks.modeling.class_metrics import (
    balanced_class_weights,
    check_class_weights,
    classification_loss,
    classification_metrics,
    classification_monitor,
)
from nlpzoo.tasks.modeling.class_outputs import label_fields
from nlpzoo.tasks.modeling.objective_flag import define_objective_flag
from nlpzoo.tasks.modeling.pooling_flag import define_pooling_flag
from nlpzoo.tasks.text import text_readers as readers
from nlpzoo.tasks.text.text_pipeline import make_dataset
from nlpzoo.tasks.classification.serving import (
    classification_outputs,
    multi_label_outputs,
    score_outputs,
)
from nlpzoo.tasks.io.progress import ProgressCallback
from nlpzoo.tasks.modeling.ensemble import (
    Ensemble,
    mean_log_probabilities,
    mean_outputs,
    mean_sigmoid_logits,
)
from nlpzoo.tasks.modeling.label_thresholds import tune_thresholds
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.label_lists import DEFAULT_SEPARATOR
from nlpzoo.tasks.text.labels import sorted_label_names
from nlpzoo.tasks.text.raw_inputs import check_targets, label_name
from nlpzoo.tasks.text.prediction_io import looks_like_jsonl, read_text_lines, write_output
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.task import Task
from nlpzoo.tasks.training.tensorboard_examples import first_batch, label_comparison


@dataclasses.dataclass(frozen=True)
class ClassificationOptions:
    """paired_input: the model reads text pairs (`[CLS] a [SEP] b [SEP]`); label_smoothing:
    ε of the label-smoothed cross-entropy it trains with (0: plain cross-entropy);
    class_weights: each class's weight in the loss, in the order of the sorted labels, or
    "balanced" until `adapt` computes them from the training labels (None: all 1);
    objective: "classification" (a label) or "regression" (one score per example, learned
    with the mean squared error against numeric labels; no smoothing, no class weights);
    multi_label: any number of labels per example, one sigmoid each
    (`tasks.classification.multi_label`; no class weights); label_separator: what joins a
    multi-label CSV/TSV cell's labels; thresholds: each label's decision threshold, in the
    order of the sorted labels (None: 0.5 each; tuned on validation data after training)."""

    paired_input: bool = False
    label_smoothing: float = 0.0
    class_weights: object = None
    objective: str = "classification"
    multi_label: bool = False
    label_separator: str = DEFAULT_SEPARATOR
    thresholds: object = None

    def __post_init__(self):
        if self.class_weights is not None and self.class_weights != "balanced":
            check_class_weights(list(self.class_weights))
        check_regression_options(self.objective, self.label_smoothing, self.class_weights)
        check_multi_label_options(self.multi_label, self.objective, self.class_weights,
                                  self.thresholds, self.label_separator)


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
    With `multi_label=True` each example has any number of labels: one
    sigmoid logit per label, binary cross-entropy, the best model by
    validation micro F1, and per-label thresholds tuned on the validation
    data after training (`tasks.classification.multi_label`); predictions
    carry the label list and every label's probability.

    Examples:
    >>> ClassificationTask().monitor(num_classes=2)
    ('val_f1', 'max')
    >>> ClassificationTask(paired_input=True).serving_inputs()
    ('text', 'text_pair')
    >>> ClassificationTask(objective="regression").monitor(num_classes=0)
    ('val_spearman', 'max')
    >>> ClassificationTask(multi_label=True).monitor(num_classes=5)
    ('val_micro_f1', 'max')
    """

    name = "classification"
    pipeline_tag = "text-classification"
    formats = readers.FORMATS
    Options = ClassificationOptions
    head_options = ("num_classes", "labels", "head_hidden_dim", "pooling")
    # How it trained, how its data is read, and decoding (the first model's thresholds).
    ensemble_free_options = ("label_smoothing", "class_weights", "label_separator",
                             "thresholds")

    @classmethod
    def define_flags(cls, flag_values):
        define_objective_flag(flag_values)
        define_pooling_flag(flag_values)
        flags.DEFINE_integer("head_hidden_dim", None, "Classification: width of an extra "
                             "dense + tanh layer before the logits (none when omitted).",
                             lower_bound=1, flag_values=flag_values)
        flags.DEFINE_float("label_smoothing", 0.0, "Classification: train against "
                           "label-smoothed targets, 1 - e + e/K for the true class and e/K "
                           "for the others (--multi_label: 1 - e/2 and e/2 for each label; "
                           "0: plain cross-entropy).", lower_bound=0.0,
                           upper_bound=0.99, flag_values=flag_values)
        flags.DEFINE_string("class_weights", None, "Classification: each class's weight in "
                            "the loss: 'balanced' (n / (K * n_k) from the training labels, "
                            "scikit-learn's) or comma-separated weights in the order of the "
                            "sorted labels (config.json's labels). All 1 when omitted.",
                            flag_values=flag_values)
        flags.DEFINE_boolean("multi_label", False, "Classification: any number of labels per "
                             "text (a JSONL list, or a CSV/TSV cell joined by "
                             "--label_separator; column 'labels' unless --label_column), one "
                             "sigmoid each, binary cross-entropy; best epoch by validation "
                             "micro F1, then each label's F1-best threshold on the validation "
                             "data.", flag_values=flag_values)
        flags.DEFINE_string("label_separator", DEFAULT_SEPARATOR, "Classification "
                            "--multi_label: what joins the labels of a CSV/TSV cell "
                            "(sports|politics); an empty cell is no label.",
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
        if flag_values.multi_label:
            options.update(multi_label=True, label_separator=flag_values.label_separator)
        elif flag_values["label_separator"].present:
            raise ValueError("--label_separator splits the label cells of --multi_label data; "
                             "add --multi_label")
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
    def multi_label(self):
        """Whether each example has a set of labels (the multi-label objective)."""
        return self.options.multi_label

    @property
    def calibration_option(self):
        """Multi-label: the per-label `thresholds` (`calibrate`); none otherwise."""
        return "thresholds" if self.multi_label else None

    @property
    def logged_metrics(self):
        """Regression: the correlations over the whole validation set, after every epoch."""
        return CORRELATIONS if self.regression else ()

    # === Data ===

    def read(self, path, data_format=None, columns=None):
        """The examples of a TREC, MRPC, CSV/TSV or JSONL file; `columns` (a
        `tasks.text.columns.Columns`) names a CSV/TSV/JSONL file's columns. Regression:
        a label that is not a number is an error naming its file and line. Multi-label:
        each label is a tuple of names (`tasks.text.text_readers.read_examples`)."""
        examples = readers.read_examples(path, data_format, columns, self.multi_label,
                                         self.options.label_separator)
        if self.regression:
            regression_targets(examples)
        return examples

    def adapt(self, examples):
        """Reads pairs or single texts as the examples hold them; resolves "balanced" class
        weights from their labels and checks given ones against the number of labels.
        Multi-label: training data without a single label fails here, in one line."""
        changes = {"paired_input": examples[0].text_pair is not None}
        if self.regression:
            check_distinct_targets(examples)
        if self.multi_label:
            multi_label_names(examples)
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
        if self.multi_label:
            return multi_label_names(examples)
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
        """Batched `(features, label id)`, `(features, float32 score)` for regression, or
        `(features, float32 [C] 0/1 per label)` for multi-label."""
        targets = None
        if self.regression:
            targets = regression_targets(examples)
        elif self.multi_label:
            targets = multi_hot_targets(examples, labels)
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
        if self.multi_label:
            return multi_label_loss(self.options.label_smoothing)
        weights = self.options.class_weights
        if weights == "balanced":  # never silently unweighted
            raise ValueError("class_weights='balanced' is computed from the training labels: "
                             "call task.adapt(train_examples) before building the model")
        return classification_loss(self.options.label_smoothing, weights)

    def metrics(self, model):
        if self.regression:
            return regression_metrics()
        if self.multi_label:
            return multi_label_metrics(model.output_shape[-1])
        return classification_metrics(model.output_shape[-1])

    def monitor(self, num_classes):
        """The validation metric that picks the best model (regression: Spearman;
        multi-label: micro F1)."""
        if self.multi_label:
            return MULTI_LABEL_MONITOR
        return REGRESSION_MONITOR if self.regression else classification_monitor(num_classes)

    def evaluate(self, model, dataset, examples, labels):
        """Classification: Keras's loss and metrics. Regression: `mse`, `pearson` and
        `spearman` of the scores over all of `examples` at once (one pass of `dataset`,
        which keeps their order). Multi-label: `loss`, micro and macro F1, micro precision
        and recall and `exact_match` at the task's thresholds
        (`tasks.classification.multi_label.evaluation_metrics`), the same single pass."""
        if not (self.regression or self.multi_label):
            return super().evaluate(model, dataset, examples, labels)
        outputs = model.predict(dataset, verbose=0, callbacks=[ProgressCallback("predicting")])
        if self.multi_label:
            metrics = multi_label_evaluation(outputs, multi_hot_targets(examples, labels),
                                             self._thresholds(labels))
        else:
            metrics = evaluation_metrics(outputs, regression_targets(examples))
        return {**metrics, "examples": len(examples)}

    def calibrate(self, model, dataset, examples, labels):
        """Multi-label: `(thresholds, micro F1, table)`: each label's F1-best threshold on
        `examples` (`tasks.modeling.label_thresholds.tune_thresholds`), the micro F1 they
        give, and a `[threshold, F1]` row per label.

        Raises:
            ValueError: a single-label classifier (arg-max) has no threshold.
        """
        if not self.multi_label:
            raise ValueError("a single-label classifier predicts the most probable label; it "
                             "has no threshold to calibrate (multi-label classifiers have)")
        logits = model.predict(dataset, verbose=0, callbacks=[ProgressCallback("predicting")])
        targets = multi_hot_targets(examples, labels)
        thresholds, f1 = tune_thresholds(sigmoid(logits), targets)
        micro_f1 = multi_label_evaluation(logits, targets, thresholds)["micro_f1"]
        return [float(t) for t in thresholds], micro_f1, [[t, f] for t, f in zip(thresholds, f1)]

    def tune_decoding(self, model, dataset, examples, labels):
        """Multi-label: each label's F1-best threshold on the validation data (`calibrate`);
        nothing to tune otherwise."""
        if not self.multi_label:
            return {}
        thresholds, _, _ = self.calibrate(model, dataset, examples, labels)
        return {"thresholds": thresholds}

    def _thresholds(self, labels):
        """Multi-label: each label's threshold [C] (0.5 until tuned); None otherwise."""
        if not self.multi_label:
            return None
        return thresholds_of(self.options.thresholds, len(labels))

    def describe_predictions(self, model, dataset, examples, labels, count=4):
        """Multi-label: each text with its gold and its predicted label sets (at the current
        thresholds); otherwise `Task.describe_predictions`."""
        if not self.multi_label:
            return super().describe_predictions(model, dataset, examples, labels, count)
        features, rows = first_batch(dataset, count)
        if not rows:
            return []
        probabilities = sigmoid(np.asarray(model.predict_on_batch(features))[:rows])
        thresholds = self._thresholds(labels)
        comparisons = []
        for example, row in zip(examples, probabilities):
            gold = [label for label in labels if label in example.label]  # label-id order
            predicted = multi_label_record(row, labels, thresholds)["labels"]
            comparisons.append(label_comparison(list(self.texts([example])),
                                                " ".join(gold) or "-",
                                                " ".join(predicted) or "-"))
        return comparisons

    def build_ensemble(self, models):
        """The mean of the models' class probabilities (as logits: its logarithm), of
        their scores (regression) or of each label's probability (multi-label: as logits),
        compiled with this task's loss and metrics, so `evaluate` and predictions read it
        as one."""
        if self.multi_label:  # the mean of each label's probability
            combine = mean_sigmoid_logits
        else:
            combine = mean_outputs if self.regression else mean_log_probabilities
        ensemble = Ensemble(models, combine)
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
        regression, the `score`; multi-label, the `labels` over their thresholds and every
        label's probability). Examples are batched by length
        (`tasks.words.length_sorting`) and written in input order."""
        preprocessor = self.preprocessor_of(preprocessor)
        # Batched by length (tasks.words.length_sorting): the same rows, less padding. The
        # input's labels (if any) are not read.
        outputs = self.predict_outputs(model, preprocessor, examples, labels, batch_size)
        lines = []
        thresholds = self._thresholds(labels)
        for example, row in zip(examples, outputs):
            if self.regression:
                fields = {"score": round(float(row), 6)}
            elif self.multi_label:
                fields = multi_label_fields(row, labels, thresholds)
            else:
                fields = label_fields(row, labels)
            record = {"text": example.text, **fields}
            if example.text_pair is not None:
                record["text_pair"] = example.text_pair
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        write_output(output, lines)
        return f"{len(examples)} texts"

    # === Raw inputs ===

    def raw_examples(self, inputs, targets=None, labels=None):
        """`ClassificationExample`s of texts, or of `(text, text_pair)` pairs for a pair
        classifier; `targets` are label names or ids (None: the first label, unused),
        numbers (regression), or lists of label names or ids (multi-label).

        >>> ClassificationTask().raw_examples(["Who is he ?"], [1], ["DESC", "HUM"])[0].label
        'HUM'
        >>> ClassificationTask(objective="regression").raw_examples(["a b"], [4.5])[0].label
        '4.5'
        >>> multi_label = ClassificationTask(multi_label=True)
        >>> multi_label.raw_examples(["a"], [("y", 0)], ["x", "y"])[0].label
        ('y', 'x')
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
            elif self.multi_label:
                label = () if targets is None else _raw_label_set(targets[index], labels, index)
            else:
                label = (labels[0] if targets is None
                         else label_name(targets[index], labels, f"y[{index}]"))
            examples.append(readers.ClassificationExample(text=text, label=label, text_pair=pair,
                                                          source="y", line=index))
        return examples

    def predict_outputs(self, model, preprocessor, examples, labels, batch_size=32):
        """Class probabilities [N, C] (regression: scores [N]; multi-label: each label's
        probability [N, C]), batched by length (as tools/predict.py does)."""
        outputs_of = predicted_scores if self.regression else class_probabilities
        if self.multi_label:
            outputs_of = label_probabilities
        return outputs_of(model, self.preprocessor_of(preprocessor), examples, batch_size)

    def decode_predictions(self, examples, outputs, labels):
        """`{"label", "score", "scores"}` per example (`prediction_record`); regression:
        `{"score"}` (`score_record`); multi-label: `{"labels", "scores"}`, the labels at or
        over their thresholds (`multi_label_record`)."""
        if self.regression:
            return [score_record(score) for score in outputs]
        if self.multi_label:
            thresholds = self._thresholds(labels)
            return [multi_label_record(row, labels, thresholds) for row in outputs]
        return [prediction_record(row, labels) for row in outputs]

    # === Serving ===

    def serving_inputs(self):
        return ("text", "text_pair") if self.options.paired_input else ("text",)

    def serving_outputs(self, model, preprocessor, labels, text, text_pair=None):
        if self.regression:
            return score_outputs(model, preprocessor, text, text_pair)
        if self.multi_label:
            return multi_label_outputs(model, preprocessor, labels, self._thresholds(labels),
                                       text, text_pair)
        return classification_outputs(model, preprocessor, labels, text, text_pair)


def _raw_label_set(target, labels, index):
    """A raw multi-label target (a list or tuple of names or ids) as a tuple of names."""
    if isinstance(target, (str, int)):
        raise ValueError(f"y[{index}]: a multi-label target is a list of label names or ids, "
                         f"got {target!r}")
    return tuple(label_name(value, labels, f"y[{index}]") for value in target)


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
    check_class_weights(weights, f"--class_weights={value}")
    return weights
