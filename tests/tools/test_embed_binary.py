"""tools/embed.py end to end: embeddings in input order, --query search, one-line errors.

The binary runs as subprocesses, several at once, on a tiny random encoder saved as a
native checkpoint and as the encoder of a `.keras` classifier; their outputs are
checked against the same models run in this process.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.sentence_embedding.task import SentenceEmbeddingTask
from tests.helpers.binaries import finish_processes, start_tool
from tests.helpers.embedding_checks import save_tiny_checkpoint, save_tiny_classifier, trec_texts

TEXTS = trec_texts(40)
QUERY_ROW = 17  # --query is this text, verbatim
QUERY_FILE_ROWS = (3, 25)
QUERY_WORD = "book"  # --words: its uses in TEXTS are looked up from this query's
WORD_QUERY = "Which book did you book for the trip ?"


def _lines(text):
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny checkpoint, a `.keras` classifier on it (and a model directory holding it),
    the texts as plain text and JSONL, queries and a broken JSONL file."""
    base = tmp_path_factory.mktemp("embed")
    checkpoint, encoder, vocabulary = save_tiny_checkpoint(base)
    classifier = save_tiny_classifier(base / "classifier.keras", vocabulary, max_seq_length=32)
    model_dir = base / "model_dir"  # a model directory holding only its best model
    model_dir.mkdir()
    shutil.copy(base / "classifier.keras", model_dir / "best_model.keras")
    paths = {"base": base, "checkpoint": checkpoint, "encoder": encoder,
             "vocabulary": vocabulary, "classifier": classifier, "model_dir": str(model_dir),
             "texts": str(base / "texts.txt"), "jsonl": str(base / "texts.jsonl"),
             "queries": str(base / "queries.jsonl"), "bad": str(base / "bad.jsonl"),
             "missing_dir": str(base / "no" / "such" / "dir" / "e.npy")}
    with open(paths["texts"], "w", encoding="utf-8") as f:
        f.write("".join(f"{text}\n" for text in TEXTS))
    with open(paths["jsonl"], "w", encoding="utf-8") as f:
        f.write("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    with open(paths["queries"], "w", encoding="utf-8") as f:
        f.write("".join(json.dumps({"text": TEXTS[row]}) + "\n" for row in QUERY_FILE_ROWS))
    with open(paths["bad"], "w", encoding="utf-8") as f:
        f.write('{"text": "fine"}\n{"text": "unclosed\n')
    (base / "mine").mkdir()  # a user's folder: never written into
    (base / "mine" / "notes.txt").write_text("mine")
    paths["projector"] = str(base / "projector")
    paths["out"] = {name: str(base / name) for name in (
        "checkpoint.npy", "model.jsonl", "bad_input.npy", "bad_layer.npy", "bad.txt",
        "words.jsonl")}
    return paths


def _run(files, commands):
    """Runs {name: (tool, *flags)} at once; the files, plus `results`: {name: CompletedProcess}."""
    results = finish_processes({name: start_tool(*command)
                                for name, command in commands.items()})
    return dict(files, results=results)


@pytest.fixture(scope="module")
def runs(files):
    """The runs the default test session makes (two start TensorFlow; the rest fail early)."""
    out, checkpoint, texts = files["out"], files["checkpoint"], files["texts"]
    return _run(files, {
        "checkpoint": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={texts}",
                       f"--output={out['checkpoint.npy']}", "--batch_size=8",
                       "--progress_every=2", f"--query={TEXTS[QUERY_ROW]}", "--top_k=3"),
        "model": ("embed.py", f"--model={files['base'] / 'classifier.keras'}",
                  f"--input={files['jsonl']}", f"--output={out['model.jsonl']}",
                  "--pooling=max", "--nonormalize", "--layer=1", "--max_seq_length=16"),
        # Errors found before TensorFlow starts: one line on stderr, exit 1, no output file.
        "bad output": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={texts}",
                       f"--output={out['bad.txt']}"),
        "no output": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={texts}"),
        "missing directory": ("embed.py", f"--init_checkpoint={checkpoint}",
                              f"--input={texts}", f"--output={files['missing_dir']}"),
        "query to stdout": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={texts}",
                            "--output=-", "--query=x"),
        "words": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={texts}", "--words",
                  f"--output={out['words.jsonl']}", f"--projector_dir={files['projector']}",
                  f"--query={WORD_QUERY}", f"--word={QUERY_WORD}", "--top_k=2",
                  "--layer=1", "--pooling=max", "--batch_size=7"),
        "word without words": ("embed.py", f"--init_checkpoint={checkpoint}",
                               f"--input={texts}", "--query=x", "--word=x"),
        "words without word": ("embed.py", f"--init_checkpoint={checkpoint}",
                               f"--input={texts}", "--words", "--query=what is it"),
        "foreign projector": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={texts}",
                              f"--projector_dir={files['base'] / 'mine'}"),
    })


