"""Question → paragraph retrieval on SQuAD: MiniLM out of the box, then after MNRL training.

    .venv/bin/python benchmarks/squad_retrieval.py --out=runs/squad_retrieval

Data: `../shared/data/squad/dev-v1.1.json` split by article as its README
says (`experiment.squad_article_split`): articles 0-33 train, 34-37
validate, 38-47 test.

- Training pairs: (question, the paragraph it was asked on) of articles
  0-33, shuffled with --seed, the first --train_pairs of them.
- Validation pairs: the same of articles 34-37, the first --dev_pairs after
  shuffling; the best epoch is the one with the best validation MRR@10 of
  each question retrieving its paragraph among the validation paragraphs.
- Test: every question of articles 38-47 retrieves its paragraph among all
  paragraphs of articles 38-47 (a corpus file `{"id", "text"}` and a
  queries file `{"query", "relevant": [id]}`: docs/retrieval.md), read once.

The same evaluation (`BiEncoderTask.evaluate_corpus`, what
`tools/evaluate.py --corpus` runs) scores the MiniLM checkpoint as it is
(mean pooling, as sentence-transformers) and the model that
`tools/train.py --task=bi_encoder --objective=multiple_negatives` trains from
it. Prints a Markdown table and one JSON line; results are kept in --out, so
a second start skips what is done.
"""

import json
import os
import random
import sys
import time

from absl import app, flags

from experiment import ROOT, _tool, minilm_checkpoint, squad_article_split

sys.path.insert(0, ROOT)

flags.DEFINE_string("out", None, "Output directory.")
flags.DEFINE_string("data", os.path.join(ROOT, "..", "shared", "data"),
                    "The shared data folder (squad/).")
flags.DEFINE_integer("train_pairs", 2000, "Training pairs (question, paragraph).",
                     lower_bound=2)
flags.DEFINE_integer("dev_pairs", 300, "Validation pairs.", lower_bound=2)
flags.DEFINE_integer("max_seq_length", 256, "Longest packed text (paragraphs are cut there).",
                     lower_bound=8)
flags.DEFINE_integer("batch_size", 32, "Pairs per batch: each question's in-batch negatives "
                     "are the other 31 paragraphs.", lower_bound=2)
flags.DEFINE_integer("epochs", 1, "Training epochs.", lower_bound=1)
flags.DEFINE_float("learning_rate", 2e-5, "Peak learning rate (sentence-transformers' default).")
flags.DEFINE_integer("seed", 42, "Pair sample and training seed.")
flags.DEFINE_integer("test_queries", None, "Test on the first this many questions only "
                     "(a quick check; all of them when omitted).", lower_bound=1)
flags.mark_flag_as_required("out")
FLAGS = flags.FLAGS


