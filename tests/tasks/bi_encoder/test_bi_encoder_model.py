"""The SBERT bi-encoder model: tied towers, the maths of both objectives, training, saving."""

import keras
import numpy as np
import pytest

from nlpzoo.tasks.bi_encoder import BiEncoder, pair_inputs
from nlpzoo.tasks.classification import ClassificationExample
from nlpzoo.tasks.training.layerwise_optimizer import LayerwiseAdamW
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer
from tests.helpers.task_checks import run_task_test
from nlpzoo.zoo import build_task_model

VOCABULARY_SIZE = 40
TINY = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32,
            vocabulary_size=VOCABULARY_SIZE)


def _model(objective="softmax", **overrides):
    task = get_task("bi_encoder", objective=objective)
    head = {"num_classes": 2} if objective == "softmax" else {}
    return build_task_model(task, "bert_tiny", **{**TINY, "dropout": 0.0, **head, **overrides})


def _tower(rng, batch, length):
    """Encoder inputs of `batch` texts of random real lengths, right-padded to `length`."""
    real = rng.integers(3, length + 1, batch)
    token_ids = np.zeros((batch, length), "int32")
    for row, count in enumerate(real):
        token_ids[row, :count] = rng.integers(5, VOCABULARY_SIZE, count)
        token_ids[row, 0], token_ids[row, count - 1] = 2, 3  # [CLS] ... [SEP]
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": (token_ids > 0).astype("int32")}


def _pairs(batch=4, length=7, pair_length=11, seed=0):
    """Model inputs for `batch` pairs; the two towers have different padded lengths."""
    rng = np.random.default_rng(seed)
    return {**_tower(rng, batch, length), **pair_inputs(_tower(rng, batch, pair_length))}


def _numpy_mean_vectors(model, features):
    """u and v: NumPy means of the encoder's token vectors over each text's real tokens."""
    vectors = []
    for prefix in ("", "pair_"):
        tower = {name: features[prefix + name] for name in ("token_ids", "segment_ids",
                                                           "padding_mask")}
        sequence = np.asarray(model.encoder(tower)["sequence_output"], np.float64)
        mask = tower["padding_mask"][:, :, None].astype(np.float64)
        vectors.append((sequence * mask).sum(1) / mask.sum(1))
    return vectors


def _cosine(u, v):
    return (u * v).sum(-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))


def test_the_two_towers_share_every_weight():
    model = _model()
    head = model.get_layer("classification_head")
    encoder_ids = {id(w) for w in model.encoder.weights}
    assert len(model.weights) == len(model.encoder.weights) + len(head.weights)
    assert {id(w) for w in model.weights} == encoder_ids | {id(w) for w in head.weights}
    # One set of encoder variables, under one name (no second tower's "transformer_1/...").
    encoder_paths = [w.path for w in model.weights if id(w) in encoder_ids]
    assert all(path.startswith("transformer/") for path in encoder_paths)
    assert len(set(encoder_paths)) == len(encoder_paths)

    features = _pairs()
    swapped = {**{name: features["pair_" + name] for name in ("token_ids", "segment_ids",
                                                              "padding_mask")},
               **pair_inputs({name: features[name] for name in ("token_ids", "segment_ids",
                                                                "padding_mask")})}
    outputs, swapped_outputs = model.pair_outputs(features), model.pair_outputs(swapped)
    # A text's vector is the same whichever tower reads it.
    np.testing.assert_allclose(outputs["embedding"], swapped_outputs["pair_embedding"],
                               rtol=0, atol=1e-6)
    np.testing.assert_allclose(outputs["pair_embedding"], swapped_outputs["embedding"],
                               rtol=0, atol=1e-6)
    # The same text on both sides: u = v, cosine 1.
    same = {**{name: features[name] for name in ("token_ids", "segment_ids", "padding_mask")},
            **pair_inputs({name: features[name] for name in ("token_ids", "segment_ids",
                                                             "padding_mask")})}
    np.testing.assert_allclose(model.pair_outputs(same)["cosine"], 1.0, atol=1e-5)

    # Training moves the one shared encoder: still one set of weights afterwards.
    before = [np.array(w) for w in model.encoder.weights]
    model.fit(features, np.array([0, 1, 1, 0]), epochs=1, verbose=0)
    assert len(model.weights) == len(model.encoder.weights) + len(head.weights)
    assert any(not np.array_equal(b, np.asarray(w))
               for b, w in zip(before, model.encoder.weights))


def test_softmax_logits_are_a_dense_layer_over_u_v_and_their_distance():
    model = _model()
    features = _pairs()
    u, v = _numpy_mean_vectors(model, features)
    head = model.get_layer("classification_head").logits_dense
    kernel, bias = np.asarray(head.kernel, np.float64), np.asarray(head.bias, np.float64)
    expected = np.concatenate([u, v, np.abs(u - v)], axis=-1) @ kernel + bias
    logits = model.predict(features, verbose=0)
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)
    outputs = model.pair_outputs(features)
    np.testing.assert_allclose(outputs["logits"], logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs["embedding"], u, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs["pair_embedding"], v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs["cosine"], _cosine(u, v), rtol=1e-4, atol=1e-5)