@pytest.fixture(scope="module")
def slow_runs(files):
    """More runs, each starting TensorFlow (for `pytest -m slow`)."""
    out, checkpoint, texts = files["out"], files["checkpoint"], files["texts"]
    return _run(files, {
        "bad input": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={files['bad']}",
                      f"--output={out['bad_input.npy']}"),
        "query_file": ("embed.py", f"--model={files['model_dir']}", f"--input={texts}",
                       f"--query_file={files['queries']}", "--top_k=2"),
        "bad layer": ("embed.py", f"--init_checkpoint={checkpoint}", f"--input={texts}",
                      f"--output={out['bad_layer.npy']}", "--layer=3"),
        "bad checkpoint": ("embed.py", f"--init_checkpoint={files['base'] / 'absent'}",
                           f"--input={texts}", f"--output={out['bad_layer.npy']}"),
        "train refuses": ("train.py", "--task=sentence_embedding", f"--train_data={texts}",
                          f"--eval_data={texts}", f"--model_dir={files['base'] / 'never'}"),
    })


def _ok(runs, name):
    result = runs["results"][name]
    assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"
    return result


def _expected(encoder, vocabulary, max_seq_length, **head):
    task = SentenceEmbeddingTask()
    model = task.build_model(encoder, **head)
    preprocessor = task.make_preprocessor(vocabulary, True, max_seq_length)
    return model.predict_on_batch(preprocessor(tf.constant(TEXTS)))


def test_npy_output_holds_every_text_in_input_order(runs):
    result = _ok(runs, "checkpoint")
    written = np.load(runs["out"]["checkpoint.npy"])
    assert written.shape == (40, 16) and written.dtype == np.float32
    # Default max_seq_length: the checkpoint's 64 positions (no sentence-transformers config).
    expected = _expected(runs["encoder"], runs["vocabulary"], 64)
    np.testing.assert_allclose(written, expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(written, axis=1), 1.0, atol=1e-5)
    progress = [line for line in result.stderr.splitlines() if line.startswith("embedded ")]
    assert progress == ["embedded 16/40 texts (40%)", "embedded 32/40 texts (80%)",
                        "embedded 40/40 texts (100%)"]


def test_query_ranks_its_exact_duplicate_first(runs):
    lines = _lines(_ok(runs, "checkpoint").stdout)
    assert lines[0] == f"query: {TEXTS[QUERY_ROW]}"
    assert len(lines) == 4
    rank, score, rest = lines[1].split(maxsplit=2)
    assert (rank, score) == ("1", "1.0000")
    assert rest == f"{TEXTS[QUERY_ROW]}  ({runs['base'] / 'texts.txt'}:{QUERY_ROW + 1})"
    scores = [float(line.split()[1]) for line in lines[1:]]
    assert scores == sorted(scores, reverse=True) and scores[1] < 1.0


