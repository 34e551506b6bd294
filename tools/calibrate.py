"""Picks the decoding threshold that maximises F1 on validation data (span NER; question
answering trained with unanswerable questions; each label's threshold of a multi-label
classifier).

    python tools/calibrate.py --model_dir=runs/span --data=eng.testa
    python tools/calibrate.py --model_dir=runs/squad2 --data=dev-v2.0.json

Span NER's threshold applies to each span's best non-NONE probability; question
answering's to how far a question's no-answer score beats its best answer's; a multi-label
classifier's `thresholds`, one per label (each the label's F1-best), to each label's
probability. The chosen one is stored in the model directory's config.json and in the task
options that best_model.keras carries (the file is saved again), where evaluate.py,
predict.py and export.py read it. With --model=file.keras instead of
--model_dir, only that file is updated. Prints the chosen threshold and the F1
table as JSON.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_model_flags,
    define_progress_flag,
    define_task_module_flag,
    enable_progress,
    model_source,
)

FLAGS = flags.FLAGS
define_task_module_flag()
define_model_flags(what="a span NER, question-answering or multi-label classification "
                   "model; a --model file is saved again with the chosen threshold")
flags.DEFINE_string("data", None, "Validation data (not the test set).")
flags.DEFINE_string("data_format", None, "Data format; inferred from the file when omitted.")
flags.DEFINE_integer("batch_size", 32, "Sentences per batch.", lower_bound=1)
flags.DEFINE_boolean("dry_run", False, "Print the table without changing config.json or the "
                     "model.")
define_progress_flag()
flags.mark_flags_as_required(["data"])


def main(argv):
    enable_progress()
    trained = md.load_trained(FLAGS.model_dir, FLAGS.model)
    task = trained.task
    if task.calibration_option is None:
        raise UserError(f"{model_source()} holds a {task.name} model; its task has no "
                        "decoding threshold to calibrate")
    sentences = task.prediction_examples(task.read(FLAGS.data, FLAGS.data_format),
                                         trained.preprocessor)
    try:
        dataset = task.make_dataset(sentences, trained.preprocessor, trained.labels,
                                    training=False, batch_size=FLAGS.batch_size)
    except ValueError as error:
        raise UserError(str(error))
    try:
        threshold, score, table = task.calibrate(trained.model, dataset, sentences,
                                                 trained.labels)
    except ValueError as error:
        raise UserError(f"{model_source()}: {error}")
    option, value = task.calibration_option, _plain(threshold)
    if not FLAGS.dry_run:
        md.update_task_options({option: value}, FLAGS.data, trained.model,
                               FLAGS.model_dir, FLAGS.model)
    headline = task.monitor(len(trained.labels))[0].removeprefix("val_")  # span_f1, f1
    print(json.dumps({option: value, headline: score,
                      "table": [[round(float(v), 6) for v in row] for row in table]}))


def _plain(threshold):
    """A threshold (or a multi-label classifier's list of them) as JSON numbers."""
    if isinstance(threshold, (list, tuple)):
        return [float(value) for value in threshold]
    return float(threshold)


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