def _articles(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["data"]


def question_paragraph_pairs(articles):
    """(question, paragraph) of every question of `articles`, in file order."""
    return [(qa["question"].strip(), paragraph["context"])
            for article in articles for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


def write_pairs(path, pairs):
    with open(path, "w", encoding="utf-8") as f:
        for question, paragraph in pairs:
            f.write(json.dumps({"text": question, "text_pair": paragraph},
                               ensure_ascii=False) + "\n")


def write_retrieval_test(directory, articles, limit=None):
    """(queries file, corpus file) of `articles`: every paragraph a document, every
    question a query whose relevant document is its paragraph."""
    corpus, queries = os.path.join(directory, "corpus.jsonl"), os.path.join(directory,
                                                                             "queries.jsonl")
    with open(corpus, "w", encoding="utf-8") as documents, \
            open(queries, "w", encoding="utf-8") as questions:
        count = 0
        for a, article in enumerate(articles):
            for p, paragraph in enumerate(article["paragraphs"]):
                document_id = f"{a}-{p}"
                documents.write(json.dumps({"id": document_id, "text": paragraph["context"]},
                                           ensure_ascii=False) + "\n")
                for qa in paragraph["qas"]:
                    if limit is None or count < limit:
                        questions.write(json.dumps({"query": qa["question"].strip(),
                                                    "relevant": [document_id]},
                                                   ensure_ascii=False) + "\n")
                    count += 1
    return queries, corpus


def out_of_the_box(queries, corpus):
    """Retrieval metrics of the MiniLM checkpoint as it is (mean pooling)."""
    from nlpzoo.tasks.registry import get_task
    from nlpzoo.zoo.runs import directory as md

    source = md.load_encoder_source(minilm_checkpoint(), None, None, FLAGS.max_seq_length)
    task = get_task("bi_encoder", objective="multiple_negatives")
    model = task.build_model(source.encoder)
    preprocessor = task.make_preprocessor(source.vocabulary, source.lowercase,
                                          FLAGS.max_seq_length)
    return task.evaluate_corpus(model, preprocessor, queries, corpus)


def trained(run, queries, corpus):
    from nlpzoo.zoo.runs import directory as md

    model = md.load_trained(model_dir=run)
    return model.task.evaluate_corpus(model.model, model.preprocessor, queries, corpus)


def _kept(path, compute):
    """`compute()`'s result, kept in `path` (JSON) so a second start reuses it."""
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    start = time.monotonic()
    result = compute()
    result["seconds"] = round(time.monotonic() - start)
    with open(path, "w") as f:
        json.dump(result, f)
    return result


def main(argv):
    os.makedirs(FLAGS.out, exist_ok=True)
    train_json, dev_json, test_json = squad_article_split(FLAGS.data, FLAGS.out)
    shuffle = random.Random(FLAGS.seed)
    train_pairs = question_paragraph_pairs(_articles(train_json))
    dev_pairs = question_paragraph_pairs(_articles(dev_json))
    shuffle.shuffle(train_pairs)
    shuffle.shuffle(dev_pairs)
    train, dev = os.path.join(FLAGS.out, "train.jsonl"), os.path.join(FLAGS.out, "dev.jsonl")
    write_pairs(train, train_pairs[:FLAGS.train_pairs])
    write_pairs(dev, dev_pairs[:FLAGS.dev_pairs])
    queries, corpus = write_retrieval_test(FLAGS.out, _articles(test_json), FLAGS.test_queries)

    baseline = _kept(os.path.join(FLAGS.out, "minilm.json"),
                     lambda: out_of_the_box(queries, corpus))
    run = os.path.join(FLAGS.out, "mnrl")

    def train_and_test():
        start = time.monotonic()
        _tool("train.py", ["--task=bi_encoder", "--objective=multiple_negatives",
                           f"--init_checkpoint={minilm_checkpoint()}", f"--train_data={train}",
                           f"--eval_data={dev}", f"--max_seq_length={FLAGS.max_seq_length}",
                           f"--batch_size={FLAGS.batch_size}", f"--epochs={FLAGS.epochs}",
                           f"--learning_rate={FLAGS.learning_rate}", f"--seed={FLAGS.seed}",
                           f"--model_dir={run}", "--overwrite"], run + ".log")
        result = trained(run, queries, corpus)
        result["training_seconds"] = round(time.monotonic() - start)
        return result

    after = _kept(run + ".json", train_and_test)
    print(f"| model | MRR@10 | Recall@1 | Recall@10 | NDCG@10 |\n|---|---|---|---|---|")
    for name, scores in (("MiniLM out of the box", baseline),
                         (f"+ MNRL ({min(FLAGS.train_pairs, len(train_pairs))} pairs, "
                          f"{FLAGS.epochs} epoch)", after)):
        print(f"| {name} | {scores['mrr_at_10']:.4f} | {scores['recall_at_1']:.4f} | "
              f"{scores['recall_at_10']:.4f} | {scores['ndcg_at_10']:.4f} |")
    print(json.dumps({"minilm": baseline, "mnrl": after, "queries": baseline["queries"],
                      "documents": baseline["documents"]}, sort_keys=True))


if __name__ == "__main__":
    app.run(main)
