"""tools/export.py for sentence embeddings: raw strings in, the Keras model's vectors out.

Exports run as subprocesses; each SavedModel is then loaded in a fresh process that
imports only TensorFlow and tensorflow-text, and served raw strings; its `embedding`
must equal the Keras model's on the same strings (preprocessor + model, in this process).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.sentence_embedding.task import SentenceEmbeddingTask
from tests.helpers.binaries import finish_processes, one_error_line, start_python, start_tool
from tests.helpers.embedding_checks import save_tiny_checkpoint, save_tiny_classifier, trec_texts

# Short and long texts (cut at max_seq_length), accents, odd whitespace, an empty one.
TEXTS = trec_texts(6) + [" ".join(trec_texts(8)), "Café  crème\tau lait ?", ""]

_SERVE_SNIPPET = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the graph uses)

request = json.load(open(sys.argv[1]))
for path, output in request["exports"].items():
    serve = tf.saved_model.load(path).signatures["serving_default"]
    served = serve(text=tf.constant(request["texts"]))
    assert sorted(served) == ["embedding"], sorted(served)
    assert served["embedding"].dtype == tf.float32
    np.save(output, served["embedding"].numpy())
"""


def _serve(base, exports, name):
    """Serves TEXTS with each export in a fresh process; {export: embeddings}."""
    request = str(base / f"{name}.json")
    outputs = {path: str(base / f"{name}_{i}.npy") for i, path in enumerate(exports)}
    with open(request, "w", encoding="utf-8") as f:
        json.dump({"exports": outputs, "texts": TEXTS}, f)
    result = finish_processes({name: start_python("-c", _SERVE_SNIPPET, request)})[name]
    assert result.returncode == 0, result.stderr[-3000:]
    return {path: np.load(output) for path, output in outputs.items()}


def _keras_embeddings(encoder, vocabulary, max_seq_length, **head):
    task = SentenceEmbeddingTask()
    model = task.build_model(encoder, **head)
    preprocessor = task.make_preprocessor(vocabulary, True, max_seq_length)
    return np.asarray(model.predict_on_batch(preprocessor(tf.constant(TEXTS))))


def _check(results):
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    base = tmp_path_factory.mktemp("export_embeddings")
    checkpoint, encoder, vocabulary = save_tiny_checkpoint(base)
    return {"base": base, "checkpoint": checkpoint, "encoder": encoder,
            "vocabulary": vocabulary}


@pytest.fixture(scope="module")
def checkpoint_export(files):
    base, checkpoint = files["base"], files["checkpoint"]
    output = str(base / "exported" / "checkpoint")
    results = finish_processes({
        "export": start_tool("export.py", f"--init_checkpoint={checkpoint}",
                             "--task=sentence_embedding", "--layer=-2",
                             "--max_seq_length=32", f"--output={output}"),
        # Refused before TensorFlow starts.
        "no task": start_tool("export.py", f"--init_checkpoint={checkpoint}",
                              f"--output={base / 'never'}"),
        "head flag without task": start_tool("export.py", f"--model_dir={base}",
                                             "--pooling=max", f"--output={base / 'never'}"),
    })
    _check({"export": results["export"]})
    return dict(files, output=output, results=results,
                served=_serve(base, [output], "serve_checkpoint")[output])


def test_export_from_a_checkpoint_serves_the_keras_models_embeddings(checkpoint_export):
    stdout = checkpoint_export["results"]["export"].stdout
    assert (f"exported the sentence_embedding model of {checkpoint_export['checkpoint']} to "
            f"{checkpoint_export['output']} (signature 'serving_default', "
            "max_seq_length=32)") in stdout
    expected = _keras_embeddings(checkpoint_export["encoder"], checkpoint_export["vocabulary"],
                                 32, layer=-2)
    served = checkpoint_export["served"]
    assert served.shape == (len(TEXTS), 16)
    np.testing.assert_allclose(served, expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), 1.0, atol=1e-5)


