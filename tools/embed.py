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

Words in context (--words): every word of --input gets its own vector, the
--pooling (mean, max, first or last) of its subwords' vectors at --layer, so
the same word has a different vector in each text. With --query and --word,
each occurrence of --word in the query is looked up among the occurrences of
the same word in --input (its senses; --noany_word) or among every word of
--input (--any_word), and the --top_k nearest are printed in their context:

    python tools/embed.py --init_checkpoint=/path/to/all-MiniLM-L6-v2 --words \
        --input=samples/words_in_context.txt --query="I paid the cheque into the bank" \
        --word=bank --top_k=3

--projector_dir writes the vectors (of texts, or of words with --words) and
their texts for TensorBoard's projector: `tensorboard --logdir <dir>`.

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

import numpy as np  # noqa: E402
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
flags.DEFINE_boolean("words", False, "Embed every word of --input in its context (the "
                     "--pooling of its subwords at --layer: mean, max, first or last) instead "
                     "of whole texts.")
flags.DEFINE_string("word", None, "With --words and --query: the query's word whose "
                    "contextual vector is looked up (each of its occurrences in the query).")
flags.DEFINE_boolean("any_word", False, "With --words: search every word of --input, not "
                     "only the occurrences of --word.")
flags.DEFINE_string("projector_dir", None, "Also write the vectors and their texts to this "
                    "directory for TensorBoard's embedding projector.")
flags.DEFINE_boolean("overwrite", False, "Replace a --projector_dir written by an earlier run.")
flags.mark_flags_as_mutual_exclusive(["input", "corpus"], required=True)
flags.mark_flags_as_mutual_exclusive(["query", "query_file"])


def _check_word_flags():
    """Refuses --word, --any_word and --words without what they need, before any work."""
    querying = FLAGS.query is not None or FLAGS.query_file is not None
    if FLAGS.words and FLAGS.corpus is not None:
        raise UserError("--words embeds the words of --input's texts; --corpus is a retrieval "
                        "corpus of whole documents: give --input")
    if not FLAGS.words:
        for name in ("word", "any_word"):
            if FLAGS[name].present:
                raise UserError(f"--{name} applies to word vectors: add --words")
    elif querying and not (FLAGS.word or "").strip():
        raise UserError("--words with --query needs --word: the word of the query whose "
                        "contextual vector is looked up")
    elif FLAGS.word is not None and not querying:
        raise UserError("--word names a word of --query or --query_file: give one")
    if FLAGS.projector_dir is not None:
        from nlpzoo.tasks.io.ownership import check_replaceable

        try:
            check_replaceable(FLAGS.projector_dir, "--projector_dir", overwrite=FLAGS.overwrite)
        except ValueError as error:
            raise UserError(str(error))


def _check_output():
    """Refuses a bad --output before any work (nothing is written on failure)."""
    _check_word_flags()
    output = FLAGS.output
    if output is None:
        if FLAGS.query is None and FLAGS.query_file is None and FLAGS.projector_dir is None:
            raise UserError("--output is required (a .npy or .jsonl file) unless --query, "
                            "--query_file or --projector_dir is given")
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


def _write_vectors(task, examples, vectors, describe, points, name):
    """--output (JSON lines: `describe(example)` and the vector) and --projector_dir (the
    projector's labels: `points`, {column: one value per example}), for texts or words."""
    if FLAGS.output is not None:
        task.write_embeddings(examples, vectors, FLAGS.output, describe=describe)
        if FLAGS.output != "-":
            print(f"wrote {vectors.shape[0]} {name} of dimension {vectors.shape[1]} "
                  f"to {FLAGS.output}", file=sys.stderr)
    if FLAGS.projector_dir is not None:
        from nlpzoo.tasks.sentence_embedding.projector import write_projector

        write_projector(FLAGS.projector_dir, vectors, list(zip(*points.values())),
                        tuple(points), name=name, overwrite=FLAGS.overwrite,
                        flag="--projector_dir")
        print(f"wrote the projector's files to {FLAGS.projector_dir} (tensorboard --logdir "
              f"{FLAGS.projector_dir}, Projector tab)", file=sys.stderr)


