"""Word shapes (`tasks.words.shapes`) and the tagger's casing features (`--casing_features`)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.span_ner.task import SpanNERTask
from nlpzoo.tasks.tagging import TaggedSentence
from nlpzoo.tasks.tagging.pipeline import make_dataset
from nlpzoo.tasks.tagging.serving import tagging_outputs
from nlpzoo.tasks.tagging.task import TaggingTask
from nlpzoo.tasks.words.preprocessor import WordPreprocessor
from nlpzoo.tasks.words.shapes import CASING_DIM, NUM_WORD_SHAPES, word_shape, word_shape_ids
from tests.helpers.task_checks import run_task_test
from nlpzoo.zoo.runs import directory as md
from nlpzoo.zoo import build_task_model

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "city", "of", "paris", "london",
              "we", "saw", "##s", "a", "1996", ","]
LABELS = ["O", "B-LOC", "I-LOC"]

WORDS = ["apple", "Apple", "A", "a", "US", "U.S.", "NATO", "iPhone", "McDonald", "O'Neil",
         "O'neil", "1996", "3-2", "1,000", ",", "--", "", "東京", "Straße", "ÉCOLE", "École",
         "ǅemal", "Σίσυφος", "ΣΊΣΥΦΟΣ", "a1", "A1", "AB1c", "x\u200b", "٣", "Ⅻ"]


def test_graph_shapes_follow_the_python_rule_word_by_word():
    ids = word_shape_ids(tf.ragged.constant([["x"] + WORDS, WORDS[:3]]))
    expected = [[word_shape("x", first=True)] + [word_shape(w) for w in WORDS],
                [word_shape(w, first=i == 0) for i, w in enumerate(WORDS[:3])]]
    assert ids.to_list() == expected
    assert {i for row in expected for i in row} <= set(range(1, NUM_WORD_SHAPES))
    # The six shapes, by hand (not first / first).
    assert [word_shape(w) for w in ["apple", "Apple", "NATO", "iPhone", "1996", ","]] == [
        1, 2, 3, 4, 5, 6]
    assert word_shape("NATO", first=True) == 9


def test_preprocessor_gives_the_shapes_of_the_kept_words_only():
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=8, word_shapes=True)
    words = tf.ragged.constant([["The", "city", "of", "Paris", "saw", "LONDON", "a"],
                                ["We", "saw", "London"]])
    features, counts = preprocessor.encode_words(
        words, left_context=tf.ragged.constant([["X"], []]),
        right_context=tf.ragged.constant([["Y"], ["Paris", "of"]]))
    kept = counts.row_lengths().numpy().tolist()
    assert kept == [6, 3]  # six subwords fit between [CLS] and [SEP]: "a" does not
    shapes = features["word_shapes"].to_list()
    assert shapes == [[word_shape(w, first=i == 0) for i, w in enumerate(sentence[:n])]
                      for sentence, n in zip(words.to_list(), kept)
                      for sentence in [[w.decode() for w in sentence]]]
    assert [len(row) for row in shapes] == [len(row) for row in features["word_starts"].to_list()]
    # Off by default, and the option survives the config.
    assert "word_shapes" not in WordPreprocessor(VOCABULARY).encode(words)
    assert "word_shapes" not in WordPreprocessor(VOCABULARY).get_config()
    restored = WordPreprocessor.from_config(preprocessor.get_config())
    assert restored.word_shapes is True


def test_every_subword_gets_its_words_shape_when_all_subwords_are_labelled():
    sentences = [TaggedSentence(("We", "SAWS", "Paris"), ("O", "O", "B-LOC"))]
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=16, word_shapes=True)
    dataset = make_dataset(sentences, preprocessor, LABELS, training=True, seed=0,
                           label_all_subwords=True)
    features, tags = next(iter(dataset))
    n = int(features["word_mask"].numpy().sum())
    assert n == 4  # we, saw, ##s, paris
    assert features["word_shapes"].numpy()[0, :n].tolist() == [8, 3, 3, 2]
    assert tags.numpy()[0, :n].tolist() == [0, 0, 0, 1]


def _casing_sentences(count, seed):
    """Sentences whose tags only the capitalisation decides: a Title-case word is B-LOC."""
    rng = np.random.default_rng(seed)
    sentences = []
    for _ in range(count):
        words = rng.choice(["the", "city", "of", "paris", "london", "we", "a"], size=6)
        title = rng.random(6) < 0.5
        sentences.append(TaggedSentence(
            tuple(w.title() if t else w for w, t in zip(words, title)),
            tuple("B-LOC" if t else "O" for t in title)))
    return sentences


def _one_batch(task, sentences):
    preprocessor = task.make_preprocessor(VOCABULARY, lowercase=True, max_seq_length=16)
    features, tags = next(iter(task.make_dataset(sentences, preprocessor, LABELS,
                                                 batch_size=len(sentences))))
    return preprocessor, {name: value.numpy() for name, value in features.items()}, tags.numpy()


def _tagger(task, jit_compile):
    return build_task_model(task, "bert_tiny", head="softmax", vocabulary_size=len(VOCABULARY),
                            num_layers=1, learning_rate=3e-3, schedule="constant",
                            jit_compile=jit_compile,
                            **task.model_head_options(LABELS))


def _word_accuracy(model, features, tags):
    predicted = model.predict_on_batch(features)
    real = features["word_mask"] > 0
    return float((predicted[real] == tags[real]).mean())


@pytest.mark.slow  # trains two taggers to a threshold: about 45 s
def test_casing_features_recover_what_the_uncased_encoder_cannot_see():
    sentences = _casing_sentences(32, seed=0)
    cased_task = TaggingTask(casing_features=True)
    preprocessor, features, tags = _one_batch(cased_task, sentences)
    assert preprocessor.word_shapes and preprocessor.lowercase
    assert features["word_shapes"].shape == features["word_mask"].shape
    tagger, _ = run_task_test(lambda jit_compile: _tagger(cased_task, jit_compile),
                              features, tags, expected_output_shape=tags.shape + (3,), epochs=40)
    assert tagger.casing_dim == CASING_DIM
    assert tagger.get_layer("word_shape_embedding").input_dim == NUM_WORD_SHAPES
    cased_accuracy = _word_accuracy(tagger, features, tags)

    # The same network without them: "Paris" and "paris" are the same subwords.
    uncased_task = TaggingTask()
    _, plain_features, plain_tags = _one_batch(uncased_task, sentences)
    assert "word_shapes" not in plain_features
    plain = _tagger(uncased_task, jit_compile=False)
    plain.fit(plain_features, plain_tags, epochs=40, batch_size=32, verbose=0)
    plain_accuracy = _word_accuracy(plain, plain_features, plain_tags)
    assert cased_accuracy >= 0.95, cased_accuracy
    assert plain_accuracy < 0.8, plain_accuracy

    # Serving from raw text computes the same shapes in the graph: the same tags.
    texts = [" ".join(s.words) for s in sentences[:4]]
    served = tagging_outputs(tagger, preprocessor, LABELS, tf.constant(texts))
    predicted = tagger.predict_on_batch(features)[:4]
    for row, served_tags in zip(predicted, served["tags"].numpy()):
        assert [t.decode() for t in served_tags[:6]] == [LABELS[i] for i in row[:6]]


def test_task_options_decide_the_preprocessor_and_the_head():
    task = TaggingTask(casing_features=True)
    assert task.model_head_options(LABELS)["casing_dim"] == CASING_DIM
    assert TaggingTask().model_head_options(LABELS)["casing_dim"] == 0
    plain = TaggingTask().make_preprocessor(VOCABULARY)
    # A preprocessor without shapes (a model saved before the option) is remade with them.
    assert task.preprocessor_of(plain).word_shapes is True
    assert task.preprocessor_of(plain).vocabulary == plain.vocabulary
    restored = TaggingTask.from_metadata({"task_options": task.options_dict()})
    assert restored.options.casing_features is True


def test_span_ner_reads_the_shapes_into_its_span_vectors():
    task = SpanNERTask(casing_features=True, max_span_width=3)
    span_labels = ["NONE", "LOC"]
    sentences = _casing_sentences(4, seed=1)
    preprocessor = task.make_preprocessor(VOCABULARY, lowercase=True, max_seq_length=16)
    model = build_task_model(task, "bert_tiny", vocabulary_size=len(VOCABULARY), num_layers=1,
                             jit_compile=False, **task.model_head_options(span_labels))
    assert model.casing_dim == CASING_DIM and "word_shapes" in model.input
    features = {name: value.numpy() for name, value in preprocessor(
        tf.constant([" ".join(s.words) for s in sentences])).items()}
    # "Paris" and "paris" are the same subwords: only the shapes tell them apart.
    lowered = {**features, **preprocessor(
        tf.constant([" ".join(s.words).lower() for s in sentences]))}
    np.testing.assert_array_equal(lowered["token_ids"], features["token_ids"])
    assert not np.array_equal(lowered["word_shapes"], features["word_shapes"])
    assert not np.allclose(model(features), model(lowered))
    assert SpanNERTask().model_head_options(span_labels)["casing_dim"] == 0


def test_casing_features_default_to_on_for_uncased_text_only():
    for task_class in (TaggingTask, SpanNERTask):
        assert task_class().options.casing_features is None  # not decided yet: off
        assert task_class().preprocessor_options()["word_shapes"] is False
        assert task_class().for_text_casing(lowercase=True).options.casing_features is True
        assert task_class().for_text_casing(lowercase=False).options.casing_features is False
        off, on = task_class(casing_features=False), task_class(casing_features=True)
        assert off.for_text_casing(True).options.casing_features is False
        assert on.for_text_casing(False).options.casing_features is True


def test_train_binary_turns_casing_features_on_for_an_uncased_vocabulary(trained_tagger_dir):
    # The shared tagger was trained with no casing flag on an uncased (--lowercase) vocabulary.
    with open(md.path(trained_tagger_dir, md.CONFIG)) as f:
        config = json.load(f)
    assert config["lowercase"] is True
    assert config["task_options"]["casing_features"] is True
    trained = md.load_models(trained_tagger_dir)
    assert trained.model.casing_dim == CASING_DIM and trained.preprocessor.word_shapes is True
