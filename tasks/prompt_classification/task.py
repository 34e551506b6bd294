"""Prompt-based (cloze) classification as a `Task`: PET / LM-BFF style, zero- or few-shot."""

import dataclasses
import json

import numpy as np
from absl import flags

from nlpzoo.tasks.classification.task import ClassificationTask
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.io.progress import ProgressCallback
from nlpzoo.tasks.modeling.class_outputs import label_fields, softmax_probabilities
from nlpzoo.tasks.prompt_classification.model import PromptClassifier
from nlpzoo.tasks.prompt_classification.patterns import (
    check_patterns,
    check_verbalizer,
    missing_words,
    parse_verbalizer,
)
from nlpzoo.tasks.prompt_classification.preprocessor import PromptPreprocessor
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.task import Task
from nlpzoo.tasks.text import text_readers as readers
from nlpzoo.tasks.text.labels import sorted_label_names
from nlpzoo.tasks.text.prediction_io import write_output
from nlpzoo.tasks.text.text_pipeline import make_dataset


@dataclasses.dataclass(frozen=True)
class PromptClassificationOptions:
    """patterns: the patterns, each with `{text}` (pairs: and `{text_pair}`) and one
    `[MASK]` slot (`patterns.parse_pattern`); several: the class scores are averaged over
    them. verbalizer: {label: word}, a word for every label. label_smoothing: ε of the
    label-smoothed cross-entropy (0: plain)."""

    patterns: tuple = ()
    verbalizer: dict = None
    label_smoothing: float = 0.0

    def __post_init__(self):
        if isinstance(self.patterns, str):
            object.__setattr__(self, "patterns", (self.patterns,))
        object.__setattr__(self, "patterns", tuple(self.patterns))
        if self.patterns:
            check_patterns(self.patterns)
        if self.verbalizer is not None:
            if isinstance(self.verbalizer, str):
                object.__setattr__(self, "verbalizer", parse_verbalizer(self.verbalizer))
            object.__setattr__(self, "verbalizer",
                               {str(label): str(word) for label, word in self.verbalizer.items()})
            check_verbalizer(self.verbalizer)
        if not 0.0 <= float(self.label_smoothing) < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")


