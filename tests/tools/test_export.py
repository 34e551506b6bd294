"""Self-contained .keras files and tools/export.py SavedModels, end to end.

The binaries run as subprocesses, several at a time (the slow part is each
process starting TensorFlow and tracing its functions), on the models that
tools/train.py trained once for the session (tests/conftest.py). Saved files are loaded
in fresh processes: a `.keras` file with only `import zoo` done, a SavedModel
with only TensorFlow and tensorflow-text (whose ops the in-graph tokenizer uses).
"""

import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.span_ner.serving import span_ner_outputs
from nlpzoo.tasks.tagging.serving import tagging_outputs
from nlpzoo.tasks.words.preprocessor import WordPreprocessor
from nlpzoo.tasks.span_ner.decoding import decode_flat, decode_nested
from nlpzoo.tasks.tagging import tags_to_spans
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from nlpzoo.tasks.text.word_splitting import split_words
from tests.helpers.binaries import finish_processes, run_tools, start_python, start_tool
from tests.helpers.paths import CONLL
from tests.helpers.trained_models import TRAINED_MAX_SEQ_LENGTH as MAX_SEQ_LENGTH
from nlpzoo.zoo.runs import directory as md
from nlpzoo.zoo import build_model

CLASSIFICATION_TEXTS = [
    "How much does a poodle weigh ?",
    "What  is\tthe capital of Café\u00a0Crème ?",
    "Who wrote Hamlet ?",
    " ".join(["Which European country exported the most lamb to Brussels in 1996 ?"] * 4),
]
WORD_SENTENCES = [
    "EU rejects German call to boycott British lamb .",
    "Peter  Blackburn",
    "BRUSSELS\t1996-08-22",
    "Café\u00a0Straße in Köln said Peter Blackburn",
    # Raw text: punctuation is split off words as BERT does, offsets index the line as given.
    "He flew to Paris, France, on Monday.",
    # Longer than max_seq_length: read in windows (tasks.word_windows), every word tagged.
    " ".join(["The European Commission said on Thursday it disagreed with German advice ."] * 3),
    # 1,000 words, an entity in the last ones.
    " ".join(["The European Commission said on Thursday it disagreed with German advice ."]
             * 83 + ["Peter Blackburn visited London"]),
]

# A fresh process that knows nothing of this project: TensorFlow and tensorflow-text only.
_SERVE_SNIPPET = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the graph uses)

def plain(value):
    if value.dtype == tf.string:
        return tf.nest.map_structure(bytes.decode, value.numpy().tolist())
    return value.numpy().tolist()

results = {}
for path, sentences in json.load(open(sys.argv[1])).items():
    serve = tf.saved_model.load(path).signatures["serving_default"]
    results[path] = {name: plain(value)
                     for name, value in serve(tf.constant(sentences)).items()}
json.dump(results, open(sys.argv[2], "w"))
"""

# A fresh process in which only `import zoo` registers our classes.
_KERAS_SNIPPET = """
import json, sys
import keras
import numpy as np
import nlpzoo.zoo  # noqa: F401  (registers the nlpzoo classes)

results = {}
for path, features in json.load(open(sys.argv[1])).items():
    model = keras.saving.load_model(path)  # no custom_objects, safe_mode on
    preprocessor = model.preprocessor
    results[path] = {"class": type(model).__name__, "metadata": model.task_metadata,
                     "vocabulary": list(preprocessor.vocabulary),
                     "lowercase": preprocessor.lowercase,
                     "max_seq_length": preprocessor.max_seq_length}
    if features:
        inputs = dict(np.load(features))
        np.save(features + ".after.npy", np.asarray(model.predict_on_batch(inputs)))
