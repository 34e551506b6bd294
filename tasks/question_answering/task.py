"""Extractive question answering (SQuAD v1.1 and v2.0) as a `Task`."""

import dataclasses
import json
import sys

import keras
import numpy as np
from absl import flags

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.modeling.ensemble import Ensemble, mean_log_probabilities
from nlpzoo.tasks.question_answering import readers
from nlpzoo.tasks.question_answering.decoding import (
    best_no_answer_threshold,
    decode_all,
    threshold_table,
)
from nlpzoo.tasks.question_answering.metrics import question_scores, squad_scores
from nlpzoo.tasks.question_answering.model import QuestionAnswerer
from nlpzoo.tasks.question_answering.pipeline import make_dataset, window_logits
from nlpzoo.tasks.question_answering.serving import question_answering_outputs
from nlpzoo.tasks.question_answering.windows import QAWindow, make_windows
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.task import Task
from nlpzoo.tasks.text.prediction_io import looks_like_jsonl, write_output
from nlpzoo.tasks.text.raw_inputs import check_targets
from nlpzoo.tasks.training.tensorboard_examples import label_comparison


@dataclasses.dataclass(frozen=True)
class QuestionAnsweringOptions:
    """max_query_length: the longest question, in tokens (longer ones are cut).
    doc_stride: tokens between the starts of two windows of a long context.
    n_best_size: start and end candidates per window, and answers kept per
    question. max_answer_length: the longest answer, in tokens.
    allow_no_answer: the data has unanswerable questions (SQuAD v2.0; set
    from the training data): the model may answer "". no_answer_threshold:
    how far the no-answer score must beat the best answer's (tuned on the
    validation data after training). write_n_best: predictions written to a
    file list each question's n best answers too (`tools/predict.py --n_best`)."""

    max_query_length: int = 64
    doc_stride: int = 128
    n_best_size: int = 20
    max_answer_length: int = 30
    allow_no_answer: bool = False
    no_answer_threshold: float = 0.0
    write_n_best: bool = False

    def __post_init__(self):
        for name in ("max_query_length", "doc_stride", "n_best_size", "max_answer_length"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@register_task
class QuestionAnsweringTask(Task):
    """Extractive question answering: the answer is a span of the context.

    Data: SQuAD v1.1/v2.0 JSON, or JSONL records `{"id", "question",
    "context", "answers": [{"text", "answer_start"}], "is_impossible"}`
    (`tasks.question_answering.readers`). Each question is packed with its
    context as `[CLS] question [SEP] context [SEP]`, long contexts in
    overlapping windows (`windows`); the model scores every context token as
    the answer's start and end (`QuestionAnswerer`); decoding takes the best
    span over the windows, as exact character offsets of the context
    (`decoding`). Metrics are SQuAD's exact match and F1 (`metrics`), the
    best model the one with the highest validation F1. With unanswerable
    questions in the training data, the no-answer threshold is tuned on the
    validation data after training.

    Examples:
    >>> task = QuestionAnsweringTask()
    >>> task.monitor(num_classes=0), task.serving_inputs()
    (('val_f1', 'max'), ('question', 'context'))
    """

    name = "question_answering"
    pipeline_tag = "question-answering"
    formats = readers.DATA_FORMATS
    Options = QuestionAnsweringOptions
    logged_metrics = ("exact_match", "f1")
    metrics_in_percent = True
    default_max_seq_length = 384  # BERT's SQuAD length: a question and a window of context
    calibration_option = "no_answer_threshold"
    ensemble_free_options = ("n_best_size", "max_answer_length", "no_answer_threshold",
                             "doc_stride", "write_n_best")

    @classmethod
    def define_flags(cls, flag_values):
        flags.DEFINE_integer("max_query_length", 64, "Question answering: the longest "
                             "question, in tokens (longer ones are cut).", lower_bound=1,
                             flag_values=flag_values)
        flags.DEFINE_integer("doc_stride", 128, "Question answering: a context longer than "
                             "the window is read in windows that start this many tokens "
                             "apart.", lower_bound=1, flag_values=flag_values)
        flags.DEFINE_integer("n_best_size", 20, "Question answering: start and end "
                             "candidates per window, and answers kept per question.",
                             lower_bound=1, flag_values=flag_values)
        flags.DEFINE_integer("max_answer_length", 30, "Question answering: the longest "
                             "answer, in tokens.", lower_bound=1, flag_values=flag_values)

    @classmethod
    def options_from_flags(cls, flag_values):
        return ({"max_query_length": flag_values.max_query_length,
                 "doc_stride": flag_values.doc_stride,
                 "n_best_size": flag_values.n_best_size,
                 "max_answer_length": flag_values.max_answer_length}, {})

    # === Data ===

    def read(self, path, data_format=None):
        """The questions of a SQuAD JSON or JSONL file; answers whose text is not in the
        context are reported on standard error (they train nothing)."""
        examples = readers.read_qa_file(path, data_format)
        count, first = readers.unlocated_answers(examples)
        if count:
            print(f"warning: {path}: {count} question(s) have no gold answer found in their "
                  f"context (first: {first.location}); they are scored on their answer "
                  "texts but not trained on", file=sys.stderr)
        return examples

    def adapt(self, examples):
        """Unanswerable questions in the training data allow the answer ""."""
        return self.with_options(allow_no_answer=any(e.is_impossible for e in examples))

    def label_names(self, examples):
        """None: answers are spans, not labels."""
        return []

    def model_head_options(self, labels):
        return {}

    def texts(self, examples):
        contexts = set()
        for example in examples:
            yield example.question
            if example.context not in contexts:
                contexts.add(example.context)
                yield example.context

    def prediction_examples(self, examples, preprocessor):
        """The `QAWindow`s of the questions (each question's windows, in order)."""
        examples = list(examples)
        if examples and isinstance(examples[0], QAWindow):
            return examples
        return make_windows(examples, preprocessor, self.options.max_query_length,
                            self.options.doc_stride)

    def make_dataset(self, examples, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        """Questions (or their windows) → batched features and start/end labels. Training
        leaves out the questions whose gold answer is not in their context."""
        examples = list(examples)
        if training and examples and not isinstance(examples[0], QAWindow):
            examples = [e for e in examples if e.is_impossible or e.located_answer() is not None]
        windows = self.prediction_examples(examples, preprocessor)
        return make_dataset(windows, preprocessor, batch_size=batch_size, training=training,
                            seed=seed)

    # === Model ===

    def preset_for(self, encoder_preset, head_options):
        return f"{encoder_preset}_question_answerer"

    def build_model(self, encoder, dropout=0.1):
        return QuestionAnswerer(encoder, dropout=dropout, name="question_answerer")

    def loss(self):
        # Logits [B, 2, L] against (start, end) [B, 2]: the mean of the two cross-entropies.
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def metrics(self, model):
        return [keras.metrics.SparseCategoricalAccuracy(name="endpoint_accuracy")]

    def monitor(self, num_classes):
        return ("val_f1", "max")

    def build_ensemble(self, models):
        """The mean of the models' start and end probabilities (output as their logarithm),
        decoded once with this task's options."""
        return Ensemble(models, mean_log_probabilities)

    def _decoding_options(self):
        options = self.options
        return dict(n_best_size=options.n_best_size, max_answer_length=options.max_answer_length,
                    allow_no_answer=options.allow_no_answer,
                    no_answer_threshold=options.no_answer_threshold)

    def _decode(self, model, dataset, windows):
        """`(questions, decoded answers)` of the windows (in order) and their dataset."""
        questions = _questions(windows)
        return questions, decode_all(questions, windows, window_logits(model, dataset),
                                     **self._decoding_options())

    def evaluate(self, model, dataset, windows, labels):
        """SQuAD's `exact_match` and `f1` (percent; `HasAns_*`/`NoAns_*` with unanswerable
        questions), and the numbers of questions and windows."""
        questions, decoded = self._decode(model, dataset, windows)
        scores = squad_scores([d.answer for d in decoded], questions)
        return {**scores, "examples": len(questions), "windows": len(windows)}

    def tune_decoding(self, model, dataset, windows, labels):
        """The F1-best no-answer threshold on validation data (SQuAD v2.0 only)."""
        if not self.options.allow_no_answer:
            return {}
        threshold, _, _ = self.calibrate(model, dataset, windows, labels)
        return {"no_answer_threshold": threshold}

    def calibrate(self, model, dataset, windows, labels):
        """`(threshold, F1, table)`: the no-answer threshold that maximises F1 on the
        questions of `windows`, that F1 (percent), and `[threshold, exact match, F1]` rows
        at the F1-best threshold and at 20 quantiles of the questions' margins.

        Raises:
            ValueError: a model trained on answerable questions only (SQuAD v1.1) never
                answers "": there is no threshold to calibrate.
        """
        if not self.options.allow_no_answer:
            raise ValueError("the model was trained on answerable questions only (no "
                             "is_impossible question in its training data), so it never "
                             "answers \"\": it has no no-answer threshold to calibrate")
        questions, decoded = self._decode(model, dataset, windows)

        def exact(answer, example):
            return question_scores(answer, example.answer_texts)[0]

        def f1(answer, example):
            return question_scores(answer, example.answer_texts)[1]

        threshold, best = best_no_answer_threshold(decoded, questions, f1)
        margins = [d.no_answer_margin for d in decoded]
        candidates = sorted({threshold, *np.quantile(margins, np.linspace(0, 1, 20)).tolist()})
        return threshold, 100.0 * best, threshold_table(decoded, questions, exact, f1,
                                                        candidates)

    def describe_predictions(self, model, dataset, windows, labels, count=4):
        """Each of the first questions → its gold answer / the predicted answer."""
        windows = list(windows)
        shown = [w for w in windows if w.example_index < count]
        if not shown:
            return []
        logits = window_logits(model, dataset, limit=len(shown))
        questions = _questions(shown)
        decoded = decode_all(questions, shown, logits, **self._decoding_options())
        return [label_comparison([question.question], " | ".join(question.answer_texts),
                                 answer.answer)
                for question, answer in zip(questions, decoded)]

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        """Questions of a SQuAD JSON file (`.json`), JSON lines, or `question<TAB>context`
        lines; gold answers, when there, are not read."""
        if input_format != "text" and path.lower().endswith(".json"):
            return readers.read_squad_json(path, require_answers=False)
        if input_format != "text" and looks_like_jsonl(path):
            return readers.read_qa_jsonl(path, require_answers=False)
        return readers.read_qa_tsv(path)

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        """JSONL, one record per question in input order: its `id` (when it has one),
        `question`, `answer`, `start_char`, `end_char` (-1 for no answer), `score` (the
        answer's probability) and, with the `write_n_best` option, `n_best` (the
        candidates, best first)."""
        if output_format not in ("auto", "jsonl"):
            raise DataFormatError(f"question answering writes JSONL, not {output_format}")
        decoded = self.predict_outputs(model, preprocessor, examples, labels, batch_size)
        records = self.decode_predictions(examples, decoded, labels)
        if not self.options.write_n_best:
            for record in records:
                del record["n_best"]
        lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in records]
        write_output(output, lines)
        return f"{len(examples)} questions"

    # === Raw inputs ===

    def raw_examples(self, inputs, targets=None, labels=None):
        """`QAExample`s of `(question, context)` pairs; `targets` the answer texts (each
        found in its context: the first occurrence) or None.

        >>> QuestionAnsweringTask().raw_examples([("Who?", "Ann met Bo.")], ["Bo"])[0].answers
        (Answer(text='Bo', start=8),)
        """
        check_targets(inputs, targets)
        examples = []
        for index, item in enumerate(inputs):
            if (not isinstance(item, tuple) or len(item) != 2
                    or not all(isinstance(part, str) for part in item)):
                raise ValueError(f"x[{index}]: a question-answering model reads (question, "
                                 f"context) pairs of strings, got {item!r}")
            question, context = item
            answers = ()
            if targets is not None:
                answer = targets[index]
                if not isinstance(answer, str):
                    raise ValueError(f"y[{index}]: expected the answer text, got {answer!r}")
                start = context.find(answer)
                if start < 0:
                    raise ValueError(f"y[{index}]: the answer {answer!r} is not in the context")
                answers = (readers.Answer(answer, start),)
            examples.append(readers.QAExample(question, context, answers, source="x",
                                              line=index))
        return examples

    def predict_outputs(self, model, preprocessor, examples, labels, batch_size=32):
        """The `Decoded` answer of every question (its windows batched in order)."""
        preprocessor = self.preprocessor_of(preprocessor)
        windows = self.prediction_examples(examples, preprocessor)
        dataset = make_dataset(windows, preprocessor, batch_size=batch_size)
        return decode_all(_questions(windows), windows, window_logits(model, dataset),
                          **self._decoding_options())

    def decode_predictions(self, examples, decoded, labels):
        """`{"id", "question", "answer", "start_char", "end_char", "score", "n_best"}` per
        question (`id` only when it has one)."""
        records = []
        for example, answer in zip(examples, decoded):
            record = {"id": example.id} if example.id is not None else {}
            record.update(question=example.question, answer=answer.answer,
                          start_char=answer.start_char, end_char=answer.end_char,
                          score=answer.probability, n_best=list(answer.n_best))
            records.append(record)
        return records

    # === Serving ===

    def serving_inputs(self):
        return ("question", "context")

    def serving_outputs(self, model, preprocessor, labels, question, context):
        options = self.options
        return question_answering_outputs(
            model, preprocessor, question, context, max_query_length=options.max_query_length,
            doc_stride=options.doc_stride, max_answer_length=options.max_answer_length,
            allow_no_answer=options.allow_no_answer,
            no_answer_threshold=options.no_answer_threshold)


def _questions(windows):
    """The distinct questions of `windows`, in order (each window knows its question)."""
    questions, seen = [], set()
    for window in windows:
        if window.example_index not in seen:
            seen.add(window.example_index)
            questions.append(window.example)
    return questions
