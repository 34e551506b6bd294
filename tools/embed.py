r"""Sentence embeddings of a text file, and similarity search over them.

    python tools/embed.py --init_checkpoint=/path/to/all-MiniLM-L6-v2 \
        --input=sentences.txt --output=embeddings.npy
    python tools/embed.py --model_dir=runs/trec --input=questions.jsonl --output=vectors.jsonl
    python tools/embed.py --init_checkpoint=/path/to/all-MiniLM-L6-v2 \
        --input=sentences.txt --query="How far away is the Moon?" --top_k=3
    python tools/embed.py --model_dir=runs/retriever --corpus=corpus.jsonl \
        --query_file=questions.txt --top_k=10

The encoder comes from --init_checkpoint (any checkpoint format
`zoo.load_encoder` reads: Hugging Face BERT, a sentence-transformers model
such as all-MiniLM-L6-v2, a KerasHub preset, ours) or from a model trained by
tools/train.py (--model_dir, or --model with its .keras file or directory).
Each text's vector is the --pooling (mean by default, as sentence-transformers)
of the --layer's token vectors, L2-normalised unless --nonormalize; see
`tasks.sentence_embedding`.

--input holds one text per line, or JSON lines with a "text" field (blank
lines are skipped). --output is a .npy file (float32 [texts, hidden_dim], rows
in input order) or a .jsonl file (`{"text": ..., "embedding": [...]}` per
line), written atomically: a failed run leaves no file. With --query (or
--query_file, one query per line or JSONL) the --top_k texts of --input most
similar to each query by cosine similarity are printed with their scores;
--output is then optional. Progress goes to standard error.

--corpus (in place of --input) is a retrieval corpus, JSON lines
`{"id": ..., "text": ...}` (docs/retrieval.md): the search prints each
document's id. The search never holds the whole [queries, corpus] similarity
matrix: the corpus is scored --block_size documents at a time, keeping a
running top k per query (`tasks.retrieval.search.block_top_k`; one block, a
brute-force search, for a corpus up to that size; the same ranking either way).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import define_encoder_source_flags, define_pooling_flags  # noqa: E402

# TensorFlow and the model code are imported in `main`, once the flags are checked.

FLAGS = flags.FLAGS
define_encoder_source_flags()
define_pooling_flags()
flags.DEFINE_string("input", None, "Texts to embed: one per line, or JSON lines with a "
                    "\"text\" field.")
flags.DEFINE_string("corpus", None, "In place of --input: a retrieval corpus, JSON lines "
                    "{\"id\", \"text\"}; --query searches it by document id.")
flags.DEFINE_integer("block_size", 8192, "Corpus texts scored at once by --query: a running "
                     "top k over blocks, never the whole similarity matrix.", lower_bound=1)
flags.DEFINE_string("output", None, "Where to write the embeddings: a .npy or .jsonl file "
                    "(- for JSON lines on standard output); optional with --query.")
flags.DEFINE_string("query", None, "Print the --top_k texts of --input most similar to this "
                    "text.")
flags.DEFINE_string("query_file", None, "As --query, for every text of this file (one per "
                    "line, or JSON lines).")
flags.DEFINE_integer("top_k", 5, "How many similar texts --query prints.", lower_bound=1)
flags.DEFINE_integer("batch_size", 64, "Texts per batch.", lower_bound=1)
flags.DEFINE_integer("progress_every", 20, "Print progress to standard error every this many "
                     "batches (0: never).", lower_bound=0)
flags.mark_flags_as_mutual_exclusive(["input", "corpus"], required=True)
flags.mark_flags_as_mutual_exclusive(["query", "query_file"])


def _check_output():
    """Refuses a bad --output before any work (nothing is written on failure)."""
    output = FLAGS.output
    if output is None:
        if FLAGS.query is None and FLAGS.query_file is None:
            raise UserError("--output is required (a .npy or .jsonl file) unless --query or "
                            "--query_file is given")
        return
    if output == "-" and (FLAGS.query is not None or FLAGS.query_file is not None):
        raise UserError("--output=- would mix embeddings with the --query results on standard "
                        "output; write them to a file")
    if output != "-" and not output.endswith((".npy", ".jsonl")):
        raise UserError(f"--output={output}: embeddings are written to a .npy file (float32, "
                        "one row per text) or a .jsonl file (text and embedding per line)")
    parent = os.path.dirname(os.path.abspath(output))
    if output != "-" and not os.path.isdir(parent):
        raise UserError(f"--output={output}: no such directory {parent}")
    if output != "-" and os.path.isdir(output):
        raise UserError(f"--output={output} is a directory")


def _progress(what):
    """`progress(done, total)` printing a line to stderr every --progress_every batches."""
    state = {"batches": 0}

    def progress(done, total):
        state["batches"] += 1
        every = FLAGS.progress_every
        if every and (state["batches"] % every == 0 or done == total):
            print(f"embedded {done}/{total} {what} ({100 * done // total}%)", file=sys.stderr,
                  flush=True)

    return progress


def _print_matches(queries, texts, indices, scores):
    for query, rows, row_scores in zip(queries, indices, scores):
        print(f"query: {query.text}")
        for rank, (index, score) in enumerate(zip(rows, row_scores), 1):
            text = texts[index]
            where = f"id {text.id}" if hasattr(text, "id") else f"{text.source}:{text.line}"
            print(f"{rank:>3}  {score:.4f}  {text.text}  ({where})")


def _texts(task):
    """The texts to embed: --input's, or the documents of --corpus."""
    if FLAGS.corpus is not None:
        from nlpzoo.tasks.retrieval import read_corpus

        return read_corpus(FLAGS.corpus)
    return task.read(FLAGS.input)


