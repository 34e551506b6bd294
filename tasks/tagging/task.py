"""BIO word tagging (softmax or CRF head) as a `Task`."""

import dataclasses
import functools
import json

import numpy as np
from absl import flags

from nlpzoo.layers import SUBWORD_POOLINGS
from nlpzoo.tasks.words.document_context import (
    add_document_context,
    check_context_sentences,
    define_context_flag,
    serving_input_names,
)
from nlpzoo.tasks.modeling.encoder_task_model import MaskedAccuracy
from nlpzoo.tasks.text.prediction_io import (
    entity_record,
    read_word_input,
    sentence_record,
    wants_jsonl,
    word_offsets,
    write_output,
)
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.words import tags
from nlpzoo.tasks.words import conll as readers
from nlpzoo.tasks.tagging.ensemble import TaggerEnsemble
from nlpzoo.tasks.tagging.evaluation import evaluate_tagger, predict_tags_in_length_order
from nlpzoo.tasks.tagging.model import HEADS, SequenceTagger
from nlpzoo.tasks.tagging.pipeline import make_dataset
from nlpzoo.tasks.tagging.serving import tagging_outputs
from nlpzoo.tasks.task import Task
from nlpzoo.tasks.training.tensorboard_examples import entity_comparison, first_batch
from nlpzoo.tasks.words.preprocessor import WordPreprocessor
from nlpzoo.tasks.words.raw_sentences import raw_sentences
from nlpzoo.tasks.words.shapes import CasingFeaturesOption, define_casing_flag
from nlpzoo.tasks.words.windows import (
    check_stride,
    define_stride_flag,
    kept_word_counts,
    resolve_stride,
    windowed_examples,
)

FORMATS = ("conll", "columns")


@dataclasses.dataclass(frozen=True)
class TaggingOptions:
    """convert_iob1: read IOB1 files as IOB2. label_all_subwords: train on every
    subword (B-x continues as I-x). tag_scheme: the scheme of the training data
    (detected by `adapt`), which constrains a CRF. context_sentences: encode
    each sentence with up to this many sentences before and after it in its
    document, as unlabelled context (`tasks.words.document_context`); 0: alone.
    stride: overlap, in subwords, of the windows a sentence longer than the
    model's window is predicted in (`tasks.words.windows`); None: half the window.
    casing_features: give the head each word's capitalisation as written
    (`tasks.words.shapes`, a `CASING_DIM`-wide embedding beside the word's
    vector): what an uncased encoder cannot see; None: on for uncased text
    once `for_text_casing` knows (the binaries' default), off until then.
    subword_aggregation: which of a word's subwords make the vector its tag is
    read from: "first" (the usual), "last", "mean" or "max" (element-wise) of
    all of them (`layers.SubwordPooling`); not with `label_all_subwords`,
    which trains on each subword alone."""

    convert_iob1: bool = False
    label_all_subwords: bool = False
    tag_scheme: str = None
    context_sentences: int = 0
    stride: int = None
    casing_features: bool = None
    subword_aggregation: str = "first"

    def __post_init__(self):
        if self.subword_aggregation not in SUBWORD_POOLINGS:
            raise ValueError(f"subword_aggregation must be one of "
                             f"{', '.join(SUBWORD_POOLINGS)}, got {self.subword_aggregation!r}")
        if self.label_all_subwords and self.subword_aggregation != "first":
            raise ValueError("label_all_subwords trains on each subword alone: it does not go "
                             f"with subword_aggregation={self.subword_aggregation!r}, which "
                             "reads each word from all its subwords")
        object.__setattr__(self, "context_sentences",
                           check_context_sentences(self.context_sentences))
        object.__setattr__(self, "stride", check_stride(self.stride))


