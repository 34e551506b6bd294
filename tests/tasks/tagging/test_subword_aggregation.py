"""`subword_aggregation` (issue 41): a tagger's word vectors from all of a word's subwords."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers import Encoder, PositionGather, SubwordPooling
from nlpzoo.tasks.tagging import TaggedSentence
from nlpzoo.tasks.tagging.serving import tagging_outputs
from nlpzoo.tasks.tagging.task import TaggingTask
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS
from nlpzoo.zoo import build_task_model
from tests.helpers.task_checks import run_task_test

VOCABULARY = list(RESERVED_TOKENS) + ["john", "lives", "in", "new", "york", "##er", "##s", "."]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SENTENCES = [
    TaggedSentence(("John", "lives", "in", "New", "Yorkers", "."),
                   ("B-PER", "O", "O", "B-LOC", "I-LOC", "O")),
    TaggedSentence(("Yorks", "john"), ("B-LOC", "B-PER")),
]


def _features(task, sentences=SENTENCES):
    preprocessor = task.make_preprocessor(VOCABULARY, max_seq_length=16)
    features, _ = next(iter(task.make_dataset(sentences, preprocessor, LABELS,
                                              batch_size=len(sentences))))
    return preprocessor, {name: value.numpy() for name, value in features.items()}


def _tagger(task, head="softmax"):
    return build_task_model(task, "bert_tiny", head=head, vocabulary_size=len(VOCABULARY),
                            num_layers=1, dropout=0.0, jit_compile=False,
                            **task.model_head_options(LABELS))


def _by_hand(tagger, features, pool, pool_scores=False):
    """The emission layer on each word's pooled encoder vectors, in NumPy (or, with
    `pool_scores`, each word's subwords' emission scores pooled)."""
    encoder_inputs = {name: features[name] for name in Encoder.INPUTS}
    sequence = np.asarray(tagger.encoder(encoder_inputs)["sequence_output"], "float64")
    kernel, bias = (np.asarray(w, "float64") for w in tagger.get_layer("emissions").weights)
    scores = np.zeros(features["word_starts"].shape + (len(LABELS),))
    for b, w in zip(*np.nonzero(features["word_mask"])):
        span = sequence[b, features["word_starts"][b, w]:features["word_ends"][b, w]]
        scores[b, w] = pool(span @ kernel + bias) if pool_scores else pool(span) @ kernel + bias
    return scores


@pytest.mark.parametrize("head", ["softmax", "crf"])
def test_mean_is_the_emission_layer_on_the_mean_of_the_subwords(head):
    task = TaggingTask(subword_aggregation="mean")
    _, features = _features(task)
    tagger = _tagger(task, head)
    assert isinstance(tagger.get_layer("subword_pooling"), SubwordPooling)
    real = features["word_mask"] > 0
    expected = _by_hand(tagger, features, lambda span: span.mean(0))
    np.testing.assert_allclose(np.asarray(tagger(features))[real], expected[real], atol=1e-5)
    # The layer is linear: the same as the mean of the subwords' own emission scores.
    mean_scores = _by_hand(tagger, features, lambda scores: scores.mean(0), pool_scores=True)
    np.testing.assert_allclose(np.asarray(tagger(features))[real], mean_scores[real], atol=1e-5)


def test_max_and_last_by_hand():
    for mode, pool in (("max", lambda span: span.max(0)), ("last", lambda span: span[-1])):
        task = TaggingTask(subword_aggregation=mode)
        _, features = _features(task)
        tagger = _tagger(task)
        real = features["word_mask"] > 0
        np.testing.assert_allclose(np.asarray(tagger(features))[real],
                                   _by_hand(tagger, features, pool)[real], atol=1e-5,
                                   err_msg=mode)


def test_first_builds_the_model_of_before_the_option():
    first, default = TaggingTask(subword_aggregation="first"), TaggingTask()
    _, features = _features(first)
    assert "word_ends" not in features and first.preprocessor_options()["word_ends"] is False
    tagger = _tagger(first)
    assert "word_ends" not in tagger.input
    assert isinstance(tagger.get_layer("first_subwords"), PositionGather)
    assert tagger.get_config() == _tagger(default).get_config()
    assert "subword_aggregation" not in tagger.get_config()

    # The same weights in a mean tagger: equal scores on one-subword words only.
    mean_task = TaggingTask(subword_aggregation="mean")
    _, mean_features = _features(mean_task)
    mean = _tagger(mean_task)
    mean.set_weights(tagger.get_weights())
    scores, mean_scores = np.asarray(tagger(features)), np.asarray(mean(mean_features))
    pieces = mean_features["word_ends"] - mean_features["word_starts"]
    single = (features["word_mask"] > 0) & (pieces == 1)
    several = (features["word_mask"] > 0) & (pieces > 1)
    assert several.sum() == 2  # "yorkers" (3 pieces) and "yorks" (2)
    np.testing.assert_array_equal(scores[single], mean_scores[single])
    assert not np.allclose(scores[several], mean_scores[several])
    # And exactly the gather of the first subwords through the emission layer.
    np.testing.assert_allclose(scores[single],
                               _by_hand(tagger, mean_features, lambda s: s[0])[single],
                               atol=1e-5)


def test_save_load_round_trip_and_metadata(tmp_path):
    task = TaggingTask(subword_aggregation="max")
    preprocessor, features = _features(task)
    tagger = build_task_model(task, "bert_tiny", head="crf", vocabulary=VOCABULARY, num_layers=1,
                              max_seq_length=16, jit_compile=False,
                              **task.model_head_options(LABELS))
    assert tagger.preprocessor.word_ends is True
    path = str(tmp_path / "tagger.keras")
    tagger.save(path)
    loaded = keras.saving.load_model(path)  # no custom_objects
    assert loaded.subword_aggregation == "max" and "word_ends" in loaded.input
    assert loaded.preprocessor.word_ends is True
    assert loaded.task.options.subword_aggregation == "max"
    np.testing.assert_array_equal(loaded.predict_on_batch(features),
                                  tagger.predict_on_batch(features))
    metadata = json.loads(json.dumps(loaded.task_metadata))
    restored = TaggingTask.from_metadata(metadata)
    assert restored.options.subword_aggregation == "max"
    assert restored.preprocessor_options()["word_ends"] is True
    # Raw text, as tools/predict.py gives it: the same tags.
    predicted = loaded.predict([" ".join(s.words) for s in SENTENCES], verbose=0)
    assert [record["tags"] for record in predicted] == [
        [LABELS[i] for i in row[:len(s.words)]]
        for row, s in zip(tagger.predict_on_batch(features), SENTENCES)]
    # An older model's preprocessor (no word ends) is remade with them.
    plain = TaggingTask().make_preprocessor(VOCABULARY)
    assert restored.preprocessor_of(plain).word_ends is True


def test_serving_pools_as_the_pipeline_does():
    task = TaggingTask(subword_aggregation="mean")
    preprocessor, features = _features(task)
    tagger = _tagger(task)
    texts = tf.constant([" ".join(s.words) for s in SENTENCES])
    served = tagging_outputs(tagger, preprocessor, LABELS, texts)["tags"].numpy()
    for row, served_tags, sentence in zip(tagger.predict_on_batch(features), served, SENTENCES):
        assert [t.decode() for t in served_tags[:len(sentence.words)]] == [
            LABELS[i] for i in row[:len(sentence.words)]]


def test_options_are_checked():
    with pytest.raises(ValueError, match="first, last, mean, max"):
        TaggingTask(subword_aggregation="sum")
    with pytest.raises(ValueError, match="label_all_subwords"):
        TaggingTask(subword_aggregation="mean", label_all_subwords=True)
    assert TaggingTask(label_all_subwords=True).options.subword_aggregation == "first"


@pytest.mark.parametrize("mode", ["max", pytest.param("mean", marks=pytest.mark.slow)])
def test_task_contract_under_xla_and_mixed_bfloat16(mode):
    """XLA training (the pooling's gradient compiled), .keras round trip, mixed_bfloat16."""
    task = TaggingTask(subword_aggregation=mode)
    preprocessor = task.make_preprocessor(VOCABULARY, max_seq_length=16)
    features, tags = next(iter(task.make_dataset(SENTENCES, preprocessor, LABELS,
                                                 batch_size=len(SENTENCES))))
    features = {name: value.numpy() for name, value in features.items()}
    tagger, history = run_task_test(
        lambda jit_compile: build_task_model(
            task, "bert_tiny", head="crf", vocabulary_size=len(VOCABULARY), num_layers=1,
            learning_rate=1e-3, jit_compile=jit_compile, **task.model_head_options(LABELS)),
        features, tags.numpy(), expected_output_shape=(2, 16, len(LABELS)), epochs=3)
    assert tagger.subword_aggregation == mode
