"""Picks the span NER decoding threshold that maximises F1 on validation data.

    python tools/calibrate.py --model_dir=runs/span --data=eng.testa

The threshold applies to each span's best non-NONE probability; the chosen one
is stored in the model directory's config.json and in the task options that
best_model.keras carries (the file is saved again), where evaluate.py,
predict.py and export.py read it. With --model=file.keras instead of
--model_dir, only that file is updated. Prints the chosen threshold and the F1
table as JSON.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import flags  # noqa: E402

from tasks.registry import get_task  # noqa: E402
from tasks.span_ner.evaluation import calibrate  # noqa: E402
from tools import model_directory as md  # noqa: E402
from tools.errors import UserError, run  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A span NER model directory written by tools/train.py.")
flags.DEFINE_string("model", None, "Instead of --model_dir: a span NER .keras file written by "
                    "tools/train.py; it is saved again with the chosen threshold.")
flags.DEFINE_string("data", None, "Validation data (not the test set).")
flags.DEFINE_string("data_format", None, "Data format; inferred from the file when omitted.")
flags.DEFINE_integer("batch_size", 32, "Sentences per batch.", lower_bound=1)
flags.DEFINE_boolean("dry_run", False, "Print the table without changing config.json or the "
                     "model.")
flags.mark_flags_as_required(["data"])
flags.mark_flags_as_mutual_exclusive(["model_dir", "model"], required=True)


def main(argv):
    model, tokenizer, labels, config = md.load_trained(FLAGS.model_dir, FLAGS.model)
    if config["task"] != "span_ner":
        where = f"--model_dir={FLAGS.model_dir}" if FLAGS.model_dir else f"--model={FLAGS.model}"
        raise UserError(f"{where} holds a {config['task']} model; calibration is for span_ner")
    task = get_task("span_ner", **config["task_options"])
    sentences = task.read(FLAGS.data, FLAGS.data_format)
    try:
        dataset = task.make_dataset(sentences, tokenizer, labels, training=False,
                                    max_seq_length=config["max_seq_length"],
                                    batch_size=FLAGS.batch_size)
    except ValueError as error:
        raise UserError(str(error))
    threshold, f1, table = calibrate(model, dataset, sentences, labels, task.max_span_width,
                                     task.decoding, task.flat_method)
    if not FLAGS.dry_run:
        if getattr(model, "task_metadata", None) is not None:
            # The model's own copy of the task options is what loading prefers.
            model.task_metadata["task_options"]["threshold"] = float(threshold)
            model.task_metadata["calibrated_on"] = os.path.abspath(FLAGS.data)
            md.save_model_atomically(model, FLAGS.model or md.path(FLAGS.model_dir, md.BEST_MODEL))
        if FLAGS.model_dir:
            config = md.read_json(md.path(FLAGS.model_dir, md.CONFIG))
            config["task_options"]["threshold"] = float(threshold)
            config["calibrated_on"] = os.path.abspath(FLAGS.data)
            md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    print(json.dumps({"threshold": float(threshold), "span_f1": f1,
                      "table": [[round(float(v), 6) for v in row] for row in table]}))


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
