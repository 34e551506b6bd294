"""The sentence_embedding task: registry, embedding in order, outputs, serving, the Task door."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.registry import get_task, task_names
from nlpzoo.tasks.sentence_embedding import Sentence, SentenceEmbedder
from nlpzoo.tasks.sentence_embedding.task import SentenceEmbeddingTask
from tests.helpers.embedding_checks import (
    save_tiny_checkpoint,
    tiny_encoder,
    tiny_vocabulary,
    trec_texts,
)
from nlpzoo.zoo.runs import directory as md
from nlpzoo.zoo import build_task_model, load_pretrained

MAX_SEQ_LENGTH = 24


@pytest.fixture(scope="module")
def setup():
    """The task, a tiny model, its preprocessor, 13 texts and their embeddings (computed once:
    the first pass through the tf.data pipeline is what takes time)."""
    keras.utils.set_random_seed(0)
    vocabulary = tiny_vocabulary()
    task = get_task("sentence_embedding")
    model = task.build_model(tiny_encoder(len(vocabulary)), layer=-2)
    preprocessor = task.make_preprocessor(vocabulary, True, MAX_SEQ_LENGTH)
    # Short and long texts (the last is cut at MAX_SEQ_LENGTH), accents, odd spacing.
    texts = trec_texts(11) + [" ".join(trec_texts(3)), "Café  crème\tau lait ?"]
    sentences = [Sentence(text, "in.txt", number) for number, text in enumerate(texts, 1)]
    progress = []
    embeddings = task.embed(model, preprocessor, sentences, batch_size=3,
                            progress=lambda done, total: progress.append((done, total)))
    return task, model, preprocessor, sentences, embeddings, progress


def test_the_task_is_registered_and_not_trainable():
    assert "sentence_embedding" in task_names()
    task = get_task("sentence_embedding")
    assert isinstance(task, SentenceEmbeddingTask) and task.trainable is False
    assert get_task("classification").trainable is True
    assert task.head_options == ("pooling", "normalize", "layer")
    assert task.label_names([Sentence("x")]) == [] and task.serving_inputs() == ("text",)


def test_embed_keeps_input_order_across_batches_and_buckets(setup):
    task, model, preprocessor, sentences, embeddings, progress = setup
    assert embeddings.shape == (13, 16) and embeddings.dtype == np.float32
    # All 13 in one batch, padded to the bucket of the longest: the same vectors, in order.
    together = model.predict_on_batch(preprocessor(tf.constant([s.text for s in sentences])))
    np.testing.assert_allclose(embeddings, together, atol=1e-6)
    assert progress == [(3, 13), (6, 13), (9, 13), (12, 13), (13, 13)]


def test_serving_outputs_equal_embed(setup):
    task, model, preprocessor, sentences, embeddings, _ = setup
    serve = tf.function(
        lambda text: task.serving_outputs(model, preprocessor, [], text),
        input_signature=[tf.TensorSpec([None], tf.string)])
    served = serve(tf.constant([s.text for s in sentences]))["embedding"].numpy()
    assert served.dtype == np.float32
    np.testing.assert_allclose(served, embeddings, atol=1e-6)


def test_npy_and_jsonl_outputs_hold_every_text_in_order(setup, tmp_path, capsys):
    task, model, preprocessor, sentences, embeddings, _ = setup
    npy, jsonl = str(tmp_path / "e.npy"), str(tmp_path / "e.jsonl")
    assert task.write_predictions(model, preprocessor, sentences, [], npy) == (
        "13 texts (16-dimensional embeddings)")
    task.write_embeddings(sentences, embeddings, jsonl)
    np.testing.assert_allclose(np.load(npy), embeddings, atol=1e-6)
    with open(jsonl, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    assert [r["text"] for r in records] == [s.text for s in sentences]
    # Each number reads back as exactly the same float32.
    np.testing.assert_array_equal(np.array([r["embedding"] for r in records], np.float32),
                                  embeddings)
    task.write_embeddings(sentences[:2], embeddings[:2], "-")
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["text"] for line in lines] == [s.text for s in sentences[:2]]


@pytest.mark.parametrize("output, output_format, message", [
    ("e.txt", "auto", "e.txt: embeddings are written to a .npy file"),
    ("e.conll", "conll", "embeddings are written as npy or jsonl, not conll"),
])
def test_a_bad_output_fails_before_any_work_and_writes_nothing(tmp_path, output, output_format,
                                                               message):
    task = SentenceEmbeddingTask()
    path = str(tmp_path / output)
    with pytest.raises(ValueError, match=message):  # the model (None) is never called
        task.write_predictions(None, None, [Sentence("x")], [], path, output_format)
    assert list(tmp_path.iterdir()) == []


def test_zoo_builds_it_like_any_task(tmp_path):
    model = build_task_model("sentence_embedding", "bert_tiny", pooling="max", layer=1,
                             vocabulary_size=50, num_layers=1, hidden_dim=16, num_heads=2,
                             intermediate_dim=32)
    assert isinstance(model, SentenceEmbedder) and (model.pooling, model.layer) == ("max", 1)
    path, _, _ = save_tiny_checkpoint(tmp_path)
    pretrained = load_pretrained(path, "sentence_embedding", layer="mean_last_4")
    assert pretrained.output_shape == (None, 16) and pretrained.layer == "mean_last_4"


def test_a_saved_embedder_with_metadata_goes_through_the_task_door(setup, tmp_path):
    task, model, preprocessor, sentences, embeddings, _ = setup
    model.attach_metadata(preprocessor=preprocessor, task=task.name, labels=[])
    path = str(tmp_path / "embedder.keras")
    model.save(path)
    trained = md.load_trained(model_path=path)
    assert isinstance(trained.task, SentenceEmbeddingTask) and trained.labels == []
    assert isinstance(trained.preprocessor, TextPreprocessor)
    assert trained.preprocessor.max_seq_length == MAX_SEQ_LENGTH
    output = str(tmp_path / "e.jsonl")
    trained.task.write_predictions(trained.model, trained.preprocessor, sentences,
                                   trained.labels, output)
    with open(output, encoding="utf-8") as f:
        written = np.array([json.loads(line)["embedding"] for line in f], np.float32)
    np.testing.assert_allclose(written, embeddings, atol=1e-6)
