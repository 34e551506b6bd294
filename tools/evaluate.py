"""Evaluates a trained model directory (or its .keras file) on a data file; prints one JSON line.

    python tools/evaluate.py --model_dir=runs/trec --data=TREC_10.label
    python tools/evaluate.py --model=runs/trec/best_model.keras --data=TREC_10.label
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import flags  # noqa: E402

from tasks.registry import get_task  # noqa: E402
from tools import model_directory as md  # noqa: E402
from tools.errors import UserError, run  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A model directory written by tools/train.py.")
flags.DEFINE_string("model", None, "Instead of --model_dir: a .keras file written by "
                    "tools/train.py (it carries its vocabulary, labels and task options).")
flags.DEFINE_string("data", None, "Data file to evaluate on.")
flags.DEFINE_string("data_format", None, "Data format; inferred from the file when omitted.")
flags.DEFINE_integer("batch_size", 64, "Examples per batch.", lower_bound=1)
flags.mark_flags_as_required(["data"])
flags.mark_flags_as_mutual_exclusive(["model_dir", "model"], required=True)


def main(argv):
    model, tokenizer, labels, config = md.load_trained(FLAGS.model_dir, FLAGS.model)
    task = get_task(config["task"], **config.get("task_options", {}))
    examples = task.read(FLAGS.data, FLAGS.data_format or config.get("data_format"))
    try:
        dataset = task.make_dataset(examples, tokenizer, labels, training=False,
                                    max_seq_length=config["max_seq_length"],
                                    batch_size=FLAGS.batch_size)
    except ValueError as error:
        raise UserError(str(error))
    metrics = task.evaluate(model, dataset, examples, labels)
    print(json.dumps(metrics, sort_keys=True))


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
