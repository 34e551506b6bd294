"""Evaluates a trained model directory (or its .keras file) on a data file; prints one JSON line.

    python tools/evaluate.py --model_dir=runs/trec --data=TREC_10.label
    python tools/evaluate.py --model=runs/trec/best_model.keras --data=TREC_10.label
    python tools/evaluate.py --model_dir=runs/trec --data=TREC_10.label --update_card
    python tools/evaluate.py --model_dir=runs/seed42,runs/seed43,runs/seed44 --data=TREC_10.label
    python tools/evaluate.py --model_dir=runs/retriever --data=queries.jsonl --corpus=corpus.jsonl
    python tools/evaluate.py --task=fill_mask --init_checkpoint=bert-base-uncased --data=wiki.txt

With --task=fill_mask, the model of a checkpoint with a masked-LM head (--init_checkpoint,
or a tools/pretrain.py --model_dir) is scored on plain text (one text per line): 15% of the
word pieces of each line replaced by [MASK] (a fixed, seeded masking), and the top-1 and
top-5 accuracy, cross-entropy and perplexity over them (docs/tasks.md#fill-mask).

With --corpus (a model that embeds texts: the bi-encoder), --data holds queries
and the ids of their relevant documents, and the result is retrieval:
MRR@10, Recall@1, Recall@10 and NDCG@10 of a cosine search of each query over
the corpus (formats: docs/retrieval.md).

--update_card records the result in the test section of the directory's model card.
Several models, comma-separated, are evaluated as one ensemble: the mean of
their probabilities (`Task.ensemble`; docs/ensembles.md).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli import data_flags, trained_model_flags  # noqa: E402
from nlpzoo.zoo.runs.model_card import record_test_result  # noqa: E402

FLAGS = flags.FLAGS
trained_model_flags.define(untrained=True)
flags.DEFINE_string("data", None, "Data file to evaluate on.")
flags.DEFINE_string("data_format", None, "Data format; inferred from the file when omitted.")
flags.DEFINE_string("corpus", None, "Retrieval: a JSONL corpus ({\"id\", \"text\"} per line); "
                    "--data is then JSONL queries ({\"query\", \"relevant\": [ids]}) and the "
                    "result MRR@10, Recall@1/10 and NDCG@10.")
flags.DEFINE_integer("batch_size", 64, "Examples per batch.", lower_bound=1)
flags.DEFINE_boolean("update_card", False, "Record these metrics, with the data file's "
                     "line count and SHA-256, the date and this command, in the test section "
                     "of the model directory's card (README.md); the rest of the card is kept.")
flags.mark_flags_as_required(["data"])


def _evaluation(trained):
    """The task's metrics on the labelled --data."""
    task = trained.task
    examples = task.prediction_examples(
        task.read(FLAGS.data, FLAGS.data_format or trained.config.get("data_format"),
                  **data_flags.trained_columns(trained.config)),
        trained.preprocessor)
    try:
        dataset = task.make_dataset(examples, trained.preprocessor, trained.labels,
                                    training=False, batch_size=FLAGS.batch_size)
    except ValueError as error:
        raise UserError(str(error))
    return trained.task.evaluate(trained.model, dataset, examples, trained.labels)


def _retrieval(trained):
    """Retrieval metrics of the --data queries over the --corpus."""
    try:
        return trained.task.evaluate_corpus(trained.model, trained.preprocessor, FLAGS.data,
                                            FLAGS.corpus, FLAGS.batch_size)
    except ValueError as error:  # DataFormatError included: it names the file and line
        raise UserError(str(error))


def main(argv):
    trained_model_flags.enable_progress()
    if FLAGS.update_card and FLAGS.task:
        raise UserError("--update_card: a model built with --task has no model card to update")
    if FLAGS.update_card and len(md.model_list(FLAGS.model_dir or FLAGS.model)) > 1:
        raise UserError("--update_card: an ensemble has no model card of its own; "
                        "evaluate one model to record its result")
    trained = trained_model_flags.load_models()
    task = trained.task
    if not (task.trainable or task.evaluates_without_labels):
        raise UserError(f"a {task.name} model has no labels or loss to evaluate against "
                        "(its task needs no training)")
    if FLAGS.corpus is not None:
        metrics = _retrieval(trained)
    else:
        metrics = _evaluation(trained)
    if FLAGS.update_card:
        model_dir = FLAGS.model_dir or os.path.dirname(os.path.abspath(FLAGS.model))
        if not os.path.exists(md.path(model_dir, md.CONFIG)):
            raise UserError(f"--update_card: {model_dir} is not a model directory (no "
                            f"{md.CONFIG}); its card cannot be updated")
        record_test_result(model_dir, FLAGS.data, metrics, sys.argv, trained.labels)
    print(json.dumps(metrics, sort_keys=True))


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
