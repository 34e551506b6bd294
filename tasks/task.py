"""`Task`: everything that is particular to one task family, behind one interface.

A task owns its options, its readers, its label set, its preprocessor and
`tf.data` pipeline, its model head, loss and metrics, its callbacks and
evaluation, how its predictions are written and what its exported model
serves. `zoo.build_model` and every binary in `tools/` talk to tasks through
this class only, so a new task is one subclass in its own folder plus a
`register_task` line; nothing central switches on task names.

Examples:
>>> from nlpzoo.tasks.registry import get_task
>>> task = get_task("classification")
>>> task.name, task.monitor(num_classes=6)
('classification', ('val_accuracy', 'max'))
"""

import dataclasses

import numpy as np

from nlpzoo.tasks.training.evaluation_callback import EvaluationCallback
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.io.progress import ProgressCallback
from nlpzoo.tasks.training.tensorboard_examples import (
    ExampleTextLogger,
    first_batch,
    label_comparison,
    predicted_labels,
)


class Task:
    """The base of every task family; subclasses set the class attributes and override.

    Class attributes:
        name: the registry name (`tools/train.py --task=<name>`).
        formats: the data formats `read` accepts (`--data_format`).
        Options: a frozen dataclass of the task's options, read as
            `task.options.<name>`; they are saved in a trained model's
            metadata and given back to the constructor when it is loaded
            (`task_options`).
        head_options: the names of `build_model` keyword arguments that shape
            the head (validated by `zoo.build_model`).
        preprocessor_class: the `TextPreprocessor` subclass that turns this
            task's raw inputs into model features.
        logged_metrics: names of `evaluate` results that `callbacks` adds to
            every epoch's logs as `val_<name>` (for metrics Keras cannot
            compute batch by batch, such as entity F1).
        ensemble_free_options: options that may differ between the models of
            an ensemble (`ensemble`), which takes them from its first model
            (decoding choices such as span NER's threshold); all others must agree.
        trainable: False for a task whose model works on a pretrained
            encoder as it is, with no labels and no loss (sentence
            embeddings): tools/train.py refuses it, and tools/export.py
            `--task` builds its model on any checkpoint's or trained
            model's encoder.
        pipeline_tag: what the model does, in the Hugging Face Hub's words
            (`text-classification`, `token-classification`, ...): the model
            card's `pipeline_tag`; None when none fits.
        default_max_seq_length: the packed length a run of this task has when
            `--max_seq_length` is not given; None: the encoder preset's
            (question answering packs a question with a window of its context: 384).
        calibration_option: the task option that the task's
            `calibrate(model, dataset, examples, labels)` picks on validation
            data, returning `(value, score, table)` (`tools/calibrate.py` stores
            the value with the model): span NER's `threshold`; a multi-label
            classifier's `thresholds`, a list with one per label (a property
            there: a single-label classifier has none); None for a task with
            nothing to calibrate.
        evaluates_without_labels: `evaluate` scores plain text by itself, with no
            labels (fill-mask masks it), so tools/evaluate.py evaluates the
            task even though it needs no training.
        pretrained_heads: the heads of a pretraining checkpoint the model takes
            over as they are ("mlm_head": BERT's masked-LM head); `zoo` loads
            them into the layers of those names after `build_model`, and
            refuses a checkpoint that lacks one.
        metrics_in_percent: `evaluate` gives its scores in percent (SQuAD's
            exact match and F1, as the official script prints them), not as
            fractions: a difference of 1 is one point.
        zero_shot: a trainable task whose model also works untrained, built on
            a pretrained checkpoint with its `pretrained_heads` (prompt-based
            classification): tools/evaluate.py, predict.py and export.py
            `--task` build it, with its options from its own flags.

    Args:
        **options: fields of `Options`; unknown names raise `ValueError`.
    """

    name = None
    formats = ()
    Options = None
    head_options = ()
    preprocessor_class = TextPreprocessor
    logged_metrics = ()
    ensemble_free_options = ()
    trainable = True
    pipeline_tag = None
    default_max_seq_length = None
    calibration_option = None
    metrics_in_percent = False
    evaluates_without_labels = False
    pretrained_heads = ()
    zero_shot = False

    def __init__(self, **options):
        if self.Options is None:
            if options:
                raise ValueError(f"task {self.name!r} takes no options, got {sorted(options)}")
            self.options = None
            return
        valid = self.option_names()
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join(unknown)} for task {self.name!r}; "
                             f"valid: {', '.join(valid)}")
        self.options = self.Options(**options)

    @classmethod
    def option_names(cls):
        """The names of the task's options (the fields of `Options`)."""
        return [field.name for field in dataclasses.fields(cls.Options)] if cls.Options else []

    @classmethod
    def from_metadata(cls, metadata):
        """The task of a trained model, from the metadata it carries (`task_options`)."""
        return cls(**(metadata.get("task_options") or {}))

    def options_dict(self):
        """The options as a JSON-serialisable dict (what a trained model keeps)."""
        return dataclasses.asdict(self.options) if self.options is not None else {}

    def with_options(self, **changes):
        """A copy of this task with some options changed."""
        return type(self)(**{**self.options_dict(), **changes})

    # === Command-line flags ===

    @classmethod
    def define_flags(cls, flag_values):
        """Defines this task's own `tools/train.py` flags (none by default)."""

    @classmethod
    def options_from_flags(cls, flag_values):
        """`(task options, head options)` from the parsed flags."""
        return {}, {}

    # === Data ===

    def read(self, path, data_format=None):
        """The examples of a data file; errors name the file and line."""
        raise NotImplementedError

    def adapt(self, examples):
        """This task with the options the training data decides (a tag scheme, ...)."""
        return self

    def label_names(self, examples):
        """The label set learned from training examples, in label-id order."""
        raise NotImplementedError

    def texts(self, examples):
        """Every text of `examples`, for learning a vocabulary."""
        raise NotImplementedError

    def preprocessor_options(self):
        """Keyword arguments of `preprocessor_class` that this task's options decide."""
        return {}

    def for_text_casing(self, lowercase):
        """This task with the options that follow from whether its text is lower-cased.

        Binaries call it once the vocabulary's casing is known (an uncased
        checkpoint's, or `--lowercase`), before `make_preprocessor`. The word
        tasks turn their casing features on for uncased text unless told
        otherwise (`tasks.words.shapes`); other tasks are unchanged.
        """
        return self

    def make_preprocessor(self, vocabulary, lowercase=True, max_seq_length=128):
        """The preprocessor of this task (raw inputs → model features)."""
        return self.preprocessor_class(vocabulary, lowercase=lowercase,
                                       max_seq_length=max_seq_length, name="preprocessor",
                                       **self.preprocessor_options())

    def preprocessor_of(self, preprocessor):
        """`preprocessor` as this task's preprocessor class (older models saved the base),
        with the options this task decides (`preprocessor_options`)."""
        if isinstance(preprocessor, self.preprocessor_class) and all(
                getattr(preprocessor, name) == value
                for name, value in self.preprocessor_options().items()):
            return preprocessor
        return self.make_preprocessor(preprocessor.tokenizer(), preprocessor.lowercase,
                                      preprocessor.max_seq_length)

    def prediction_examples(self, examples, preprocessor):
        """`examples` as the model predicts and evaluates them (unchanged by default).

        Word-level tasks cut sentences longer than the model's window into
        overlapping windows (`tasks.words.windows`); their `evaluate` and
        `write_predictions` merge the windows back. Every caller that builds
        a dataset for `evaluate`, `calibrate` or `tune_decoding` passes the
        examples through this first.
        """
        return list(examples)

    def make_dataset(self, examples, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        """Batched `(features, labels)` for `fit`, `evaluate` and `predict`.

        With `training`, shuffled and bucketed by length: `seed` an int
        gives a new order at every pass over the dataset; `(seed, pass)`
        gives that pass its own order, the same at every iteration (how
        tools/train.py makes a resumed run replay the same batches). Built
        on `tasks.text.batching.shuffle_batch_and_count`, which does both.
        """
        raise NotImplementedError

    # === Model ===

    def preset_for(self, encoder_preset, head_options):
        """The name of a zoo task preset for this task on `encoder_preset`, or None."""
        return None

    def model_head_options(self, labels):
        """Head options that follow from the label set and this task's options."""
        return {"num_classes": len(labels)}

    def build_model(self, encoder, **head_options):
        """An uncompiled model: `encoder` plus this task's head."""
        raise NotImplementedError

    def loss(self):
        """The loss for `compile`; None when the model computes its own."""
        return None

    def metrics(self, model):
        """Metrics for `compile`."""
        return []

    def monitor(self, num_classes):
        """`(logged validation metric, "max" or "min")` that picks the best model."""
        raise NotImplementedError

    def callbacks(self, eval_dataset, eval_examples, labels, log_dir=None, tune_decoding=False):
        """Callbacks that add validation metrics to the epoch logs (run before the others).

        By default one `EvaluationCallback` that runs `validation_scores` on
        the validation data after every epoch and logs `logged_metrics`. With
        `log_dir` (a TensorBoard folder, e.g. `logs/validation`), it also
        writes every per-type score there (`entity/PER/f1`, ...), and an
        `ExampleTextLogger` writes `describe_predictions` each epoch.
        `tune_decoding`: the run tunes the task's decoding after training
        (`tools/train.py --tune_decoding`), so each epoch is scored at its own
        tuned decoding (see `validation_scores`).
        """
        callbacks = []
        if self.logged_metrics:
            def evaluate(model):
                return self.validation_scores(model, eval_dataset, eval_examples, labels,
                                              tune_decoding=tune_decoding)

            callbacks.append(EvaluationCallback(evaluate, logged=self.logged_metrics,
                                                log_dir=log_dir))
        if log_dir is not None:
            callbacks.append(ExampleTextLogger(
                lambda model: self.describe_predictions(model, eval_dataset, eval_examples,
                                                        labels), log_dir))
        return callbacks

    def describe_predictions(self, model, dataset, examples, labels, count=4):
        """Markdown, one entry per example, of the model's output on the first `count` examples.

        `dataset` is the order-preserving dataset of `examples`; only its
        first batch is predicted, so this costs one batch per epoch. The
        default suits classification-like tasks: text → gold label /
        predicted label (the arg-max class; a single score is shown as a
        number). Tasks with structured outputs override it.
        """
        features, rows = first_batch(dataset, count)
        if not rows:
            return []
        outputs = np.asarray(model.predict_on_batch(features))[:rows]
        return [label_comparison(list(self.texts([example])),
                                 getattr(example, "label", getattr(example, "score", "?")),
                                 predicted)
                for example, predicted in zip(examples, predicted_labels(outputs, labels))]

    def evaluate(self, model, dataset, examples, labels):
        """A dict of metrics of `model` on `examples` (and their `dataset`)."""
        metrics = model.evaluate(dataset, return_dict=True, verbose=0,
                                 callbacks=[ProgressCallback("evaluating")])
        metrics = {name: float(value) for name, value in metrics.items()}
        metrics["examples"] = len(examples)
        return metrics

    def validation_scores(self, model, dataset, examples, labels, tune_decoding=False):
        """The validation scores logged each epoch, among them the one that picks the best epoch.

        `evaluate`, or with `tune_decoding` `evaluate` at the decoding that
        `tune_decoding` picks for this model on these examples: when the
        decoding is tuned after training, an epoch judged at the untuned
        default can look worthless while its tuned decoding is the best (span
        NER early in training: no span reaches probability 0.5).

        >>> @dataclasses.dataclass
        ... class CutOptions:
        ...     cut: float = 0.5
        >>> class Cut(Task):
        ...     Options = CutOptions
        ...     def tune_decoding(self, *data): return {"cut": 0.25}
        ...     def evaluate(self, *data): return {"scored_at": self.options.cut}
        >>> Cut().validation_scores(None, None, [], [])
        {'scored_at': 0.5}
        >>> Cut().validation_scores(None, None, [], [], tune_decoding=True)
        {'scored_at': 0.25}
        """
        task = self
        if tune_decoding:
            changes = self.tune_decoding(model, dataset, examples, labels)
            if changes:
                task = self.with_options(**changes)
        return task.evaluate(model, dataset, examples, labels)

    def evaluate_corpus(self, model, preprocessor, queries_path, corpus_path, batch_size=64):
        """Retrieval metrics (MRR@10, Recall@1/10, NDCG@10) of the queries of `queries_path`
        searching the corpus of `corpus_path` (`tasks.retrieval.corpus`); tasks whose
        models embed texts (the bi-encoder) implement it."""
        raise ValueError(f"a {self.name} model does not embed texts for retrieval; "
                         "evaluate it on --data alone")

    def tune_decoding(self, model, dataset, examples, labels):
        """Task option changes picked on validation data after training; none by default.

        `tools/train.py` applies them to the best model (and its config.json)
        before the final evaluation: span NER picks its decoding threshold.
        """
        return {}

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        """Examples to predict on, from a data file or plain text (labels unused)."""
        raise NotImplementedError

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        """Predicts `examples` and writes them to `output` atomically; returns a summary."""
        raise NotImplementedError

    # === Raw inputs (`EncoderTaskModel.fit`, `evaluate` and `predict` on Python values) ===

    def default_labels(self, num_classes):
        """Label names for a model given only `num_classes`: "0" … "n-1".

        >>> Task().default_labels(3)
        ['0', '1', '2']
        """
        return [str(index) for index in range(num_classes)]

    def raw_examples(self, inputs, targets=None, labels=None):
        """This task's examples from raw Python inputs (texts, pairs, word lists).

        `inputs` and `targets` are plain Python lists
        (`tasks.text.raw_inputs.raw_values`); `targets` None (prediction)
        gives examples whose labels are placeholders. `labels` are the
        model's label names, for targets given as ids. A task that does not
        override it takes no raw inputs (a `ValueError` says so).
        """
        raise ValueError(f"{self.name} models take no raw inputs; pass the features its "
                         "make_dataset makes")

    def predict_outputs(self, model, preprocessor, examples, labels, batch_size=32):
        """The model's outputs for `examples` (from `raw_examples`), as
        `decode_predictions` reads them; batched as tools/predict.py batches."""
        raise NotImplementedError

    def decode_predictions(self, examples, outputs, labels):
        """One result per example of `predict_outputs`, as a user wants it (label names
        and probabilities; words, tags and entities): what `model.predict` on raw
        inputs returns."""
        raise NotImplementedError

    # === Ensembles ===

    def ensemble_conflict(self, other):
        """Why a model of task `other` cannot join an ensemble with this task's; None if it can.

        The task names and every option outside `ensemble_free_options` must
        be the same (labels and vocabularies are compared by whoever loads the
        models). Returns one line for an error message.

        >>> from nlpzoo.tasks.registry import get_task
        >>> tagging = get_task("tagging", tag_scheme="IOB2")
        >>> tagging.ensemble_conflict(tagging.with_options(stride=16)) is None
        True
        >>> tagging.ensemble_conflict(tagging.with_options(tag_scheme="BIOES"))
        "tag_scheme 'IOB2' here, 'BIOES' there"
        """
        if other.name != self.name:
            return f"a {other.name} model, not {self.name}"
        mine, theirs = self.options_dict(), other.options_dict()
        differ = [name for name in mine
                  if name not in self.ensemble_free_options and mine[name] != theirs.get(name)]
        if not differ:
            return None
        return ", ".join(f"{name} {mine[name]!r} here, {theirs.get(name)!r} there"
                         for name in differ)

    def ensemble(self, models):
        """One model that stands for the average of `models`, for `evaluate` and prediction.

        The models are of this task with the same labels, vocabulary and
        options (see `ensemble_conflict`); this task's options (the first
        model's) decide the decoding. An ensemble of one model is that model.
        Tasks say what averaging means in `build_ensemble`.

        Raises:
            ValueError: the task has no ensembles.
        """
        models = list(models)
        if len(models) == 1:
            return models[0]
        return self.build_ensemble(models)

    def build_ensemble(self, models):
        """The ensemble of two or more `models` (`tasks.modeling.ensemble.Ensemble`); none by default."""
        raise ValueError(f"{self.name} models cannot be ensembled (the task defines no "
                         "average of its models' outputs)")

    # === Serving ===

    def serving_inputs(self):
        """The names of the string inputs of the exported `serving_default` signature."""
        return ("text",)

    def serving_outputs(self, model, preprocessor, labels, **inputs):
        """The exported model's outputs (a dict of tensors) from raw string inputs."""
        raise NotImplementedError