@register_task
class PromptClassificationTask(Task):
    """Single-text and text-pair classification as a cloze question to a masked LM.

    Each example is written into the patterns ("{text} It was about [MASK] ."),
    and each label is scored by how likely the masked-LM head finds its word
    of the verbalizer (ABBR → "abbreviation") at the mask: the mean
    log-probability of the word's pieces, a word of m pieces read at the first
    m of n masks (n: the most pieces of any label word), averaged over the
    patterns (`PromptClassifier`). The model is the encoder and the masked-LM
    head of a checkpoint that has one (`pretrained_heads`): it classifies
    with no training at all (zero-shot: tools/evaluate.py --task=...
    --init_checkpoint=..., `zero_shot`), and fine-tunes with tools/train.py,
    cross-entropy over the class scores (every adaptation option acts on the
    encoder). Data, labels, metrics, predictions and serving are the
    classification task's (`tasks.classification`); the labels are the
    verbalizer's, sorted as classification sorts them, and every label of the
    data needs a word.

    Examples:
    >>> task = PromptClassificationTask(patterns=["{text} It was about [MASK] ."],
    ...                                 verbalizer="HUM:person,LOC:place")
    >>> task.labels(), task.monitor(2), task.serving_inputs()
    (['HUM', 'LOC'], ('val_f1', 'max'), ('text',))
    >>> PromptClassificationTask(patterns=["{text} [MASK] {label}"])
    Traceback (most recent call last):
    ...
    ValueError: pattern '{text} [MASK] {label}': unknown slot {label}; the slots are {text}, {text_pair} and [MASK]
    """

    name = "prompt_classification"
    pipeline_tag = "text-classification"
    formats = readers.FORMATS
    Options = PromptClassificationOptions
    head_options = ("num_classes", "labels")
    preprocessor_class = PromptPreprocessor
    ensemble_free_options = ("label_smoothing",)
    pretrained_heads = ("mlm_head",)
    zero_shot = True

    @classmethod
    def define_flags(cls, flag_values):
        flags.DEFINE_multi_string("pattern", None, "Prompt classification: a pattern, with "
                                  "{text} (pairs: and {text_pair}) and one [MASK] slot, e.g. "
                                  "'{text} It was about [MASK] .' or '{text} ? [MASK] , "
                                  "{text_pair}'; repeat the flag for several, whose class "
                                  "scores are averaged.", flag_values=flag_values)
        flags.DEFINE_string("verbalizer", None, "Prompt classification: each label's word, "
                            "label:word,label:word (ABBR:abbreviation,DESC:description,...); "
                            "every label of the data needs one. A word of several pieces is "
                            "scored by their mean log-probability.", flag_values=flag_values)

    @classmethod
    def options_from_flags(cls, flag_values):
        patterns, verbalizer = (flag_values[name].value if name in flag_values else None
                                for name in ("pattern", "verbalizer"))
        if "pattern" not in flag_values:
            raise ValueError(f"this binary has no --pattern and --verbalizer: build a {cls.name} "
                             "model with tools/train.py, or untrained with tools/evaluate.py "
                             "or tools/predict.py")
        if not patterns or not verbalizer:
            raise ValueError("give --pattern (one or more) and --verbalizer=label:word,...")
        options = {"patterns": tuple(patterns), "verbalizer": parse_verbalizer(verbalizer)}
        # --label_smoothing is the classification task's flag (tools/train.py defines both).
        smoothing = flag_values["label_smoothing"].value if "label_smoothing" in flag_values else 0
        if smoothing:
            options["label_smoothing"] = smoothing
        return options, {}

    # === The options ===

    def _require(self):
        if not self.options.patterns:
            raise ValueError(f"the {self.name} task needs patterns (--pattern)")
        if self.options.verbalizer is None:
            raise ValueError(f"the {self.name} task needs a verbalizer (--verbalizer)")

    @property
    def reads_pairs(self):
        """Whether the patterns have a `{text_pair}` slot (the data then holds pairs)."""
        self._require()
        return check_patterns(self.options.patterns)

    def labels(self):
        """The verbalizer's labels in label-id order (sorted as classification sorts)."""
        self._require()
        return sorted_label_names(self.options.verbalizer)

    def default_labels(self, num_classes):
        """The verbalizer's labels (`labels`), whatever `num_classes` says."""
        return self.labels()

    def _classification(self):
        """The classification task whose data, loss, metrics and outputs these are."""
        return ClassificationTask(paired_input=self.reads_pairs,
                                  label_smoothing=self.options.label_smoothing)

    # === Data ===

    def read(self, path, data_format=None, columns=None):
        return self._classification().read(path, data_format, columns)

    def adapt(self, examples):
        """Checks the examples against the patterns (pairs or single texts) and the
        verbalizer (a word for every label); the task is unchanged."""
        self.label_names(examples)
        return self

    def label_names(self, examples):
        """The verbalizer's labels (`labels`), after checking that `examples` are pairs
        when the patterns read pairs, and that every label of theirs has a word."""
        examples = list(examples)
        self._check_pairs(examples)
        self._check_words(examples)
        return self.labels()

    def _check_pairs(self, examples):
        """The examples are pairs exactly when the patterns read pairs; the error names the
        first example (its file and line) that is not."""
        paired = self.reads_pairs
        wrong = next((example for example in examples
                      if (example.text_pair is not None) != paired), None)
        if wrong is not None:
            where = f"{wrong.source}:{wrong.line}" if wrong.source else "the input"
            raise DataFormatError(
                f"{where}: the patterns have a {{text_pair}} slot but the data holds single "
                "texts" if paired else
                f"{where}: the data holds text pairs but the patterns have no {{text_pair}} "
                "slot")

    def _check_words(self, examples):
        """Every label of `examples` has a word; the error names the first without one."""
        examples = list(examples)
        missing = missing_words(self.options.verbalizer or {},
                                (example.label for example in examples))
        if missing:
            first = next(example for example in examples if example.label == missing[0])
            raise ValueError(f"{first.source}:{first.line}: the verbalizer has no word for "
                             f"the label(s) {', '.join(map(str, missing))} of the data "
                             "(--verbalizer=label:word,...)")

    def texts(self, examples):
        return self._classification().texts(examples)

    def preprocessor_options(self):
        self._require()
        return {"patterns": list(self.options.patterns),
                "label_words": [self.options.verbalizer[label] for label in self.labels()]}

    def make_dataset(self, examples, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        """Batched `(features, label id)`: the classification pipeline with this task's
        `PromptPreprocessor` features."""
        examples = list(examples)
        self._check_pairs(examples)
        self._check_words(examples)
        preprocessor = self.preprocessor_of(preprocessor)
        preprocessor.label_pieces()  # its words checked here, not inside the traced pipeline
        return make_dataset(examples, preprocessor, labels,
                            batch_size=batch_size, training=training, seed=seed)

    # === Model ===

    def model_head_options(self, labels):
        return {"labels": list(labels)}

    def build_model(self, encoder, num_classes=None, labels=None, dropout=None):
        """A `PromptClassifier` with a class per verbalizer label (`dropout` is the
        encoder's own; the head adds none)."""
        count = len(self.labels())
        given = len(labels) if labels is not None else num_classes
        if given is not None and given != count:
            raise ValueError(f"{given} classes given, but the verbalizer has {count} labels")
        return PromptClassifier(encoder, count, num_patterns=len(self.options.patterns))

    def loss(self):
        return self._classification().loss()

    def metrics(self, model):
        return self._classification().metrics(model)

    def monitor(self, num_classes):
        return self._classification().monitor(num_classes)

    def evaluate(self, model, dataset, examples, labels):
        """The classification task's loss and metrics; a model built untrained (zero-shot,
        never compiled) is compiled with this task's loss and metrics first."""
        if not getattr(model, "compiled", True):
            model.compile(loss=self.loss(), metrics=self.metrics(model))
        return super().evaluate(model, dataset, examples, labels)

    def build_ensemble(self, models):
        return self._classification().build_ensemble(models)

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None,
                              columns=None):
        return self._classification().read_prediction_input(path, input_format, data_format,
                                                            columns)

    def raw_examples(self, inputs, targets=None, labels=None):
        return self._classification().raw_examples(inputs, targets, labels)

    def predict_outputs(self, model, preprocessor, examples, labels, batch_size=32):
        """Class probabilities [N, C] (float64), in the order of `examples`."""
        examples = list(examples)
        if not examples:
            return np.zeros((0, len(labels)))
        # Prediction input has no labels: the first label stands in (unused).
        placeholder = [dataclasses.replace(example, label=labels[0]) for example in examples]
        dataset = self.make_dataset(placeholder, preprocessor, labels, batch_size=batch_size)
        scores = model.predict(dataset, verbose=0, callbacks=[ProgressCallback("predicting")])
        return softmax_probabilities(scores)

    def decode_predictions(self, examples, outputs, labels):
        return self._classification().decode_predictions(examples, outputs, labels)

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        """JSONL: the text (and text pair), the label and every class's probability."""
        if output_format not in ("auto", "jsonl"):
            raise ValueError(f"prompt classification predictions are JSON lines, not "
                             f"{output_format}")
        outputs = self.predict_outputs(model, preprocessor, examples, labels, batch_size)
        lines = []
        for example, row in zip(examples, outputs):
            record = {"text": example.text, **label_fields(row, labels)}
            if example.text_pair is not None:
                record["text_pair"] = example.text_pair
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        write_output(output, lines)
        return f"{len(examples)} texts"

    # === Serving ===

    def serving_inputs(self):
        return ("text", "text_pair") if self.reads_pairs else ("text",)

    def serving_outputs(self, model, preprocessor, labels, text, text_pair=None):
        return self._classification().serving_outputs(
            model, self.preprocessor_of(preprocessor), labels, text, text_pair)
