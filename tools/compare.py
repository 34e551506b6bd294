r"""Evaluates several trained models on one data file and prints them side by side.

    python tools/compare.py --data=samples/trec/test.label \
        --run=pretrained=demo_runs/trec/pretrained --run=scratch=demo_runs/trec/scratch

Each `--run=NAME=MODEL` names a model directory written by tools/train.py (or
its `.keras` file), or several comma-separated: their ensemble
(`--run=ensemble=runs/s42,runs/s43,runs/s44`, docs/ensembles.md). Every model
is evaluated by its own task on `--data`; the table lists each task's headline
metric (the one that picked its best epoch: accuracy, F1, entity F1, ...) and
the difference to the first run. The last line is one JSON object,
`{"<name>_<metric>": value, ...}`, for scripts.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli import data_flags  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_progress_flag,
    define_task_module_flag,
    enable_progress,
)

FLAGS = flags.FLAGS
define_task_module_flag()
flags.DEFINE_multi_string("run", None, "NAME=MODEL: a name for the table and a model "
                          "directory (or .keras file) written by tools/train.py, or several "
                          "comma-separated for their ensemble; repeatable.")
flags.DEFINE_string("data", None, "Data file to evaluate every model on (read once).")
flags.DEFINE_string("data_format", None, "Data format; inferred from the file when omitted.")
flags.DEFINE_integer("batch_size", 64, "Examples per batch.", lower_bound=1)
define_progress_flag()
flags.mark_flags_as_required(["run", "data"])


def _runs():
    runs = []
    for value in FLAGS.run:
        name, separator, model = value.partition("=")
        if not separator or not name or not model:
            raise UserError(f"--run={value}: expected NAME=MODEL")
        if name in [existing for existing, _ in runs]:
            raise UserError(f"--run={value}: the name {name!r} is given twice")
        runs.append((name, model))
    return runs


def _evaluate(model):
    paths = md.model_list(model)
    if len(paths) > 1:
        trained = md.load_ensemble(paths)
    elif model.endswith(".keras"):
        trained = md.load_trained(model_path=model)
    else:
        trained = md.load_trained(model)
    task = trained.task
    examples = task.prediction_examples(
        task.read(FLAGS.data, FLAGS.data_format or trained.config.get("data_format"),
                  **data_flags.trained_columns(trained.config)),
        trained.preprocessor)
    try:
        dataset = task.make_dataset(examples, trained.preprocessor, trained.labels,
                                    batch_size=FLAGS.batch_size)
    except ValueError as error:
        raise UserError(str(error))
    metrics = task.evaluate(trained.model, dataset, examples, trained.labels)
    headline = task.monitor(len(trained.labels))[0].removeprefix("val_")
    # Points: a percentage's own difference; a fraction's, times 100.
    return headline, {**metrics, "points_per_unit": 1 if task.metrics_in_percent else 100}


def main(argv):
    enable_progress()
    results = [(name, *_evaluate(model)) for name, model in _runs()]
    width = max(len(name) for name, _, _ in results)
    first = results[0][2][results[0][1]]
    summary = {}
    for name, headline, metrics in results:
        value = metrics[headline]
        if value is None:  # undefined (a correlation of constant scores): said, never a number
            print(f"{name:<{width}}  {headline} undefined")
            summary[f"{name}_{headline}"] = None
            continue
        change = ("" if name == results[0][0] or first is None
                  else f"  ({metrics['points_per_unit'] * (value - first):+.1f} points)")
        print(f"{name:<{width}}  {headline} {value:.4f}{change}")
        summary[f"{name}_{headline}"] = round(float(value), 6)
    print(json.dumps(summary, sort_keys=True))


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