@register_task
class TaggingTask(CasingFeaturesOption, Task):
    """BIO tagging of words (CoNLL-2003 and two-column files), softmax or CRF head.

    Head options: `head` ("crf", the default, or "softmax"), `num_classes`,
    `labels` and `tag_scheme` (a CRF with labels and a scheme forbids the
    transitions the scheme forbids). Predictions are CoNLL columns or JSONL
    with the tags and the entities. With `context_sentences=N`, each sentence
    is read with the words of its N neighbours on each side in its document
    as context (in training, evaluation, prediction and the exported model,
    whose signature then also takes `left_context` and `right_context`).

    Examples:
    >>> from nlpzoo.tasks.tagging import TaggedSentence
    >>> TaggingTask().label_names([TaggedSentence(("Paris",), ("B-LOC",))])
    ['O', 'B-LOC', 'I-LOC']
    """

    name = "tagging"
    pipeline_tag = "token-classification"
    formats = FORMATS
    Options = TaggingOptions
    head_options = ("head", "num_classes", "labels", "tag_scheme", "casing_dim")
    preprocessor_class = WordPreprocessor
    logged_metrics = ("entity_precision", "entity_recall", "entity_f1")
    ensemble_free_options = ("convert_iob1", "label_all_subwords", "stride")

    @classmethod
    def define_flags(cls, flag_values):
        flags.DEFINE_enum("head", "crf", HEADS, "Tagging head, when --preset names an "
                          "encoder: a softmax per word or a CRF over words.",
                          flag_values=flag_values)
        flags.DEFINE_boolean("label_all_subwords", False, "Tagging: train on every "
                                   "subword (B-x continues as I-x), not only each word's "
                                   "first subword.", flag_values=flag_values)
        flags.DEFINE_boolean("convert_iob1", False, "Tagging: convert IOB1 tags to "
                                   "IOB2 when reading.", flag_values=flag_values)
        flags.DEFINE_enum("subword_aggregation", "first", SUBWORD_POOLINGS, "Tagging: the "
                          "vector a word's tag is read from: its first subword's, its last "
                          "subword's, or the mean or element-wise max of all its subwords' "
                          "(SLP3 11.3.3; Flair's subtoken_pooling). Kept with the model: "
                          "predict and export use it too.", flag_values=flag_values)
        define_casing_flag(flag_values)
        define_context_flag(flag_values)
        define_stride_flag(flag_values)

    @classmethod
    def options_from_flags(cls, flag_values):
        return ({"convert_iob1": flag_values.convert_iob1,
                 "label_all_subwords": flag_values.label_all_subwords,
                 "context_sentences": flag_values.context_sentences,
                 "stride": flag_values.stride,
                 "casing_features": flag_values.casing_features,
                 "subword_aggregation": flag_values.subword_aggregation},
                {"head": flag_values.head})

    @classmethod
    def from_metadata(cls, metadata):
        options = dict(metadata.get("task_options") or {})
        # Models saved before the option existed kept the scheme beside the options.
        options.setdefault("tag_scheme", metadata.get("tag_scheme"))
        return cls(**options)

    def preprocessor_options(self):
        """`word_shapes` (casing features), and `word_ends` when words pool all their
        subwords."""
        return {**super().preprocessor_options(),
                "word_ends": self.options.subword_aggregation != "first"}

    # === Data ===

    def read(self, path, data_format=None):
        # Both formats: whitespace columns, word first, tag last.
        sentences = readers.read_column_file(path, convert_iob1=self.options.convert_iob1)
        return add_document_context(sentences, self.options.context_sentences)

    def adapt(self, sentences):
        return self.with_options(tag_scheme=tags.detect_scheme(sentences))

    def label_names(self, sentences):
        """Every tag of the scheme for the entity types seen in training.

        A type seen only as B-x still gets I-x (and E-x, S-x under BIOES), so
        evaluation data may use any tag of a known type.
        """
        seen = readers.label_list(sentences)
        scheme = self.options.tag_scheme or tags.detect_scheme(sentences)
        prefixes = "BIES" if scheme == "BIOES" else "BI"
        types = sorted({tags.split_tag(tag)[1] for tag in seen if tag != "O"})
        return ["O"] + [f"{prefix}-{entity_type}" for entity_type in types
                        for prefix in prefixes]

    def texts(self, sentences):
        for sentence in sentences:
            yield " ".join(sentence.words)

    def prediction_examples(self, sentences, preprocessor):
        sentences = list(sentences)
        scheme = self.options.tag_scheme or tags.detect_scheme(sentences)
        return windowed_examples(sentences, self.preprocessor_of(preprocessor),
                                 self.options.stride,
                                 functools.partial(_tagged_window, scheme=scheme))

    def make_dataset(self, sentences, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        if training:
            sentences = self._close_truncated_entities(sentences, preprocessor)
        return make_dataset(sentences, preprocessor, labels, batch_size=batch_size,
                            training=training, seed=seed,
                            label_all_subwords=self.options.label_all_subwords)

    def _close_truncated_entities(self, sentences, preprocessor):
        """Training cuts a long sentence at the window: an entity cut there is closed at the
        cut (`tags.close_cut_entities`), so that a BIOES CRF does not score it impossible."""
        sentences = list(sentences)
        kept = kept_word_counts(sentences, self.preprocessor_of(preprocessor))
        scheme = self.options.tag_scheme or tags.detect_scheme(sentences)
        for index, (sentence, count) in enumerate(zip(sentences, kept)):
            if 0 < count < len(sentence.words):
                closed = tags.close_cut_entities(sentence.tags[:count], scheme,
                                                 cut_before=False, cut_after=True)
                sentences[index] = dataclasses.replace(
                    sentence, tags=tuple(closed) + tuple(sentence.tags[count:]))
        return sentences

    # === Model ===

    def preset_for(self, encoder_preset, head_options):
        head = head_options.get("head", "crf")
        return f"{encoder_preset}_{'crf_' if head == 'crf' else ''}tagger"

    def model_head_options(self, labels):
        return {"num_classes": len(labels), "labels": list(labels),
                "tag_scheme": self.options.tag_scheme,
                "casing_dim": self.casing_dim()}

    def build_model(self, encoder, num_classes=None, head="crf", labels=None, tag_scheme=None,
                    dropout=0.1, casing_dim=0):
        """A `SequenceTagger`; its `subword_aggregation` is this task's option (one source
        for the model and the preprocessor's `word_ends`)."""
        if labels is None and num_classes is None:
            raise ValueError("a tagger needs its tags (labels=...) or num_classes")
        if labels is not None:
            if num_classes not in (None, len(labels)):
                raise ValueError(f"num_classes={num_classes} but {len(labels)} labels were given")
            num_classes = len(labels)
            if head == "crf" and tag_scheme is None:
                tag_scheme = "IOB2"
        return SequenceTagger(encoder, num_classes, head=head, dropout=dropout, labels=labels,
                              tag_scheme=tag_scheme if head == "crf" else None,
                              casing_dim=casing_dim,
                              subword_aggregation=self.options.subword_aggregation,
                              name="tagger")

    def metrics(self, model):
        return [MaskedAccuracy(name="token_accuracy")]  # the tagger computes its own loss

    def monitor(self, num_classes):
        return ("val_entity_f1", "max")

    def build_ensemble(self, models):
        """Softmax heads: mean tag probabilities; CRFs: mean emissions and transitions,
        decoded once (`tasks.tagging.ensemble`)."""
        return TaggerEnsemble(models)

    def evaluate(self, model, dataset, sentences, labels):
        return evaluate_tagger(model, dataset, sentences, labels)

    def describe_predictions(self, model, dataset, sentences, labels, count=4):
        """Each sentence with its gold and its predicted (decoded) entities, in Markdown."""
        features, rows = first_batch(dataset, count)
        if not rows:
            return []
        tag_ids = np.asarray(model.predict_on_batch(features))
        kept = np.asarray(features["word_mask"]).sum(axis=1)
        described = []
        for sentence, row, length in zip(sentences[:rows], tag_ids, kept):
            predicted = [labels[i] for i in row[:length]]
            predicted += ["O"] * (len(sentence.words) - len(predicted))  # cut off: missed
            described.append(entity_comparison(sentence.words, tags.tags_to_spans(sentence.tags),
                                               tags.tags_to_spans(predicted)))
        return described

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        sentences = [readers.TaggedSentence(words, ("O",) * len(words), source, line, document,
                                            text=text)
                     for words, source, line, document, text in read_word_input(
                         path, input_format, self.read)]
        return add_document_context(sentences, self.options.context_sentences)

    def write_predictions(self, model, preprocessor, sentences, labels, output,
                          output_format="auto", batch_size=64):
        """CoNLL (`word tag` lines) or JSONL with the words, tags and entities (word
        offsets, and character offsets for plain-text input). Sentences are batched
        by length (`tasks.words.length_sorting`) and written in input order."""
        preprocessor = self.preprocessor_of(preprocessor)
        windows = self.prediction_examples(sentences, preprocessor)
        # Batched by length (tasks.words.length_sorting): the same tags, less padding.
        predictions = predict_tags_in_length_order(model, preprocessor, windows, labels,
                                                   batch_size)
        as_jsonl = wants_jsonl(output, output_format)
        write_output(output, _tagging_lines(sentences, predictions, as_jsonl))
        return f"{len(sentences)} sentences"

    # === Raw inputs ===

    def raw_examples(self, inputs, targets=None, labels=None):
        """`TaggedSentence`s of word lists or raw strings (split by
        `tasks.words.raw_sentences.split_text`, the string kept for character
        offsets), with tag lists of names or ids (None: all "O"), as one document.

        >>> TaggingTask().raw_examples(["Paris is"], [["B-LOC", "O"]])[0].words
        ('Paris', 'is')
        """
        sentences = raw_sentences(
            inputs, targets, labels,
            lambda words, tags, text: readers.TaggedSentence(words, tags, text=text))
        return add_document_context(sentences, self.options.context_sentences)

    def predict_outputs(self, model, preprocessor, sentences, labels, batch_size=32):
        """The predicted tags of every word, long sentences in windows, batched by length."""
        preprocessor = self.preprocessor_of(preprocessor)
        windows = self.prediction_examples(sentences, preprocessor)
        return predict_tags_in_length_order(model, preprocessor, windows, labels, batch_size)

    def decode_predictions(self, sentences, predictions, labels):
        """`{"words", "tags", "entities"}` per sentence (and `text` for a raw string, whose
        entities then have `start_char`/`end_char`): tools/predict.py's JSONL records."""
        return [_tagging_record(sentence, predicted)
                for sentence, predicted in zip(sentences, predictions)]

    # === Serving ===

    def serving_inputs(self):
        """`text`; with document context also `left_context` and `right_context`."""
        return serving_input_names(self.options.context_sentences)

    def serving_outputs(self, model, preprocessor, labels, text, left_context=None,
                        right_context=None):
        stride = resolve_stride(self.options.stride, preprocessor.max_seq_length)
        return tagging_outputs(model, preprocessor, labels, text, left_context, right_context,
                               stride=stride)


def _tagged_window(sentence, window, left, right, scheme):
    # The window's own tags read as a valid sentence (an entity cut by its edge
    # is closed there), so that a CRF's loss on it is finite; entity scores
    # are still computed on the whole sentences.
    window_tags = tags.close_cut_entities(sentence.tags[window.start:window.end], scheme,
                                          cut_before=window.start > 0,
                                          cut_after=window.end < len(sentence.words))
    return dataclasses.replace(sentence, words=sentence.words[window.start:window.end],
                               tags=tuple(window_tags),
                               word_lines=sentence.word_lines[window.start:window.end],
                               left_context=left, right_context=right, window=window)


def _tagging_lines(sentences, predictions, as_jsonl):
    for sentence, predicted in zip(sentences, predictions):
        if as_jsonl:
            yield json.dumps(_tagging_record(sentence, predicted), ensure_ascii=False) + "\n"
        else:
            yield "".join(f"{word} {tag}\n" for word, tag in zip(sentence.words, predicted)) + "\n"


def _tagging_record(sentence, predicted):
    """A sentence's words, predicted tags and entities (character offsets for raw text)."""
    offsets = word_offsets(sentence)
    entities = [entity_record(sentence, start, end, label, offsets)
                for start, end, label in tags.tags_to_spans(predicted)]
    return sentence_record(sentence, tags=list(predicted), entities=entities)
