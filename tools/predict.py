"""Runs a trained model directory on new text and writes its predictions.

    python tools/predict.py --model_dir=runs/conll --input=sentences.txt --output=tags.conll
    python tools/predict.py --model_dir=runs/conll --input=eng.testb --output=entities.jsonl
    python tools/predict.py --model=runs/conll/best_model.keras --input=eng.testb --output=e.jsonl
    python tools/predict.py --model_dir=runs/seed42,runs/seed43 --input=q.txt --output=q.jsonl
    python tools/predict.py --task=fill_mask --init_checkpoint=bert-base-uncased \
        --input=masked.txt --output=filled.jsonl --top_k=5

Tagging and span NER: the input is raw text, one sentence per line, split into words as BERT
splits text (punctuation and CJK ideographs are words of their own; character offsets into
the line are kept: docs/raw_text.md), or a CoNLL/column file (its tags are ignored). The
output is CoNLL (`word tag` lines, a blank line between sentences) or, for a `.jsonl`
output, one JSON object per sentence with its words, tags and entities (word offsets, `end`
inclusive; span NER adds each entity's score, and nested decoding needs JSONL). Span NER
also reads its JSONL span format as input. Classification: the input is one text per line or
a data file of the model's format; the output is JSONL with the label and the class
probabilities (a regression classifier's: its `score`; a multi-label classifier's: its
`labels`, those at or over their thresholds, and every label's probability). Bi-encoder:
the input is `text<TAB>text_pair` lines or an MRPC/JSONL file; the output is JSONL with the
cosine of the two texts' vectors (and, for the softmax objective, the label, its probability
and every class's).

Fill-mask (`--task=fill_mask`, built on --init_checkpoint, a checkpoint with a masked-LM
head, or on a tools/pretrain.py --model_dir): the input is one text per line (or JSONL with
"text") holding one or more [MASK] tokens; the output is JSONL, per text its `text`, the
`sequence` with each mask's best token, and `masks`: per mask the --top_k tokens, best first,
with their probability (docs/tasks.md#fill-mask). A text without [MASK] is an error, and
nothing is written.

Several models, comma-separated, predict as one ensemble (classification, tagging, span
NER): their probabilities (regression: scores; multi-label: each label's) averaged, decoded
once (`Task.ensemble`; docs/ensembles.md).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.tasks.text.prediction_io import INPUT_FORMATS, OUTPUT_FORMATS  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli import data_flags, trained_model_flags  # noqa: E402

FLAGS = flags.FLAGS
trained_model_flags.define(untrained=True)
flags.DEFINE_string("input", None, "Input file.")
flags.DEFINE_string("output", None, "Output file (written atomically); - for standard "
                    "output.")
flags.DEFINE_enum("input_format", "auto", INPUT_FORMATS,
                  "text: one sentence per line; data: a file in the task's data format "
                  "(CoNLL columns, TREC, MRPC, JSONL); auto: data when the file looks like it "
                  "(word tasks: one token and 2 to 12 columns ending in a tag per line), text "
                  "otherwise (docs/raw_text.md).")
flags.DEFINE_enum("output_format", "auto", OUTPUT_FORMATS,
                  "Tagging output; auto: jsonl for a .jsonl file, CoNLL otherwise.")
flags.DEFINE_integer("batch_size", 64, "Sentences per batch.", lower_bound=1)
flags.DEFINE_boolean("n_best", False, "Question answering: also write each question's n best "
                     "answers (the model's n_best_size), best first, as `n_best`.")
flags.DEFINE_integer("top_k", 5, "Fill-mask: tokens proposed per [MASK], best first.",
                     lower_bound=1)
flags.DEFINE_boolean("allow_continuations", False, "Fill-mask: also propose pieces that only "
                     "continue a word (## pieces; BPE's without Ġ, SentencePiece's without ▁) "
                     "for a mask that starts a word (one glued to the letters before it always "
                     "may take them).")
flags.mark_flags_as_required(["input", "output"])

# The task option each flag above sets, for the tasks that have it.
_OPTION_FLAGS = {"n_best": "write_n_best", "top_k": "top_k",
                 "allow_continuations": "allow_continuations"}


def _with_option_flags(task):
    """`task` with the options of the flags given; a task without the option refuses."""
    for flag, option in _OPTION_FLAGS.items():
        if FLAGS[flag].present:
            if option not in task.option_names():
                raise UserError(f"--{flag}: a {task.name} model has no {option} option")
            task = task.with_options(**{option: FLAGS[flag].value})
    return task


def main(argv):
    trained_model_flags.enable_progress()
    trained = trained_model_flags.load_models()
    task = _with_option_flags(trained.task)
    examples = task.read_prediction_input(FLAGS.input, FLAGS.input_format,
                                          trained.config.get("data_format"),
                                          **data_flags.trained_columns(trained.config))
    try:
        written = task.write_predictions(trained.model, trained.preprocessor, examples,
                                         trained.labels, FLAGS.output, FLAGS.output_format,
                                         FLAGS.batch_size)
    except ValueError as error:
        raise UserError(str(error))
    if FLAGS.output != "-":
        print(f"wrote predictions for {written} to {FLAGS.output}")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
