"""Keras-native task models: raw Python inputs in `fit`, `evaluate` and `predict`, the
metadata that rides in the `.keras` file, and the schedule `fit` resolves.

A bert_tiny classifier is fine-tuned on 60 TREC questions given as Python
strings, saved and loaded back with `keras.saving.load_model` (no
`custom_objects`); a CRF tagger the same on the CoNLL sample's word lists.
"""

import collections
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import nlpzoo.zoo  # noqa: F401  (registers the task families and our Keras classes)
from nlpzoo.tasks.tagging.evaluation import predict_tags
from nlpzoo.tasks.text.text_readers import read_examples
from nlpzoo.tasks.text.word_splitting import split_words
from nlpzoo.tasks.training.optimization import StartingAt, WarmupLinearDecay
from nlpzoo.tasks.words.conll import read_column_file
from nlpzoo.zoo import build_model, build_task_model
from nlpzoo.zoo.checkpoints import save_encoder_checkpoint
from nlpzoo.zoo import load_pretrained
from nlpzoo.zoo.runs.directory import load_trained
from tests.helpers.paths import CONLL, TREC

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
QUESTIONS = ["What does NASA stand for ?", "Who wrote War and Peace ?"]


def _vocabulary(texts, lowercase=True):
    words = collections.Counter(word.lower() if lowercase else word
                                for text in texts for word in text.split())
    return SPECIAL + sorted(words)


def _softmax(logits):
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def trec():
    examples = read_examples(os.path.join(TREC, "train.label"))[:60]
    return [e.text for e in examples], [e.label for e in examples]


@pytest.fixture(scope="module")
def classifier(trec, tmp_path_factory):
    """(trained model, the same loaded back from its .keras file)."""
    texts, labels = trec
    keras.utils.set_random_seed(1)
    model = build_model("bert_tiny_classifier", labels=sorted(set(labels)),
                        vocabulary=_vocabulary(texts), max_seq_length=32)
    model.fit(texts, labels, epochs=3, batch_size=8, verbose=0)
    path = str(tmp_path_factory.mktemp("classifier") / "model.keras")
    model.save(path)
    return model, keras.saving.load_model(path)


def test_loaded_classifier_keeps_task_labels_and_preprocessor(classifier, trec):
    model, loaded = classifier
    assert loaded.task_metadata["task"] == "classification"
    assert loaded.label_names == sorted(set(trec[1])) == model.label_names
    assert loaded.task.name == "classification" and loaded.task.options.paired_input is False
    assert loaded.preprocessor.vocabulary == model.preprocessor.vocabulary
    assert loaded.preprocessor.max_seq_length == 32


def test_predict_on_raw_strings_is_softmax_of_the_tensor_path(classifier):
    model, loaded = classifier
    predictions = loaded.predict(QUESTIONS)
    task = loaded.task
    examples = task.raw_examples(QUESTIONS, None, loaded.label_names)
    dataset = task.make_dataset(examples, loaded.preprocessor, loaded.label_names,
                                batch_size=8)
    logits = loaded.predict(dataset, verbose=0)  # tensors in: raw outputs, as before
    probabilities = _softmax(np.asarray(logits, np.float64))
    for prediction, row in zip(predictions, probabilities):
        assert set(prediction["scores"]) == set(loaded.label_names)
        assert sum(prediction["scores"].values()) == pytest.approx(1.0, abs=1e-6)
        assert [prediction["scores"][name] for name in loaded.label_names] == pytest.approx(
            row.tolist(), abs=1e-5)
        best = loaded.label_names[int(np.argmax(row))]
        assert prediction["label"] == best
        assert prediction["score"] == prediction["scores"][best]
    # The model before saving says the same.
    before = model.predict(QUESTIONS)
    assert [p["label"] for p in before] == [p["label"] for p in predictions]
    assert before[0]["scores"]["HUM"] == pytest.approx(predictions[0]["scores"]["HUM"], abs=1e-6)