def test_task_flags_are_refused_where_they_mean_nothing(checkpoint_export):
    base, results = checkpoint_export["base"], checkpoint_export["results"]
    assert one_error_line(results["no task"]).startswith(
        f"error: --init_checkpoint={checkpoint_export['checkpoint']} needs --task")
    assert one_error_line(results["head flag without task"]) == (
        "error: --pooling: only for a model built with --task; a trained model is exported "
        "as it is")
    assert not os.path.exists(base / "never")


@pytest.fixture(scope="module")
def model_exports(files):
    """Exports of trained models' encoders (--model ... --task) and of a saved embedder."""
    base, vocabulary = files["base"], files["vocabulary"]
    classifier = save_tiny_classifier(base / "classifier.keras", vocabulary, max_seq_length=32)
    task = SentenceEmbeddingTask()
    embedder = task.build_model(classifier.get_layer("encoder"), pooling="max", layer=1)
    embedder_preprocessor = task.make_preprocessor(vocabulary, True, 24)
    embedder.attach_metadata(preprocessor=embedder_preprocessor, task=task.name, labels=[])
    embedder.save(str(base / "embedder.keras"))
    outputs = {name: str(base / "exported" / name) for name in ("classifier", "embedder")}
    with open(base / "texts.jsonl", "w", encoding="utf-8") as f:
        f.write("".join(json.dumps({"text": text}) + "\n" for text in TEXTS if text))
    results = finish_processes({
        "classifier": start_tool("export.py", f"--model={base / 'classifier.keras'}",
                                 "--task=sentence_embedding", "--pooling=cls", "--nonormalize",
                                 f"--output={outputs['classifier']}"),
        "embedder": start_tool("export.py", f"--model={base / 'embedder.keras'}",
                               f"--output={outputs['embedder']}"),
        "predict": start_tool("predict.py", f"--model={base / 'embedder.keras'}",
                              f"--input={base / 'texts.jsonl'}",
                              f"--output={base / 'predicted.npy'}"),
        "trainable task": start_tool("export.py", f"--init_checkpoint={files['checkpoint']}",
                                     "--task=classification", f"--output={base / 'never'}"),
        "evaluate": start_tool("evaluate.py", f"--model={base / 'embedder.keras'}",
                               f"--data={base / 'texts.jsonl'}"),
    })
    _check({name: results[name] for name in ("classifier", "embedder", "predict")})
    served = _serve(base, list(outputs.values()), "serve_models")
    return dict(files, classifier=classifier, embedder=embedder,
                embedder_preprocessor=embedder_preprocessor, results=results,
                served={name: served[path] for name, path in outputs.items()},
                predicted=np.load(base / "predicted.npy"))


@pytest.mark.slow
def test_export_of_a_trained_models_encoder(model_exports):
    expected = _keras_embeddings(model_exports["classifier"].get_layer("encoder"),
                                 model_exports["vocabulary"], 32, pooling="cls",
                                 normalize=False)
    np.testing.assert_allclose(model_exports["served"]["classifier"], expected, atol=1e-5)


@pytest.mark.slow
def test_a_saved_embedder_exports_and_predicts_through_the_task_door(model_exports):
    embedder, preprocessor = model_exports["embedder"], model_exports["embedder_preprocessor"]
    expected = np.asarray(embedder.predict_on_batch(preprocessor(tf.constant(TEXTS))))
    np.testing.assert_allclose(model_exports["served"]["embedder"], expected, atol=1e-5)
    # predict.py skips the empty text (blank lines are not read).
    np.testing.assert_allclose(model_exports["predicted"], expected[:-1], atol=1e-5)


@pytest.mark.slow
def test_a_task_that_needs_training_is_not_built_from_a_checkpoint(model_exports):
    assert one_error_line(model_exports["results"]["trainable task"]) == (
        "error: --task=classification needs training: train it with tools/train.py and "
        "use its --model_dir; --task builds only tasks that need none (fill_mask, "
        "prompt_classification, sentence_embedding)")


@pytest.mark.slow
def test_evaluate_refuses_a_model_whose_task_needs_no_training(model_exports):
    assert one_error_line(model_exports["results"]["evaluate"]) == (
        "error: a sentence_embedding model has no labels or loss to evaluate against (its "
        "task needs no training)")
