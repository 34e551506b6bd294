"""Span-based NER (flat or nested) as a `Task`."""

import bisect
import dataclasses
import json

import numpy as np
from absl import flags

from nlpzoo.tasks.words.document_context import (
    add_document_context,
    check_context_sentences,
    define_context_flag,
    serving_input_names,
)
from nlpzoo.tasks.modeling.encoder_task_model import MaskedAccuracy
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text import prediction_io
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.span_ner import readers
from nlpzoo.tasks.span_ner.ensemble import SpanEnsemble
from nlpzoo.tasks.span_ner.evaluation import (
    calibrate,
    decode_all,
    evaluate_span_model,
    span_probabilities,
    span_probabilities_in_length_order,
)
from nlpzoo.tasks.span_ner.model import SpanNER
from nlpzoo.tasks.span_ner.pipeline import make_dataset
from nlpzoo.tasks.span_ner.serving import span_ner_outputs
from nlpzoo.tasks.words.conll import read_column_file
from nlpzoo.tasks.words.tags import spans_to_tags, tags_to_spans
from nlpzoo.tasks.task import Task
from nlpzoo.tasks.training.tensorboard_examples import entity_comparison, first_batch
from nlpzoo.tasks.words.preprocessor import WordPreprocessor
from nlpzoo.tasks.words.raw_sentences import raw_sentences
from nlpzoo.tasks.words.shapes import CasingFeaturesOption, define_casing_flag
from nlpzoo.tasks.words.windows import (
    check_stride,
    define_stride_flag,
    log_truncated,
    resolve_stride,
    windowed_examples,
)

DECODINGS = ("flat", "nested")
# About 98% of the spans of width <= 10 in CoNLL-2003 are NONE. With weight 1 a model
# from a short budget predicts no entity at all (bert_tiny from scratch, 2,000 sentences,
# 2 epochs: dev F1 0.00; MiniLM: 0.44 at the F1-best threshold); with 0.03: 0.23 and
# 0.68 (tools/train.py then calibrates the threshold on the validation data).
DEFAULT_NONE_WEIGHT = 0.03
FLAT_METHODS = ("greedy", "exact")


@dataclasses.dataclass(frozen=True)
class SpanNEROptions:
    """max_span_width: the widest span the model scores, in words. decoding:
    "flat" (non-overlapping entities) or "nested". flat_method: "greedy" or
    "exact" (weighted interval scheduling). threshold: minimum best non-NONE
    probability of an entity (see `tools/calibrate.py`). context_sentences:
    encode each sentence with up to this many sentences before and after it
    in its document, as unlabelled context (`tasks.words.document_context`); 0:
    alone. casing_features: give the model each word's capitalisation as
    written (`tasks.words.shapes`): what an uncased encoder cannot see; None:
    on for uncased text once `for_text_casing` knows, off until then."""

    max_span_width: int = 10
    decoding: str = "flat"
    flat_method: str = "greedy"
    threshold: float = 0.5
    context_sentences: int = 0
    stride: int = None
    casing_features: bool = None

    def __post_init__(self):
        object.__setattr__(self, "context_sentences",
                           check_context_sentences(self.context_sentences))
        object.__setattr__(self, "stride", check_stride(self.stride))
        if self.decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {DECODINGS}, got {self.decoding!r}")
        if self.flat_method not in FLAT_METHODS:
            raise ValueError(f"flat_method must be one of {FLAT_METHODS}, "
                             f"got {self.flat_method!r}")
        if int(self.max_span_width) < 1:
            raise ValueError(f"max_span_width must be >= 1, got {self.max_span_width}")