def test_evaluate_on_raw_inputs_equals_evaluate_on_the_dataset(classifier, trec):
    _, loaded = classifier
    texts, labels = trec
    raw = loaded.evaluate(texts, labels, batch_size=16, return_dict=True, verbose=0)
    examples = loaded.task.raw_examples(texts, labels, loaded.label_names)
    dataset = loaded.task.make_dataset(examples, loaded.preprocessor, loaded.label_names,
                                       batch_size=16)
    expected = loaded.evaluate(dataset, return_dict=True, verbose=0)
    assert raw["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert raw["accuracy"] == pytest.approx(expected["accuracy"])
    # Label ids are the labels of those ids.
    ids = [loaded.label_names.index(label) for label in labels]
    by_id = loaded.evaluate(np.array(texts), np.array(ids), batch_size=16, return_dict=True,
                            verbose=0)
    assert by_id["loss"] == pytest.approx(expected["loss"], rel=1e-5)


def test_raw_training_learns(trec):
    """Raw-string fit goes through the same data as the dataset: the loss falls."""
    texts, labels = trec
    keras.utils.set_random_seed(2)
    model = build_model("bert_tiny_classifier", labels=sorted(set(labels)),
                        vocabulary=_vocabulary(texts), max_seq_length=32, learning_rate=1e-3)
    history = model.fit(texts, labels, epochs=4, batch_size=8, verbose=0,
                        validation_data=(texts[:16], labels[:16]))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert len(history.history["val_loss"]) == 4


def test_a_model_without_vocabulary_says_what_to_pass():
    model = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100)
    assert model.label_names == ["0", "1", "2"] and model.preprocessor is None
    with pytest.raises(ValueError, match="vocabulary="):
        model.predict(["Who wrote War and Peace ?"])


def test_metadata_without_preprocessor_survives_saving(tmp_path):
    model = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100)
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.label_names == ["0", "1", "2"] and loaded.preprocessor is None
    assert loaded.task.name == "classification"


def test_pair_classifier_takes_text_pairs():
    vocabulary = SPECIAL + ["the", "cat", "sat", "a", "dog", "ran"]
    model = build_model("bert_tiny_pair_classifier", labels=["no", "yes"],
                        vocabulary=vocabulary, max_seq_length=16)
    pairs = [("the cat sat", "a cat sat"), ("the dog ran", "the cat sat")]
    predictions = model.predict(pairs)
    assert [sorted(p["scores"]) for p in predictions] == [["no", "yes"]] * 2
    with pytest.raises(ValueError, match=r"x\[0\]: this classifier reads \(text, text_pair\)"):
        model.predict(["the cat sat"])


def test_load_pretrained_carries_the_checkpoint_tokenizer(tmp_path):
    vocabulary = SPECIAL + ["cafe", "is", "open", "##s"]
    encoder = nlpzoo.zoo.build_encoder("bert_tiny", vocabulary_size=len(vocabulary))
    directory = str(tmp_path / "checkpoint")
    save_encoder_checkpoint(encoder, directory, vocabulary, lowercase=True)
    model = load_pretrained(directory, "classification", labels=["closed", "open"])
    assert list(model.preprocessor.vocabulary) == vocabulary and model.preprocessor.lowercase
    predictions = model.predict(["Café opens"])
    assert predictions[0]["label"] in ("closed", "open")
    # The checkpoint's shape is bert_tiny: its default max_seq_length.
    assert model.preprocessor.max_seq_length == 256


# === The learning-rate schedule `fit` resolves ===


class _Rates(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))


@pytest.mark.slow  # test_total_steps_given_is_kept covers the schedule of a raw-text fit in make test
def test_fit_without_total_steps_warms_up_and_decays(trec):
    texts, labels = trec
    peak = 1e-3
    model = build_model("bert_tiny_classifier", labels=sorted(set(labels)),
                        vocabulary=_vocabulary(texts), max_seq_length=32, learning_rate=peak)
    dataset = model.raw_dataset(texts, labels, batch_size=4, training=True)
    steps = int(dataset.cardinality())
    # >= 10: the second fit then warms up over int(0.1 * steps) >= 1 steps
    assert steps == len(list(dataset)) >= 10
    rates = _Rates()
    model.fit(dataset, epochs=2, verbose=0, callbacks=[rates])
    total = 2 * steps
    warmup = int(0.1 * total)  # bert_tiny's warmup_fraction, as tools/train.py computes it
    expected = [peak * step / warmup if step < warmup
                else peak * (total - step) / (total - warmup) for step in range(total)]
    assert rates.rates == pytest.approx(expected, rel=1e-5, abs=1e-9)
    assert rates.rates[0] == 0.0 and max(rates.rates) == pytest.approx(peak)

    # A second fit starts its own warm-up at the optimizer's current step.
    again = _Rates()
    model.fit(dataset, epochs=1, verbose=0, callbacks=[again])
    schedule = model.optimizer.learning_rate  # the value now; the schedule is configured
    configured = model.optimizer._learning_rate
    assert isinstance(configured, StartingAt) and configured.start_step == total
    assert again.rates[0] == 0.0
    reference = WarmupLinearDecay(peak, int(0.1 * steps), steps)
    assert again.rates == pytest.approx([float(reference(step)) for step in range(steps)],
                                        rel=1e-5, abs=1e-9)
    del schedule