def _search(query_embeddings, embeddings):
    """(indices, scores) of the --top_k texts of each query: the block search for a
    --corpus, NumPy's exact brute force for --input."""
    if FLAGS.corpus is not None:
        from nlpzoo.tasks.retrieval import block_top_k

        return block_top_k(query_embeddings, embeddings, FLAGS.top_k, FLAGS.block_size)
    from nlpzoo.tasks.sentence_embedding import top_k

    return top_k(query_embeddings, embeddings, FLAGS.top_k)


def main(argv):
    _check_output()
    from nlpzoo.tasks.sentence_embedding import Sentence
    from nlpzoo.tasks.sentence_embedding.task import SentenceEmbeddingTask
    from nlpzoo.zoo.runs import directory as md

    task = SentenceEmbeddingTask()
    texts = _texts(task)
    queries = None
    if FLAGS.query is not None:
        if not FLAGS.query.strip():
            raise UserError("--query is empty")
        queries = [Sentence(FLAGS.query, "--query", 1)]
    elif FLAGS.query_file is not None:
        queries = task.read(FLAGS.query_file)
    source = md.load_encoder_source(FLAGS.init_checkpoint, FLAGS.model_dir, FLAGS.model,
                                    FLAGS.max_seq_length)
    try:
        model = task.build_model(source.encoder, pooling=FLAGS.pooling,
                                 normalize=FLAGS.normalize, layer=FLAGS.layer)
    except ValueError as error:
        raise UserError(str(error))
    preprocessor = task.make_preprocessor(source.vocabulary, source.lowercase,
                                          source.max_seq_length)
    print(f"embedding {len(texts)} texts with {source.what} (pooling={model.pooling}, "
          f"normalize={model.normalize}, layer={model.layer}, "
          f"max_seq_length={source.max_seq_length})", file=sys.stderr, flush=True)
    embeddings = task.embed(model, preprocessor, texts, FLAGS.batch_size, _progress("texts"))
    if FLAGS.output is not None:
        task.write_embeddings(texts, embeddings, FLAGS.output)
        if FLAGS.output != "-":
            print(f"wrote {embeddings.shape[0]} embeddings of dimension {embeddings.shape[1]} "
                  f"to {FLAGS.output}", file=sys.stderr)
    if queries is not None:
        query_embeddings = task.embed(model, preprocessor, queries, FLAGS.batch_size)
        indices, scores = _search(query_embeddings, embeddings)
        _print_matches(queries, texts, indices, scores)


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