def _where(text):
    """`file:line` of a text read from --input."""
    return f"{text.source}:{text.line}"


def _embed_words(task, source, texts, queries):
    """--words: every word's vector, written, and the nearest occurrences to --word's."""
    from nlpzoo.tasks.sentence_embedding import word_vectors
    from nlpzoo.tasks.words.preprocessor import WordPreprocessor

    try:
        model = word_vectors.ContextualWordEmbedder(source.encoder, layer=FLAGS.layer,
                                                    aggregation=FLAGS.pooling)
    except ValueError as error:
        raise UserError(f"--words: {error}" if "mode" not in str(error) else
                        f"--pooling={FLAGS.pooling}: a word's subwords are pooled by mean, "
                        "max, first or last")
    preprocessor = WordPreprocessor(source.tokenizer, lowercase=source.lowercase,
                                    max_seq_length=source.max_seq_length, word_ends=True)
    print(f"embedding the words of {len(texts)} texts with {source.what} (pooling="
          f"{model.aggregation}, layer={model.layer})", file=sys.stderr, flush=True)
    occurrences, vectors = word_vectors.embed_words(model, preprocessor, texts, FLAGS.batch_size)
    if FLAGS.normalize:
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    _write_vectors(task, occurrences, vectors, lambda occurrence: {
        "text": occurrence.sentence.text, "word": occurrence.word, "index": occurrence.index},
        {"word": [o.word for o in occurrences], "context": [o.in_context() for o in occurrences],
         "source": [_where(o.sentence) for o in occurrences]}, "word vectors")
    if queries is None:
        return
    found, query_vectors = word_vectors.embed_words(model, preprocessor, queries, 1)
    chosen = word_vectors.occurrences_of(found, FLAGS.word)
    if not chosen:
        raise UserError(f"--word={FLAGS.word} is not a word of the query (its words: "
                        f"{', '.join(sorted({o.word for o in found})[:12])})")
    candidates = None if FLAGS.any_word else word_vectors.occurrences_of(occurrences, FLAGS.word)
    indices, scores = word_vectors.nearest_occurrences(query_vectors[chosen], vectors,
                                                       FLAGS.top_k, candidates)
    for query, rows, row_scores in zip([found[i] for i in chosen], indices, scores):
        print(f"query: {query.in_context()}")
        if not len(rows):
            print(f"  no occurrence of {FLAGS.word!r} in {FLAGS.input} (--any_word searches "
                  "every word)")
        for rank, (index, score) in enumerate(zip(rows, row_scores), 1):
            print(f"{rank:>3}  {score:.4f}  {occurrences[index].in_context()}  "
                  f"({_where(occurrences[index].sentence)})")


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
    if FLAGS.words:
        return _embed_words(task, source, texts, queries)
    try:
        model = task.build_model(source.encoder, pooling=FLAGS.pooling,
                                 normalize=FLAGS.normalize, layer=FLAGS.layer)
    except ValueError as error:
        raise UserError(str(error))
    preprocessor = task.make_preprocessor(source.tokenizer, source.lowercase,
                                          source.max_seq_length)
    print(f"embedding {len(texts)} texts with {source.what} (pooling={model.pooling}, "
          f"normalize={model.normalize}, layer={model.layer}, "
          f"max_seq_length={source.max_seq_length})", file=sys.stderr, flush=True)
    embeddings = task.embed(model, preprocessor, texts, FLAGS.batch_size, _progress("texts"))
    _write_vectors(task, texts, embeddings, None, {
        "text": [text.text for text in texts], "source": [_where(text) for text in texts]},
        "embeddings")
    if queries is not None:
        query_embeddings = task.embed(model, preprocessor, queries, FLAGS.batch_size)
        indices, scores = _search(query_embeddings, embeddings)
        _print_matches(queries, texts, indices, scores)


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