def test_total_steps_given_is_kept(trec):
    texts, labels = trec
    model = build_model("bert_tiny_classifier", labels=sorted(set(labels)),
                        vocabulary=_vocabulary(texts), max_seq_length=32, learning_rate=1e-3,
                        total_steps=100, warmup_steps=0)
    assert model.deferred_schedule is None
    rates = _Rates()
    model.fit(texts[:16], labels[:16], batch_size=8, epochs=1, verbose=0, callbacks=[rates])
    # 16 questions in length groups: a few batches, each at the given schedule's rate.
    assert len(rates.rates) >= 2
    assert rates.rates == pytest.approx([1e-3 * (100 - step) / 100
                                         for step in range(len(rates.rates))])


def test_deferred_schedule_survives_saving(tmp_path, trec):
    texts, labels = trec
    model = build_model("bert_tiny_classifier", labels=sorted(set(labels)),
                        vocabulary=_vocabulary(texts), max_seq_length=32)
    path = str(tmp_path / "m.keras")
    model.save(path)
    assert keras.saving.load_model(path).deferred_schedule == model.deferred_schedule


# === Word tasks: word lists and raw strings ===


@pytest.fixture(scope="module")
def conll_sentences():
    return read_column_file(os.path.join(CONLL, "train.txt"))


@pytest.fixture(scope="module")
def tagger(conll_sentences, tmp_path_factory):
    """(CRF tagger trained on word lists, the same loaded back)."""
    words = [list(s.words) for s in conll_sentences]
    tags = [list(s.tags) for s in conll_sentences]
    labels = ["O"] + [f"{p}-{t}" for t in ("LOC", "MISC", "ORG", "PER") for p in "BI"]
    keras.utils.set_random_seed(3)
    model = build_model("bert_tiny_crf_tagger", labels=labels, learning_rate=1e-3,
                        vocabulary=_vocabulary([" ".join(w) for w in words]),
                        max_seq_length=64)
    model.fit(words, tags, epochs=3, batch_size=4, verbose=0)
    path = str(tmp_path_factory.mktemp("tagger") / "tagger.keras")
    model.save(path)
    return model, keras.saving.load_model(path)


def test_tagger_predicts_word_lists_as_the_tensor_path(tagger, conll_sentences):
    _, loaded = tagger
    sentences = conll_sentences[:5]
    predictions = loaded.predict([list(s.words) for s in sentences])
    dataset = loaded.task.make_dataset(sentences, loaded.task.preprocessor_of(loaded.preprocessor),
                                       loaded.label_names, batch_size=2)
    expected = predict_tags(loaded, dataset, sentences, loaded.label_names)
    assert [p["tags"] for p in predictions] == expected
    for prediction, sentence in zip(predictions, sentences):
        assert prediction["words"] == list(sentence.words)
        assert "text" not in prediction


def test_tagger_on_raw_strings_gives_character_offsets(tagger, conll_sentences):
    _, loaded = tagger
    texts = ["  ".join(s.words) for s in conll_sentences[:6]]
    raw = loaded.predict(texts)
    # A raw string is the words BERT's basic tokenizer makes of it ("U.S." is 4 words).
    as_words = loaded.predict([[word for word, _, _ in split_words(text)] for text in texts])
    for text, prediction, reference in zip(texts, raw, as_words):
        assert prediction["text"] == text
        assert prediction["tags"] == reference["tags"]
        for entity in prediction["entities"]:
            assert text[entity["start_char"]:entity["end_char"]] == entity["text"]