def test_jsonl_output_from_a_trained_models_encoder(runs):
    _ok(runs, "model")
    with open(runs["out"]["model.jsonl"], encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    assert [record["text"] for record in records] == TEXTS
    written = np.array([record["embedding"] for record in records], np.float32)
    expected = _expected(runs["classifier"].get_layer("encoder"), runs["vocabulary"], 16,
                         pooling="max", normalize=False, layer=1)
    np.testing.assert_allclose(written, expected, atol=1e-5)
    assert not np.allclose(np.linalg.norm(written, axis=1), 1.0, atol=1e-3)


@pytest.mark.slow
def test_query_file_searches_with_a_model_directory(slow_runs):
    lines = _lines(_ok(slow_runs, "query_file").stdout)
    assert len(lines) == 2 * 3
    for block, row in enumerate(QUERY_FILE_ROWS):
        assert lines[3 * block] == f"query: {TEXTS[row]}"
        assert lines[3 * block + 1].split(maxsplit=2)[:2] == ["1", "1.0000"]
        assert f"texts.txt:{row + 1})" in lines[3 * block + 1]


def _check_user_error(runs, name, message):
    result = runs["results"][name]
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    expected = "error: " + message.format(base=runs["base"], missing=runs["missing_dir"])
    assert len(errors) == 1 and errors[0].startswith(expected), result.stderr[-2000:]
    for path in runs["out"].values():
        if "bad" in os.path.basename(path):
            assert not os.path.exists(path) and not os.path.exists(path + ".partial")


def test_words_in_context_write_search_and_project(runs):
    from nlpzoo.tasks.text.sentences import Sentence, read_sentences
    from nlpzoo.tasks.sentence_embedding.word_vectors import (
        ContextualWordEmbedder, embed_words, nearest_occurrences, occurrences_of)
    from nlpzoo.tasks.words.preprocessor import WordPreprocessor

    result = _ok(runs, "words")
    model = ContextualWordEmbedder(runs["encoder"], layer=1, aggregation="max")
    preprocessor = WordPreprocessor(runs["vocabulary"], max_seq_length=64, word_ends=True)
    occurrences, vectors = embed_words(model, preprocessor, read_sentences(runs["texts"]))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # --normalize, the default
    with open(runs["out"]["words.jsonl"], encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    assert [(r["text"], r["word"], r["index"]) for r in records] == [
        (o.sentence.text, o.word, o.index) for o in occurrences]
    np.testing.assert_allclose([r["embedding"] for r in records], vectors, atol=1e-5)
    # The query's two uses of the word, each with its two nearest uses in the texts.
    found, query_vectors = embed_words(model, preprocessor, [Sentence(WORD_QUERY)])
    chosen = occurrences_of(found, QUERY_WORD)
    indices, scores = nearest_occurrences(query_vectors[chosen], vectors, 2,
                                          occurrences_of(occurrences, QUERY_WORD))
    expected = []
    for query, rows, row_scores in zip(chosen, indices, scores):
        expected.append(f"query: {found[query].in_context()}")
        expected += [f"{rank:>3}  {score:.4f}  {occurrences[i].in_context()}  "
                     f"({runs['texts']}:{occurrences[i].sentence.line})"
                     for rank, (i, score) in enumerate(zip(rows, row_scores), 1)]
    assert len(chosen) == 2 and _lines(result.stdout) == expected
    # The projector: one row of vectors and one of labels (after the header) per word.
    projector = runs["projector"]
    with open(os.path.join(projector, "metadata.tsv"), encoding="utf-8") as f:
        metadata = f.read().splitlines()
    assert metadata[0] == "word\tcontext\tsource"
    assert [line.split("\t")[0] for line in metadata[1:]] == [o.word for o in occurrences]
    np.testing.assert_allclose(np.loadtxt(os.path.join(projector, "vectors.tsv"),
                                          delimiter="\t"), vectors, atol=1e-5)
    with open(os.path.join(projector, "projector_config.pbtxt"), encoding="utf-8") as f:
        assert 'tensor_path: "vectors.tsv"' in f.read()


@pytest.mark.parametrize("name, message", [
    ("word without words", "--word applies to word vectors: add --words"),
    ("words without word", "--words with --query needs --word"),
    ("foreign projector", "--projector_dir={base}/mine is not empty and was not written by "
                          "nlpzoo"),
    ("bad output", "--output={base}/bad.txt: embeddings are written to a .npy file"),
    ("no output", "--output is required (a .npy or .jsonl file) unless --query"),
    ("missing directory", "--output={missing}: no such directory {base}/no/such/dir"),
    ("query to stdout", "--output=- would mix embeddings with the --query results"),
])
def test_user_errors_are_one_line_and_write_nothing(runs, name, message):
    _check_user_error(runs, name, message)


@pytest.mark.slow
@pytest.mark.parametrize("name, message", [
    ("bad input", "{base}/bad.jsonl:2: not valid JSON"),
    ("bad layer", "layer 3 is out of range: the encoder has hidden states 0 (embeddings) to 2"),
    ("bad checkpoint", "--init_checkpoint={base}/absent: {base}/absent: no such checkpoint "
                       "directory"),
    ("train refuses", "--task=sentence_embedding: this task is not trained: its model works "
                      "on a pretrained encoder as it is"),
])
def test_more_user_errors(slow_runs, name, message):
    _check_user_error(slow_runs, name, message)
    assert not os.path.exists(slow_runs["base"] / "never")