@register_task
class SpanNERTask(CasingFeaturesOption, Task):
    """Span-based NER from BIO column files or JSONL with (possibly nested) spans.

    Head options: `num_classes` (entity types + NONE), `labels`,
    `max_span_width`, `span_combination`, `span_pooling`,
    `width_embedding_dim`, `span_hidden_dim`, `none_weight`. Predictions are
    CoNLL columns (flat decoding) or JSONL entities with scores. With
    `context_sentences=N`, each sentence is read with the words of its N
    neighbours on each side in its document as context (in training,
    evaluation, prediction and the exported model, whose signature then also
    takes `left_context` and `right_context`); spans stay inside the sentence.

    Examples:
    >>> SpanNERTask().monitor(num_classes=5)
    ('val_span_f1', 'max')
    >>> SpanNERTask(decoding="nested").options_dict()["decoding"]
    'nested'
    """

    name = "span_ner"
    pipeline_tag = "token-classification"
    formats = readers.DATA_FORMATS
    Options = SpanNEROptions
    head_options = ("num_classes", "labels", "max_span_width", "span_combination",
                    "span_pooling", "width_embedding_dim", "span_hidden_dim", "none_weight",
                    "casing_dim")
    preprocessor_class = WordPreprocessor
    logged_metrics = ("span_precision", "span_recall", "span_f1", "threshold")
    ensemble_free_options = ("decoding", "flat_method", "threshold", "stride")
    calibration_option = "threshold"

    @classmethod
    def define_flags(cls, flag_values):
        flags.DEFINE_integer("max_span_width", 10, "Span NER: the widest span, in words.",
                                   lower_bound=1, flag_values=flag_values)
        flags.DEFINE_enum("span_decoding", "flat", DECODINGS, "Span NER: "
                                "non-overlapping entities (flat) or every span above the "
                                "threshold (nested).", flag_values=flag_values)
        flags.DEFINE_enum("flat_method", "greedy", FLAT_METHODS, "Span NER flat "
                                "decoding: greedy by score, or exact weighted interval "
                                "scheduling.", flag_values=flag_values)
        flags.DEFINE_float("none_weight", DEFAULT_NONE_WEIGHT, "Span NER: loss weight of "
                           "NONE spans (most spans are NONE: below 1 the rare entity spans "
                           "still drive learning on small data and short budgets).",
                           lower_bound=0.0, flag_values=flag_values)
        define_casing_flag(flag_values)
        define_context_flag(flag_values)
        define_stride_flag(flag_values)

    @classmethod
    def options_from_flags(cls, flag_values):
        if flag_values.none_weight <= 0:
            raise ValueError("--none_weight must be > 0")
        return ({"max_span_width": flag_values.max_span_width,
                 "decoding": flag_values.span_decoding,
                 "flat_method": flag_values.flat_method, "threshold": 0.5,
                 "context_sentences": flag_values.context_sentences,
                 "stride": flag_values.stride,
                 "casing_features": flag_values.casing_features},
                {"none_weight": flag_values.none_weight})

    # === Data ===

    def read(self, path, data_format=None):
        sentences = readers.read_span_file(path, data_format)
        return add_document_context(sentences, self.options.context_sentences)

    def label_names(self, sentences):
        return readers.span_label_names(sentences)

    def texts(self, sentences):
        for sentence in sentences:
            yield " ".join(sentence.words)

    def prediction_examples(self, sentences, preprocessor):
        return windowed_examples(sentences, self.preprocessor_of(preprocessor),
                                 self.options.stride, _span_window)

    def make_dataset(self, sentences, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        if training:
            log_truncated(sentences, self.preprocessor_of(preprocessor))
        return make_dataset(sentences, preprocessor, labels,
                            max_span_width=self.options.max_span_width, batch_size=batch_size,
                            training=training, seed=seed)

    # === Model ===

    def preset_for(self, encoder_preset, head_options):
        return f"{encoder_preset}_span_ner"

    def model_head_options(self, labels):
        return {"num_classes": len(labels), "max_span_width": self.options.max_span_width,
                "casing_dim": self.casing_dim()}

    def build_model(self, encoder, num_classes=5, labels=None, max_span_width=10,
                    span_combination="x,y", span_pooling="attention", width_embedding_dim=32,
                    span_hidden_dim=256, none_weight=DEFAULT_NONE_WEIGHT, dropout=0.1,
                    casing_dim=0):
        if labels is not None:
            num_classes = len(labels)
        return SpanNER(encoder, num_classes, max_span_width=max_span_width,
                       combination=span_combination, pooling=span_pooling,
                       width_embedding_dim=width_embedding_dim, hidden_dim=span_hidden_dim,
                       dropout=dropout, none_weight=none_weight, casing_dim=casing_dim,
                       name="span_ner")

    def metrics(self, model):
        return [MaskedAccuracy(name="span_accuracy")]  # the model computes its own loss

    def monitor(self, num_classes):
        return ("val_span_f1", "max")

    def build_ensemble(self, models):
        """The mean span probabilities, decoded once with this task's decoding options."""
        return SpanEnsemble(models)

    def _decoding_options(self):
        options = self.options
        return dict(max_span_width=options.max_span_width, threshold=options.threshold,
                    decoding=options.decoding, method=options.flat_method)

    def evaluate(self, model, dataset, sentences, labels):
        return evaluate_span_model(model, dataset, sentences, labels,
                                   **self._decoding_options())

    def validation_scores(self, model, dataset, sentences, labels, tune_decoding=False):
        """Span scores; with `tune_decoding`, at this model's F1-best threshold on
        `sentences`, found from the same pass of the model (one pass, not two)."""
        return evaluate_span_model(model, dataset, sentences, labels, tune_threshold=tune_decoding,
                                   **self._decoding_options())

    def describe_predictions(self, model, dataset, sentences, labels, count=4):
        """Each sentence with its gold and its decoded entities (at the current threshold)."""
        features, rows = first_batch(dataset, count)
        if not rows:
            return []
        batch = int(np.asarray(features["word_mask"]).shape[0])
        # Every row on its own (window=None): a window is shown as the sentence it holds.
        shown = [dataclasses.replace(sentence, window=None) for sentence in sentences[:batch]]
        options = self.options
        probabilities = span_probabilities(model, dataset.take(1), shown, options.max_span_width)
        decoded = decode_all(probabilities[:rows], labels, options.threshold, options.decoding,
                             options.flat_method)
        return [entity_comparison(sentence.words, sentence.spans,
                                  [(start, end, label) for start, end, label, _ in entities])
                for sentence, entities in zip(shown, decoded)]

    def calibrate(self, model, dataset, sentences, labels):
        """`(threshold, F1, table)`: the threshold that maximises F1 on `sentences`."""
        return calibrate(model, dataset, sentences, labels, self.options.max_span_width,
                         self.options.decoding, self.options.flat_method)

    def tune_decoding(self, model, dataset, sentences, labels):
        """The F1-best threshold on validation data: what a short budget needs most.

        Early in training (small data, few steps) no span's entity probability
        reaches 0.5 although the ranking of spans is already useful.
        """
        threshold, _, _ = self.calibrate(model, dataset, sentences, labels)
        return {"threshold": float(threshold)}

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        if input_format != "text" and path.endswith((".jsonl", ".json")):
            read = readers.read_span_jsonl(path)  # the span JSONL format; its spans are ignored
            sentences = [readers.SpanSentence(s.words, (), s.source, s.line, s.document)
                         for s in read]
        else:
            sentences = [readers.SpanSentence(words, (), source, line, document, text=text)
                         for words, source, line, document, text in prediction_io.read_word_input(
                             path, input_format, read_column_file)]
        return add_document_context(sentences, self.options.context_sentences)

    def write_predictions(self, model, preprocessor, sentences, labels, output,
                          output_format="auto", batch_size=64):
        """JSONL entities with scores, or CoNLL tags (flat decoding only). Sentences are
        batched by length (`tasks.words.length_sorting`) and written in input order."""
        as_jsonl = prediction_io.wants_jsonl(output, output_format)
        if not as_jsonl and self.options.decoding == "nested":
            raise DataFormatError("nested entities cannot be written as CoNLL tags; "
                                  "use a .jsonl output")
        preprocessor = self.preprocessor_of(preprocessor)
        windows = self.prediction_examples(sentences, preprocessor)
        # Batched by length (tasks.words.length_sorting): the same scores, less padding.
        probabilities = span_probabilities_in_length_order(
            model, preprocessor, windows, self.options.max_span_width, batch_size)
        entities = decode_all(probabilities, labels, self.options.threshold, self.options.decoding,
                              self.options.flat_method)
        lines = []
        for sentence, found in zip(sentences, entities):
            if as_jsonl:
                lines.append(json.dumps(_span_record(sentence, found, digits=6),
                                        ensure_ascii=False) + "\n")
            else:
                tags = spans_to_tags([(s, e, l) for s, e, l, _ in found], len(sentence.words))
                lines.append("".join(f"{w} {t}\n" for w, t in zip(sentence.words, tags)) + "\n")
        prediction_io.write_output(output, lines)
        return f"{len(sentences)} sentences"

    # === Raw inputs ===

    def raw_examples(self, inputs, targets=None, labels=None):
        """`SpanSentence`s of word lists or raw strings (split by
        `tasks.words.raw_sentences.split_text`, the string kept for character
        offsets), their entities read from tag lists (`B-PER`, ...; None: no
        entities), as one document.

        >>> SpanNERTask().raw_examples([("Paris", "is")], [["B-LOC", "O"]])[0].spans
        ((0, 0, 'LOC'),)
        """
        sentences = raw_sentences(
            inputs, targets, None,
            lambda words, tags, text: readers.SpanSentence(words, tags_to_spans(tags),
                                                           text=text))
        return add_document_context(sentences, self.options.context_sentences)

    def predict_outputs(self, model, preprocessor, sentences, labels, batch_size=32):
        """The decoded entities `(start, end, label, score)` of every sentence (long ones
        in windows, batched by length), with this task's decoding options."""
        preprocessor = self.preprocessor_of(preprocessor)
        windows = self.prediction_examples(sentences, preprocessor)
        probabilities = span_probabilities_in_length_order(
            model, preprocessor, windows, self.options.max_span_width, batch_size)
        return decode_all(probabilities, labels, self.options.threshold, self.options.decoding,
                          self.options.flat_method)

    def decode_predictions(self, sentences, entities, labels):
        """`{"words", "entities"}` per sentence (and `text` for a raw string, whose entities
        then have `start_char`/`end_char`), entities with scores: tools/predict.py's JSONL."""
        return [_span_record(sentence, found) for sentence, found in zip(sentences, entities)]

    # === Serving ===

    def serving_inputs(self):
        """`text`; with document context also `left_context` and `right_context`."""
        return serving_input_names(self.options.context_sentences)

    def serving_outputs(self, model, preprocessor, labels, text, left_context=None,
                        right_context=None):
        options = self.options
        return span_ner_outputs(model, preprocessor, labels, text, threshold=options.threshold,
                                decoding=options.decoding, method=options.flat_method,
                                left_context=left_context, right_context=right_context,
                                stride=resolve_stride(options.stride, preprocessor.max_seq_length))


def _span_window(sentence, window, left, right):
    # The parent's spans are sorted by start: only those starting in the window are looked
    # at (all of them for every window made evaluating a long sentence quadratic).
    first = bisect.bisect_left(sentence.spans, (window.start,))
    last = bisect.bisect_left(sentence.spans, (window.end,), lo=first)
    spans = [(start - window.start, end - window.start, label)
             for start, end, label in sentence.spans[first:last] if end < window.end]
    return dataclasses.replace(sentence, words=sentence.words[window.start:window.end],
                               spans=spans, left_context=left, right_context=right,
                               window=window)


def _span_record(sentence, found, digits=None):
    """A sentence's words and decoded entities with their scores (rounded to `digits`
    places when given), character offsets for raw text."""
    offsets = prediction_io.word_offsets(sentence)
    return prediction_io.sentence_record(sentence, entities=[
        prediction_io.entity_record(sentence, start, end, label, offsets,
                                    score=float(score) if digits is None
                                    else round(float(score), digits))
        for start, end, label, score in found])