def test_tagging_decode_on_a_raw_string_hand_checked():
    task = nlpzoo.tasks.registry.get_task("tagging")
    text = "He flew to  Paris , France ."
    sentences = task.raw_examples([text])
    assert sentences[0].words == ("He", "flew", "to", "Paris", ",", "France", ".")
    [record] = task.decode_predictions(
        sentences, [["O", "O", "O", "B-LOC", "O", "B-LOC", "O"]], ["O", "B-LOC", "I-LOC"])
    assert [(e["text"], e["start_char"], e["end_char"], e["label"])
            for e in record["entities"]] == [("Paris", 12, 17, "LOC"), ("France", 20, 26, "LOC")]


def test_tagger_evaluate_on_raw_inputs_equals_the_dataset(tagger, conll_sentences):
    _, loaded = tagger
    words = [list(s.words) for s in conll_sentences]
    tags = [list(s.tags) for s in conll_sentences]
    raw = loaded.evaluate(words, tags, batch_size=4, return_dict=True, verbose=0)
    task, preprocessor = loaded.task, loaded.task.preprocessor_of(loaded.preprocessor)
    dataset = task.make_dataset(task.prediction_examples(conll_sentences, preprocessor),
                                preprocessor, loaded.label_names, batch_size=4)
    expected = loaded.evaluate(dataset, return_dict=True, verbose=0)
    assert raw["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert raw["token_accuracy"] == pytest.approx(expected["token_accuracy"])


def test_wrong_tag_count_names_the_row(tagger):
    model, _ = tagger
    with pytest.raises(ValueError, match=r"y\[1\]: 1 tags for 2 words"):
        model.evaluate([["EU"], ["Peter", "Blackburn"]], [["B-ORG"], ["B-PER"]], verbose=0)


def test_span_ner_on_a_raw_string():
    vocabulary = SPECIAL + ["he", "flew", "to", "paris", ",", "france", "."]
    model = build_task_model("span_ner", "bert_tiny", labels=["NONE", "LOC"],
                             vocabulary=vocabulary, max_seq_length=32)
    text = "He flew to Paris , France ."
    [prediction] = model.predict([text])
    assert prediction["words"] == text.split() and prediction["text"] == text
    for entity in prediction["entities"]:
        assert text[entity["start_char"]:entity["end_char"]] == entity["text"]
        assert 0.0 <= entity["score"] <= 1.0
    # Decoding, hand-checked: entity (3, 3) is "Paris" at characters 11..16.
    task = model.task
    sentences = task.raw_examples([text])
    [record] = task.decode_predictions(sentences, [[(3, 3, "LOC", 0.9)]], model.label_names)
    assert record["entities"] == [{"start": 3, "end": 3, "label": "LOC", "score": 0.9,
                                   "text": "Paris", "start_char": 11, "end_char": 16}]
    # Tag lists train it: B-/I- tags become spans.
    assert task.raw_examples([text], [["O", "O", "O", "B-LOC", "O", "B-LOC", "O"]])[0].spans \
        == ((3, 3, "LOC"), (5, 5, "LOC"))


def test_load_trained_model_path_predicts_raw_text(classifier, tmp_path):
    model, _ = classifier
    path = str(tmp_path / "best_model.keras")
    model.save(path)
    trained = load_trained(model_path=path)
    assert trained.model.predict(QUESTIONS[:1])[0]["label"] in trained.labels


def test_raw_dataset_declares_its_length(classifier, trec):
    _, loaded = classifier
    texts, labels = trec
    for training in (True, False):
        dataset = loaded.raw_dataset(texts, labels, batch_size=7, training=training)
        cardinality = int(dataset.cardinality())
        assert cardinality == len(list(dataset)) == len(list(dataset))
    assert int(loaded.raw_dataset(texts, labels, 7).cardinality()) == -(-60 // 7)
    assert isinstance(dataset, tf.data.Dataset)


def test_fit_on_raw_inputs_needs_labels(classifier):
    model, _ = classifier
    with pytest.raises(ValueError, match="need their labels: pass y"):
        model.fit(QUESTIONS, epochs=1, verbose=0)