def test_cosine_objective_is_the_squared_error_of_the_cosine():
    model = _model("cosine")
    features = _pairs(batch=5)
    u, v = _numpy_mean_vectors(model, features)
    cosine = _cosine(u, v)
    np.testing.assert_allclose(model.predict(features, verbose=0), cosine, rtol=1e-4,
                               atol=1e-5)
    scores = np.array([1.0, -0.5, 0.0, 0.25, 0.9], np.float32)
    expected = np.mean((cosine - scores) ** 2)
    # Batches of 3 and 2: the loss and metric average over pairs, not over batches.
    metrics = model.evaluate(features, scores, batch_size=3, verbose=0, return_dict=True)
    assert metrics["mse"] == pytest.approx(expected, rel=1e-4)
    metrics = model.evaluate(features, scores, batch_size=5, verbose=0, return_dict=True)
    assert metrics["loss"] == pytest.approx(expected, rel=1e-4)


def _synthetic_pairs(count, seed=0):
    """Paraphrases (the same words reordered: label 1, score 1) and unrelated pairs (0)."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]
    examples = []
    for index in range(count):
        text = list(rng.choice(words, 4, replace=False))
        if index % 2:
            pair, label = list(rng.permutation(text)), "1"
        else:
            pair, label = list(rng.choice([w for w in words if w not in text], 4)), "0"
        examples.append(ClassificationExample(" ".join(text), label, " ".join(pair),
                                              "synthetic", index + 1))
    return words, examples


@pytest.mark.parametrize("objective", ["softmax", pytest.param("cosine", marks=pytest.mark.slow)])
def test_loss_falls_on_a_small_sample(objective):
    words, examples = _synthetic_pairs(32)
    tokenizer = WordPieceTokenizer(list(RESERVED_TOKENS) + words)
    task = get_task("bi_encoder", objective=objective)
    labels = task.label_names(examples)
    dataset = task.make_dataset(examples, TextPreprocessor(tokenizer, max_seq_length=16),
                                labels, batch_size=8, training=True, seed=0)
    model = build_task_model(task, "bert_tiny", **{**TINY, "dropout": 0.0,
                                                   "vocabulary_size": tokenizer.vocabulary_size},
                             **task.model_head_options(labels), learning_rate=1e-2,
                             schedule="constant", jit_compile=False)
    losses = model.fit(dataset, epochs=4, verbose=0).history["loss"]  # 16 steps
    assert losses[-1] < 0.5 * losses[0], losses


@pytest.mark.parametrize("objective, shape", [
    ("softmax", (4, 2)), pytest.param("cosine", (4,), marks=pytest.mark.slow)])
def test_task_model_contract(objective, shape):
    """XLA training, .keras round trip, two steps under mixed_bfloat16 (float32 outputs)."""
    labels = np.array([0, 1, 1, 0]) if objective == "softmax" else np.array(
        [0.0, 1.0, 0.5, -0.5], np.float32)
    run_task_test(lambda jit_compile: _model(objective, jit_compile=jit_compile), _pairs(),
                  labels, expected_output_shape=shape)


def test_keras_file_keeps_the_towers_the_head_and_the_metadata(tmp_path):
    task = get_task("bi_encoder", objective="softmax", pooling="max")
    model = build_task_model(task, "bert_tiny", **TINY, num_classes=3)
    vocabulary = list(RESERVED_TOKENS) + [f"w{i}" for i in range(VOCABULARY_SIZE - 5)]
    model.attach_metadata(task="bi_encoder", labels=["a", "b", "c"],
                          preprocessor=TextPreprocessor(vocabulary, max_seq_length=16),
                          task_options=task.options_dict())
    features = _pairs()
    path = str(tmp_path / "bi_encoder.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is BiEncoder
    assert (loaded.objective, loaded.pooling, loaded.num_classes) == ("softmax", "max", 3)
    assert loaded.task_metadata["task_options"] == {
        "objective": "softmax", "pooling": "max", "ranking_scale": 20.0,
        "symmetric_ranking": False, "hard_negatives": False}
    assert loaded.preprocessor.vocabulary == tuple(vocabulary)
    expected, actual = model.pair_outputs(features), loaded.pair_outputs(features)
    for name in ("embedding", "pair_embedding", "cosine", "logits"):
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
    np.testing.assert_array_equal(loaded.predict(features, verbose=0),
                                  model.predict(features, verbose=0))


def test_head_learning_rate_reaches_the_head_only():
    model = _model(learning_rate=1e-4, head_learning_rate=1e-2, total_steps=10)
    optimizer = model.optimizer
    assert isinstance(optimizer, LayerwiseAdamW)
    head_paths = {w.path for w in model.get_layer("classification_head").trainable_weights}
    assert head_paths
    for variable in model.trainable_weights:
        factor = optimizer.multiplier(variable.path)
        assert factor == (100.0 if variable.path in head_paths else 1.0), variable.path


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="objective must be one of softmax, cosine"):
        get_task("bi_encoder", objective="triplet")
    with pytest.raises(ValueError, match="pooling must be one of cls, mean, max"):
        get_task("bi_encoder", pooling="pooler")
    with pytest.raises(ValueError, match="num_classes must be >= 2"):
        _model(num_classes=1)