json.dump(results, open(sys.argv[2], "w"))
"""


def _check(results):
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# ---------------------------------------------------------------------------------------------
# Export and predict with the binaries (once for the module)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory, trained_classifier_dir, trained_tagger_dir, trained_span_ner_dir):
    base = tmp_path_factory.mktemp("export")
    dirs = {"classification": trained_classifier_dir, "tagging": trained_tagger_dir,
            "span_ner": trained_span_ner_dir}  # the session's shared models: read only
    tiny = _save_tiny_models(base / "tiny")

    # The .keras files alone, with nothing beside them.
    alone = {}
    for task, model_dir in dirs.items():
        os.makedirs(str(base / "alone" / task))
        alone[task] = str(base / "alone" / task / "model.keras")
        shutil.copy(md.path(model_dir, md.BEST_MODEL), alone[task])
    exports = {task: str(base / "exported" / task) for task in dirs}
    # An existing empty directory: replaced, but only with --overwrite.
    os.makedirs(exports["classification"])
    inputs = {"classification": str(base / "texts.txt"), "tagging": str(base / "sentences.txt")}
    inputs["span_ner"] = inputs["tagging"]
    with open(inputs["classification"], "w", encoding="utf-8") as f:
        f.write("".join(text + "\n" for text in CLASSIFICATION_TEXTS))
    with open(inputs["tagging"], "w", encoding="utf-8") as f:
        f.write("".join(sentence + "\n" for sentence in WORD_SENTENCES))
    predictions = {task: str(base / f"{task}.jsonl") for task in dirs}
    keras_request, keras_report = str(base / "keras_request.json"), str(base / "keras.json")
    with open(keras_request, "w") as f:
        json.dump({**{path: None for path in alone.values()},
                   **{path: features for path, (features, _) in tiny.items()}}, f)
    source = {"classification": ["--model_dir", dirs["classification"]],
              "tagging": ["--model", alone["tagging"]],
              "span_ner": ["--model", alone["span_ner"]]}
    processes = {
        f"export {task}": start_tool("export.py", *source[task], "--output", exports[task],
                                     "--overwrite")
        for task in dirs
    }
    processes.update({
        f"predict {task}": start_tool("predict.py", *source[task], "--input", inputs[task],
                                      "--output", predictions[task], "--input_format=text")
        for task in dirs
    })
    processes["evaluate tagging --model"] = start_tool(
        "evaluate.py", "--model", alone["tagging"], "--data", os.path.join(CONLL, "dev.txt"))
    processes["load .keras"] = start_python("-c", _KERAS_SNIPPET, keras_request, keras_report)
    results = finish_processes(processes)
    _check(results)

    serve_request, serve_report = str(base / "serve_request.json"), str(base / "serve.json")
    with open(serve_request, "w") as f:
        json.dump({exports["classification"]: CLASSIFICATION_TEXTS,
                   exports["tagging"]: WORD_SENTENCES, exports["span_ner"]: WORD_SENTENCES}, f)
    _check(finish_processes({"serve": start_python("-c", _SERVE_SNIPPET, serve_request,
                                                   serve_report)}))
    with open(serve_report) as f:
        served = json.load(f)
    with open(keras_report) as f:
        loaded = json.load(f)
    return {
        "base": base, "dirs": dirs, "alone": alone, "exports": exports, "results": results,
        "predictions": {task: _jsonl(path) for task, path in predictions.items()},
        "served": {task: served[exports[task]] for task in dirs},
        "loaded": {task: loaded[alone[task]] for task in dirs},
        "tiny": {path: (before, loaded[path]) for path, (_, before) in tiny.items()},
    }


def test_keras_file_alone_carries_labels_vocabulary_and_options(runs):
    for task, model_dir in runs["dirs"].items():
        loaded = runs["loaded"][task]
        config = md.read_json(md.path(model_dir, md.CONFIG))
        metadata = loaded["metadata"]
        assert metadata["task"] == task
        assert metadata["labels"] == md.read_json(md.path(model_dir, md.LABELS))
        assert metadata["task_options"] == config["task_options"]
        assert metadata["task_options"].get("tag_scheme") == config["tag_scheme"]
        assert loaded["vocabulary"] == md.load_vocabulary(model_dir)
        assert loaded["lowercase"] == config["lowercase"]
        assert loaded["max_seq_length"] == MAX_SEQ_LENGTH
    assert runs["loaded"]["classification"]["class"] == "Classifier"
    assert runs["loaded"]["span_ner"]["metadata"]["task_options"]["flat_method"] == "exact"


def test_evaluate_with_only_the_keras_file(runs):
    result = runs["results"]["evaluate tagging --model"]
    metrics = json.loads([l for l in result.stdout.splitlines() if l.startswith("{")][0])
    stored = md.read_json(md.path(runs["dirs"]["tagging"], md.METRICS))
    assert metrics["entity_f1"] == pytest.approx(stored["entity_f1"], abs=1e-9)
    assert metrics["token_accuracy"] == pytest.approx(stored["token_accuracy"], abs=1e-9)


def test_exported_classifier_matches_predict(runs):
    served, predicted = runs["served"]["classification"], runs["predictions"]["classification"]
    labels = runs["loaded"]["classification"]["metadata"]["labels"]
    assert [record["text"] for record in predicted] == CLASSIFICATION_TEXTS
    assert served["label"] == [record["label"] for record in predicted]
    assert served["label_id"] == [labels.index(record["label"]) for record in predicted]
    expected = [[record["probabilities"][label] for label in labels] for record in predicted]
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    np.testing.assert_allclose(np.sum(served["probabilities"], axis=1), 1.0, atol=1e-5)


def _words(text):
    return [word for word, _, _ in split_words(text)]


def _served_entities(served, row, with_score=False):
    entities = []
    for i in range(served["num_entities"][row]):
        entity = (served["entity_start"][row][i], served["entity_end"][row][i],
                  served["entity_label"][row][i])
        entities.append(entity + (served["entity_score"][row][i],) if with_score else entity)
    return entities


def test_exported_crf_tagger_matches_predict(runs):
    served, predicted = runs["served"]["tagging"], runs["predictions"]["tagging"]
    assert len(predicted) == len(WORD_SENTENCES)
    for row, record in enumerate(predicted):
        count = served["num_words"][row]
        assert served["words"][row][:count] == record["words"] == _words(WORD_SENTENCES[row])
        assert served["tags"][row][:count] == record["tags"]
        assert "" not in record["tags"]
        assert _served_entities(served, row) == [
            (e["start"], e["end"], e["label"]) for e in record["entities"]]
        # Character offsets into the line as given, in both.
        text = WORD_SENTENCES[row]
        for k, entity in enumerate(record["entities"]):
            assert (served["entity_start_char"][row][k], served["entity_end_char"][row][k]) \
                == (entity["start_char"], entity["end_char"])
            assert text[entity["start_char"]:entity["end_char"]] == entity["text"]
    assert len(predicted[-1]["tags"]) == 1000


@pytest.mark.parametrize("task", ["tagging", "span_ner"])
def test_exported_word_models_split_raw_text_as_predict(runs, task):
    served, predicted = runs["served"][task], runs["predictions"][task]
    row = WORD_SENTENCES.index("He flew to Paris, France, on Monday.")
    assert predicted[row]["words"] == ["He", "flew", "to", "Paris", ",", "France", ",", "on",
                                       "Monday", "."]
    for row, text in enumerate(WORD_SENTENCES):
        count = served["num_words"][row]
        offsets = list(zip(served["word_start_char"][row][:count],
                           served["word_end_char"][row][:count]))
        assert offsets == [(start, end) for _, start, end in split_words(text)]
        assert [text[start:end] for start, end in offsets] == served["words"][row][:count]
        for entity in predicted[row]["entities"]:  # whatever the tiny model finds
            assert text[entity["start_char"]:entity["end_char"]] == entity["text"]


def test_exported_span_ner_matches_predict(runs):
    served, predicted = runs["served"]["span_ner"], runs["predictions"]["span_ner"]
    assert len(predicted) == len(WORD_SENTENCES)
    for row, record in enumerate(predicted):
        count = served["num_words"][row]
        assert served["words"][row][:count] == record["words"] == _words(WORD_SENTENCES[row])
        entities = _served_entities(served, row, with_score=True)
        assert [e[:3] for e in entities] == [
            (e["start"], e["end"], e["label"]) for e in record["entities"]]
        np.testing.assert_allclose([e[3] for e in entities],
                                   [e["score"] for e in record["entities"]], atol=1e-5)


def test_export_refuses_existing_output_and_bad_model_dir(runs, tmp_path):
    existing = runs["exports"]["tagging"]
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("kept")
    missing = str(tmp_path / "no_such_model")
    cases = {
        "existing export": (["--model_dir", runs["dirs"]["tagging"], "--output", existing],
                            f"error: --output={existing} already exists; pass --overwrite"),
        "foreign directory": (["--model_dir", runs["dirs"]["tagging"], "--output", str(foreign),
                               "--overwrite"],
                              f"error: --output={foreign} is not empty and was not written by "
                              "nlpzoo (it holds mine.txt)"),
        "missing model_dir": (["--model_dir", missing, "--output", str(tmp_path / "out")],
                              f"error: --model_dir={missing}: no such directory"),
    }
    results = run_tools({name: ("export.py", *flags) for name, (flags, _) in cases.items()})
    for name, (_, message) in cases.items():
        result = results[name]
        assert result.returncode == 1, result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and errors[0].startswith(message), result.stderr[-2000:]
    assert os.path.exists(os.path.join(existing, "saved_model.pb"))
    assert (foreign / "mine.txt").read_text() == "kept"
    assert not os.path.exists(tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# Saving and loading in-process models (no training)
# ---------------------------------------------------------------------------------------------

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "##x", "café"]


def _tiny_models():
    common = dict(vocabulary_size=len(VOCABULARY), num_layers=1, hidden_dim=16, num_heads=2,
                  intermediate_dim=32, compile=False)
    classifier = build_model("bert_tiny_classifier", num_classes=3, **common)
    classifier.attach_metadata(vocabulary=VOCABULARY, lowercase=True, max_seq_length=16,
                               task="classification", labels=["x", "y", "z"])
    tags = ["O", "B-PER", "I-PER"]
    tagger = build_model("bert_tiny_crf_tagger", labels=tags, tag_scheme="IOB2", **common)
    tagger.attach_metadata(vocabulary=VOCABULARY, lowercase=False, max_seq_length=24,
                           task="tagging", labels=tags, tag_scheme="IOB2")
    span = build_model("bert_tiny_span_ner", num_classes=2, max_span_width=2,
                       span_hidden_dim=8, width_embedding_dim=4, **common)
    span.attach_metadata(vocabulary=VOCABULARY, lowercase=True, max_seq_length=16,
                         task="span_ner", labels=["NONE", "PER"],
                         task_options={"max_span_width": 2, "decoding": "nested",
                                       "flat_method": "greedy", "threshold": 0.25})
    return {"classification": classifier, "tagging": tagger, "span_ner": span}


def _save_tiny_models(directory):
    """Saves the tiny models and their inputs; {path: (features path, predictions)}."""
    os.makedirs(directory)
    rng = np.random.default_rng(0)
    features = {"token_ids": rng.integers(5, len(VOCABULARY), (3, 8)).astype("int32"),
                "segment_ids": np.zeros((3, 8), "int32"),
                "padding_mask": np.array([[1] * 8, [1] * 5 + [0] * 3, [1] * 3 + [0] * 5],
                                         "int32"),
                "word_starts": np.array([[1, 2, 4, 5, 0, 0, 0, 0]] * 3, "int32"),
                "word_mask": np.array([[1] * 4 + [0] * 4, [1, 1, 1, 0, 0, 0, 0, 0],
                                       [1, 0, 0, 0, 0, 0, 0, 0]], "int32")}
    saved = {}
    for task, model in _tiny_models().items():
        inputs = features if task != "classification" else {
            name: features[name] for name in ("token_ids", "segment_ids", "padding_mask")}
        path = os.path.join(directory, f"{task}.keras")
        before = np.asarray(model.predict_on_batch(inputs))
        model.save(path)
        np.savez(path + ".npz", **inputs)
        saved[path] = (path + ".npz", before)
    return saved


def test_saved_models_restore_metadata_and_predictions_in_a_fresh_process(runs):
    """Models saved here, loaded in a fresh process with only `import zoo`."""
    tiny = {os.path.basename(path): (path, before, report)
            for path, (before, report) in runs["tiny"].items()}
    for path, before, report in tiny.values():
        np.testing.assert_array_equal(np.load(path + ".npz.after.npy"), before)
        assert report["vocabulary"] == VOCABULARY
    _, _, classifier = tiny["classification.keras"]
    assert classifier["class"] == "Classifier" and classifier["lowercase"] is True
    assert classifier["metadata"]["labels"] == ["x", "y", "z"]
    _, _, tagging = tiny["tagging.keras"]
    assert tagging["class"] == "SequenceTagger" and tagging["lowercase"] is False
    assert tagging["max_seq_length"] == 24
    assert tagging["metadata"] == {"task": "tagging", "labels": ["O", "B-PER", "I-PER"],
                                   "task_options": {}, "tag_scheme": "IOB2"}
    _, _, span = tiny["span_ner.keras"]
    assert span["class"] == "SpanNER"
    assert span["metadata"]["task_options"]["threshold"] == 0.25


def test_old_model_directories_still_load(tmp_path):
    model = build_model("bert_tiny_classifier", num_classes=2, vocabulary_size=len(VOCABULARY),
                        num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32,
                        compile=False)
    model.save(md.path(str(tmp_path), md.BEST_MODEL))  # no metadata: files beside it
    md.write_json({"task": "classification", "lowercase": False, "max_seq_length": 16},
                  md.path(str(tmp_path), md.CONFIG))
    md.save_vocabulary(str(tmp_path), VOCABULARY)
    md.write_json(["no", "yes"], md.path(str(tmp_path), md.LABELS))
    trained = md.load_trained(str(tmp_path))
    tokenizer = trained.preprocessor.tokenizer()
    assert trained.labels == ["no", "yes"] and tokenizer.vocabulary == VOCABULARY
    assert tokenizer.lowercase is False
    # load_trained gives the model the metadata of the files beside it: it reads raw text.
    assert trained.model.task_metadata["labels"] == ["no", "yes"]
    assert trained.model.preprocessor is not None
    assert trained.task.name == "classification" and trained.preprocessor.max_seq_length == 16
    with pytest.raises(md.RunDirectoryError, match="holds no vocabulary and labels"):
        md.load_trained(model_path=md.path(str(tmp_path), md.BEST_MODEL))
    with pytest.raises(md.RunDirectoryError, match="cannot load"):
        (tmp_path / "broken.keras").write_text("not a zip")
        md.load_trained(model_path=str(tmp_path / "broken.keras"))
    with pytest.raises(md.RunDirectoryError, match="no such file"):
        md.load_trained(model_path=str(tmp_path / "missing.keras"))


# ---------------------------------------------------------------------------------------------
# The in-graph word splitting and decoding against the Python code predict.py uses
# ---------------------------------------------------------------------------------------------


class _FakeTagger:
    """Decodes to given random tag ids: tests the graph around the model.

    The ids live in a variable, so one traced function serves every draw.
    """

    def __init__(self):
        self.tags = tf.Variable(tf.zeros([8, 64], tf.int32))

    def draw(self, num_tags, seed):
        tags = np.random.default_rng(seed).integers(0, num_tags, (8, 64)).astype("int32")
        self.tags.assign(tags)
        return tags

    def decode(self, features):
        mask = features["word_mask"]
        return self.tags[:tf.shape(mask)[0], :tf.shape(mask)[1]] * mask


class _FakeSpanModel:
    """Given small-integer logits, so that scores tie often (in a variable, as above)."""

    max_span_width = 3

    def __init__(self, num_labels):
        self.logits = tf.Variable(tf.zeros([8, 64 * 3, num_labels]))

    def draw(self, seed):
        logits = np.random.default_rng(seed).integers(-2, 3, self.logits.shape)
        self.logits.assign(logits.astype("float32"))
        return logits.astype("float32")

    def __call__(self, features, training=False):
        mask = features["word_mask"]
        return self.logits[:tf.shape(mask)[0], :tf.shape(mask)[1] * 3]


_FAKE_TOKENIZER_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "##x"]


def _random_sentences(seed):
    rng = np.random.default_rng(seed)
    # With max_seq_length 16, sentences of 12 and 20 words lose their last words.
    sentences = [" ".join(rng.choice(["a", "b", "cx", "bxx", "q"], n)) for n in (1, 3, 7, 12, 20)]
    return sentences + ["", " a\u00a0b\tc  "]


def _check_empty_batches(serve):
    """No sentence, or only empty ones: well-formed outputs, no word, no entity."""
    for batch in ([], [""], ["", " \t "]):
        served = serve(tf.constant(batch, tf.string))
        assert served["num_words"].numpy().tolist() == [0] * len(batch)
        assert served["num_entities"].numpy().tolist() == [0] * len(batch)
        assert served["words"].shape == (len(batch), 0)
        assert served["entity_label"].shape == (len(batch), 0)


def _model_rows(sentences):
    """The row of the fake models' output each sentence reads: the exported graph runs
    the model on windows, none for a sentence without words, one for each of these
    sentences (they fit in 64 subwords; windows are tested in test_word_windows.py)."""
    return np.cumsum([bool(sentence.split()) for sentence in sentences]) - 1


def test_tagging_graph_matches_python_tags_and_entities():
    tokenizer = WordPieceTokenizer(_FAKE_TOKENIZER_VOCABULARY)
    labels = ["O", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-PER", "I-PER", "E-PER", "S-PER"]
    sentences = _random_sentences(1)
    rows = _model_rows(sentences)
    model = _FakeTagger()
    preprocessor = WordPreprocessor(tokenizer, max_seq_length=64)
    serve = tf.function(lambda text: tagging_outputs(model, preprocessor, labels, text),
                        input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    for seed in range(4):
        drawn = model.draw(len(labels), seed)
        served = {name: value.numpy().tolist() for name, value in
                  serve(tf.constant(sentences)).items()}
        for row, sentence in enumerate(sentences):
            words = sentence.split()
            tags = [labels[i] for i in drawn[rows[row], :len(words)]]
            assert served["num_words"][row] == len(words)
            assert [t.decode() for t in served["tags"][row][:len(words)]] == tags
            entities = [(s, e, l.decode()) for s, e, l in zip(
                served["entity_start"][row], served["entity_end"][row],
                served["entity_label"][row])][:served["num_entities"][row]]
            assert entities == [tuple(span) for span in tags_to_spans(tags)]
    _check_empty_batches(serve)


@pytest.mark.parametrize("decoding,method", [pytest.param("flat", "greedy", marks=pytest.mark.slow),
                                             ("flat", "exact"), ("nested", "greedy")])
def test_span_graph_matches_python_decoding(decoding, method):
    tokenizer = WordPieceTokenizer(_FAKE_TOKENIZER_VOCABULARY)
    labels = ["NONE", "PER", "LOC"]
    sentences = _random_sentences(2)
    rows = _model_rows(sentences)
    width, most_words = 3, 21
    starts = np.repeat(np.arange(most_words), width)
    ends = starts + np.tile(np.arange(width), most_words)
    model = _FakeSpanModel(len(labels))
    preprocessor = WordPreprocessor(tokenizer, max_seq_length=64)
    serve = tf.function(
        lambda text: span_ner_outputs(model, preprocessor, labels, text, threshold=0.3,
                                      decoding=decoding, method=method),
        input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    for seed in range(4):
        logits = model.draw(seed)
        served = {name: value.numpy().tolist() for name, value in
                  serve(tf.constant(sentences)).items()}
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(
            logits[:, :most_words * width], axis=-1))
        for row in range(len(sentences)):
            valid = ends < len(sentences[row].split())
            arguments = (probabilities[rows[row]][valid], starts[valid], ends[valid], labels,
                         0.3)
            expected = (decode_nested(*arguments) if decoding == "nested"
                        else decode_flat(*arguments, method=method))
            count = served["num_entities"][row]
            found = list(zip(served["entity_start"][row], served["entity_end"][row],
                             [label.decode() for label in served["entity_label"][row]]))[:count]
            assert found == [entity[:3] for entity in expected], (seed, row)
            np.testing.assert_allclose(served["entity_score"][row][:count],
                                       [entity[3] for entity in expected], rtol=1e-6)
    _check_empty_batches(serve)
