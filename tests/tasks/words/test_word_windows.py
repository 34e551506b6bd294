"""Long sentences in windows: the plan, the merge, and prediction through the word tasks."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.words import tags
from nlpzoo.tasks.words.length_sorting import encode_word_sentences
from nlpzoo.tasks.span_ner.readers import SpanSentence
from nlpzoo.tasks.span_ner.task import SpanNERTask
from nlpzoo.tasks.words.conll import TaggedSentence
from nlpzoo.tasks.tagging.task import TaggingTask
from nlpzoo.tasks.text.word_splitting import split_words
from nlpzoo.tasks.words.preprocessor import WordPreprocessor
from nlpzoo.tasks.words.windows import (
    Window,
    merge_span_scores,
    merge_word_values,
    owners,
    parents,
    plan_windows,
    resolve_stride,
)
from nlpzoo.zoo import build_model

FILLER = [f"w{i}" for i in range(20)]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "peter", "blackburn", "##s"] + FILLER


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_plan_covers_every_word_within_budget_and_stride(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 5, rng.integers(1, 60)).tolist()
    budget = int(rng.integers(4, 20))
    stride = int(rng.integers(0, budget))
    windows = plan_windows(counts, budget, stride)
    assert windows[0][0] == 0 and windows[-1][1] == len(counts)
    for (start, end), (next_start, next_end) in zip(windows, windows[1:]):
        assert start < next_start <= end < next_end  # progress, no gap
        assert sum(counts[next_start:end]) <= stride  # the overlap
        assert sum(counts[next_start:end + 1]) <= budget or next_start == end
        # The next window starts as early as the stride and the next word allow.
        if next_start - 1 > start:
            assert sum(counts[next_start - 1:end]) > min(stride, budget - counts[end])
    for start, end in windows:
        assert end - start == 1 or sum(counts[start:end]) <= budget
        # Greedy: the window could not take one more word.
        if end < len(counts):
            assert sum(counts[start:end + 1]) > budget
    if sum(counts) <= budget:
        assert windows == [(0, len(counts))]


@pytest.mark.parametrize("seed", range(10))
def test_owner_is_the_window_with_most_context(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 4, 40).tolist()
    windows = plan_windows(counts, 12, 6)
    owner = owners(windows, len(counts))
    for word in range(len(counts)):
        contexts = [min(word - s, e - 1 - word) if s <= word < e else -1 for s, e in windows]
        assert owner[word] == int(np.argmax(contexts))  # argmax: the first on ties


def test_stride_must_leave_room():
    assert resolve_stride(None, 10) == 4
    with pytest.raises(ValueError, match="stride=8 must be in 0..7"):
        resolve_stride(8, 10)


def test_merge_span_scores_keeps_each_span_from_its_best_window():
    whole = SpanSentence(tuple("abcdef"))
    windows = [SpanSentence(whole.words[s:e], window=Window(whole, 0, s, e))
               for s, e in ((0, 4), (2, 6))]
    # Every span of each window, scored by its window index.
    scores = []
    for k, window in enumerate(windows):
        starts, ends = np.triu_indices(len(window.words))
        scores.append((np.full((len(starts), 1), float(k)), starts, ends))
    [(probabilities, starts, ends)] = merge_span_scores(windows, scores)
    got = {(int(s), int(e)): int(p[0]) for p, s, e in zip(probabilities, starts, ends)}
    for (s, e), k in got.items():
        contexts = [min(s - ws, we - 1 - e) if ws <= s and e < we else -1
                    for ws, we in ((0, 4), (2, 6))]
        assert k == int(np.argmax(contexts)), (s, e)
    assert set(got) == {(s, e) for s in range(6) for e in range(s, 6)
                        if e < 4 or s >= 2}  # every span some window holds
    assert list(zip(starts, ends)) == sorted(zip(starts, ends))


def test_sentences_that_fit_pass_through_unchanged():
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=16)
    sentences = [TaggedSentence(("peter", "w1"), ("B-PER", "O")), TaggedSentence((), ())]
    windows = TaggingTask().prediction_examples(sentences, preprocessor)
    assert windows == sentences and parents(windows) == sentences
    assert merge_word_values(windows, [["x", "y"], []]) == [["x", "y"], []]


# ---------------------------------------------------------------------------------------------
# Through the tasks, with models whose output depends on the word alone
# ---------------------------------------------------------------------------------------------


def _word_ids(features):
    token_ids = np.asarray(features["token_ids"])
    starts = np.asarray(features["word_starts"])
    return np.take_along_axis(token_ids, starts, axis=1), np.asarray(features["word_mask"])


class _WordTagger:
    """Tags "peter" B-PER and "blackburn" I-PER wherever they are; "O" elsewhere.

    `positional=True` also tags every other word whose position in its window
    is 1 modulo 3 I-PER, so that a word that takes its tag from the wrong
    window shows. `decode` is the same in TensorFlow (for the exported graph).
    """

    def __init__(self, positional=False):
        self.positional = positional

    def predict_on_batch(self, features):
        ids, mask = _word_ids(features)
        other = (np.arange(ids.shape[1]) % 3 == 1)[None, :] * 2 if self.positional else 0
        tags = np.where(ids == VOCABULARY.index("peter"), 1, other)
        tags = np.where(ids == VOCABULARY.index("blackburn"), 2, tags)
        return tags * mask

    def decode(self, features):
        tags = tf.numpy_function(lambda *args: self.predict_on_batch(
            dict(zip(("token_ids", "word_starts", "word_mask"), args))).astype(np.int32),
            [features["token_ids"], features["word_starts"], features["word_mask"]], tf.int32)
        return tf.ensure_shape(tags, [None, None])


class _WordSpanModel:
    """Scores "peter blackburn" (a two-word span) as PER; every other span NONE.

    The PER probability falls a little with the span's position in its window,
    so that a span scored by the wrong window shows in its score. Called as a
    model (in the exported graph), it returns the log-probabilities.
    """

    max_span_width = 2

    def predict_on_batch(self, features):
        ids, _ = _word_ids(features)
        batch, words = ids.shape
        probabilities = np.zeros((batch, words, self.max_span_width, 2), np.float32)
        probabilities[..., 0] = 0.99
        probabilities[..., 1] = 0.01
        following = np.concatenate([ids[:, 1:], np.zeros((batch, 1), ids.dtype)], axis=1)
        match = (ids == VOCABULARY.index("peter")) & (following == VOCABULARY.index("blackburn"))
        per = 0.95 - 0.001 * np.arange(words)[None, :]
        probabilities[:, :, 1, 0] = np.where(match, 1 - per, 0.99)
        probabilities[:, :, 1, 1] = np.where(match, per, 0.01)
        return probabilities.reshape(batch, words * self.max_span_width, 2)

    def __call__(self, features, training=False):
        probabilities = tf.numpy_function(lambda *args: self.predict_on_batch(
            dict(zip(("token_ids", "word_starts", "word_mask"), args))),
            [features["token_ids"], features["word_starts"], features["word_mask"]],
            tf.float32)
        return tf.math.log(tf.reshape(probabilities, [tf.shape(features["token_ids"])[0], -1, 2]))


class _ContextTagger:
    """Tags each word by its window's every token, context included: (the sum of the
    row's token ids + the word's position) mod 3. A window encoded with other context
    than its words around it (or none) gets other tags."""

    def predict_on_batch(self, features):
        token_ids = np.asarray(features["token_ids"])
        mask = np.asarray(features["word_mask"])
        total = token_ids.sum(axis=1, keepdims=True)
        return (total + np.arange(mask.shape[1])[None, :]) % 3 * mask

    def decode(self, features):
        tags = tf.numpy_function(lambda *args: self.predict_on_batch(
            dict(zip(("token_ids", "word_mask"), args))).astype(np.int32),
            [features["token_ids"], features["word_mask"]], tf.int32)
        return tf.ensure_shape(tags, [None, None])


def _long_text(num_words, rng):
    """`num_words` words ("w3", "w3s", ...), "Peter Blackburn" at the start, the middle and
    the end, and odd spacing and characters that the clean-up removes."""
    words = [str(rng.choice(FILLER)) + ("s" if rng.random() < 0.3 else "")
             for _ in range(num_words)]
    for position in (0, num_words // 2, num_words - 2):
        words[position:position + 2] = ["Peter", "Black\u200bburn"]
    return "  ".join(words[:10]) + "\t" + " ".join(words[10:]) + " \x07"


def _predict(task, model, text, tmp_path, max_seq_length=32, labels=None):
    path = tmp_path / "input.txt"
    path.write_text(text + "\n", encoding="utf-8")
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=max_seq_length)
    sentences = task.read_prediction_input(str(path), "text")
    output = tmp_path / "output.jsonl"
    task.write_predictions(model, preprocessor, sentences, labels, str(output),
                           batch_size=8)
    [record] = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    return record


def test_a_1000_word_text_gets_a_tag_for_every_word(tmp_path):
    text = _long_text(1000, np.random.default_rng(0))
    task = TaggingTask()
    record = _predict(task, _WordTagger(), text, tmp_path, labels=["O", "B-PER", "I-PER"])
    assert len(record["tags"]) == len(record["words"]) == 1000
    expected = ["B-PER" if w == "Peter" else "I-PER" if w == "Blackburn" else "O"
                for w in record["words"]]
    assert record["tags"] == expected
    entities = [(e["start"], e["end"], e["text"]) for e in record["entities"]]
    assert entities == [(0, 1, "Peter  Black\u200bburn"), (500, 501, "Peter Black\u200bburn"),
                        (998, 999, "Peter Black\u200bburn")]
    for entity in record["entities"]:
        assert text[entity["start_char"]:entity["end_char"]] == entity["text"]


def test_span_ner_windows_find_the_entity_at_the_end(tmp_path):
    text = _long_text(600, np.random.default_rng(1))
    task = SpanNERTask(max_span_width=2)
    record = _predict(task, _WordSpanModel(), text, tmp_path, labels=["NONE", "PER"])
    assert len(record["words"]) == 600
    found = [(e["start"], e["end"], e["label"]) for e in record["entities"]]
    assert found == [(0, 1, "PER"), (300, 301, "PER"), (598, 599, "PER")]
    for entity in record["entities"]:
        assert text[entity["start_char"]:entity["end_char"]] == entity["text"]
        assert 0.9 < entity["score"] <= 0.95


def test_windowed_evaluation_scores_the_whole_sentences():
    rng = np.random.default_rng(2)
    words = tuple(str(w) for w in rng.choice(FILLER, 200))
    words = ("peter", "blackburn") + words + ("peter", "blackburn")
    gold = ("B-PER", "I-PER") + ("O",) * 200 + ("B-PER", "I-PER")
    sentences = [TaggedSentence(words, gold), TaggedSentence(("peter",), ("B-PER",))]
    task = TaggingTask()
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=24)
    labels = ["O", "B-PER", "I-PER"]
    windows = task.prediction_examples(sentences, preprocessor)
    assert len(windows) > 10
    dataset = task.make_dataset(windows, preprocessor, labels, batch_size=4)
    metrics = task.evaluate(_WordTagger(), dataset, windows, labels)
    assert metrics["entity_f1"] == 1.0 and metrics["sentences"] == 2
    # Without windows the last entity is cut off and counts as missed.
    dataset = task.make_dataset(sentences, preprocessor, labels, batch_size=4)
    assert task.evaluate(_WordTagger(), dataset, sentences, labels)["entity_recall"] == \
        pytest.approx(2 / 3)


def test_character_offsets_survive_accents_emoji_and_spacing(tmp_path):
    text = "Z\u00fcrich\ufeff  \U0001F600 peter\u00a0\u00a0Black\u00adburn\x07  Caf\u0065\u0301"
    task = TaggingTask()
    record = _predict(task, _WordTagger(), text, tmp_path, labels=["O", "B-PER", "I-PER"])
    assert record["words"] == ["Z\u00fcrich", "\U0001F600", "peter", "Blackburn",
                               "Cafe\u0301"]
    [entity] = record["entities"]
    assert entity["text"] == "peter\u00a0\u00a0Black\u00adburn"
    assert text[entity["start_char"]:entity["end_char"]] == entity["text"]
    assert record["text"] == text


def _with_all_context(window):
    """`window` as it was made before contexts were cut: every word around it."""
    parent, start, end = window.window.parent, window.window.start, window.window.end
    left = (parent.left_context if start == 0 else ()) + parent.words[:start]
    right = parent.words[end:] + (parent.right_context if end == len(parent.words) else ())
    return dataclasses.replace(window, left_context=left, right_context=right)


def _context_sentences(rng, num_words=300):
    """A long sentence of words of one and two subwords with document context, and a short one."""
    def words(count):
        return tuple(str(rng.choice(FILLER)) + ("s" if rng.random() < 0.4 else "")
                     for _ in range(count))
    long = words(num_words)
    return [TaggedSentence(long, ("O",) * len(long), left_context=words(40),
                           right_context=words(3)),
            TaggedSentence(("peter",), ("O",), left_context=long[-20:])]


@pytest.mark.parametrize("stride", [None, 0, 5])
def test_windows_carry_only_the_context_that_fits_and_encode_as_with_all_of_it(stride):
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=16)
    sentences = _context_sentences(np.random.default_rng(6))
    windows = TaggingTask(stride=stride).prediction_examples(sentences, preprocessor)
    assert len(windows) > 20 and windows[-1] == sentences[-1]
    for window, counts in zip(windows, preprocessor.subword_counts([w.words for w in windows])):
        if window.window:  # at most a word per subword the window leaves free
            free = max(0, 14 - sum(counts))
            assert len(window.left_context) <= free and len(window.right_context) <= free
    full = [_with_all_context(w) for w in windows[:-1]] + windows[-1:]
    encoded, expected = (encode_word_sentences(preprocessor, w) for w in (windows, full))
    assert encoded.keys() == expected.keys()
    for name in encoded:
        assert [row.tolist() for row in encoded[name]] == \
            [row.tolist() for row in expected[name]], name


def test_prediction_of_a_long_sentence_is_the_merge_of_its_windows(tmp_path):
    # The windows with all their context, predicted one by one and merged by owner, give
    # what write_predictions gives (with cut contexts, in batches sorted by length).
    text = _long_text(700, np.random.default_rng(7))
    labels = ["O", "B-PER", "I-PER"]
    task = TaggingTask(stride=4)
    model = _ContextTagger()
    record = _predict(task, model, text, tmp_path, max_seq_length=16, labels=labels)
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=16)
    [sentence] = task.read_prediction_input(str(tmp_path / "input.txt"), "text")
    windows = [_with_all_context(w) for w in task.prediction_examples([sentence], preprocessor)]
    assert len(windows) > 80
    encoded = encode_word_sentences(preprocessor, windows)
    rows = []
    for index in range(len(windows)):
        features = {name: np.asarray(values[index])[None, :] for name, values in encoded.items()}
        rows.append([labels[i] for i in model.predict_on_batch(features)[0]])
    spans = [(w.window.start, w.window.end) for w in windows]
    expected = [rows[k][word - spans[k][0]] for word, k in enumerate(owners(spans, 700))]
    assert record["tags"] == expected
    assert len(set(expected)) == 3


# ---------------------------------------------------------------------------------------------
# The exported graph reads long texts as tools/predict.py does
# ---------------------------------------------------------------------------------------------


def _texts(rng):
    texts = [_long_text(n, rng) for n in (120, 45, 2)]
    return texts + ["", " \x07 ", "Peter Blackburn"]


@pytest.mark.parametrize("stride", [None, 0, 5])
def test_graph_plan_equals_python_plan(stride):
    from nlpzoo.tasks.words.serving_windows import plan_windows as graph_plan

    rng = np.random.default_rng(3)
    counts = [rng.integers(1, 5, n).tolist() for n in (0, 1, 7, 40, 120)]
    rows, starts, ends = (t.numpy().tolist() for t in graph_plan(
        tf.ragged.constant(counts, dtype=tf.int32, ragged_rank=1), 14,
        resolve_stride(stride, 16)))
    expected = [(row, s, e) for row, c in enumerate(counts) if c
                for s, e in plan_windows(c, 14, resolve_stride(stride, 16))]
    assert list(zip(rows, starts, ends)) == expected


@pytest.mark.parametrize("context_sentences", [0, 1])
def test_exported_tagger_equals_predict_on_long_texts(tmp_path, context_sentences, stride=3):
    texts = _texts(np.random.default_rng(4))
    labels = ["O", "B-PER", "I-PER"]
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=16)
    task = TaggingTask(stride=stride, context_sentences=context_sentences)
    # With document context, a model that reads the context: the graph packs the same.
    model = _ContextTagger() if context_sentences else _WordTagger(positional=True)
    inputs = {"text": tf.constant(texts)}
    if context_sentences:  # predict.py's neighbours: the lines around, blank ones skipped
        lines = [text for text in texts if split_words(text)]
        before = {text: lines[k - 1] if k else "" for k, text in enumerate(lines)}
        after = {text: lines[k + 1] if k + 1 < len(lines) else "" for k, text in enumerate(lines)}
        inputs["left_context"] = tf.constant([before.get(text, "") for text in texts])
        inputs["right_context"] = tf.constant([after.get(text, "") for text in texts])
    serve = tf.function(lambda inputs: task.serving_outputs(model, preprocessor, labels,
                                                            **inputs), autograph=False)
    served = {k: v.numpy().tolist() for k, v in serve(inputs).items()}
    path = tmp_path / "input.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    output = tmp_path / "output.jsonl"
    task.write_predictions(model, preprocessor, task.read_prediction_input(
        str(path), "text"), labels, str(output), batch_size=8)
    records = iter(json.loads(line) for line in output.read_text(encoding="utf-8").splitlines())
    for row, text in enumerate(texts):
        if not split_words(text):  # a blank line to predict.py
            assert served["num_words"][row] == 0
            continue
        record = next(records)
        words = served["num_words"][row]
        assert [t.decode() for t in served["tags"][row][:words]] == record["tags"]
        entities = [(served["entity_start"][row][k], served["entity_end"][row][k],
                     served["entity_start_char"][row][k], served["entity_end_char"][row][k])
                    for k in range(served["num_entities"][row])]
        assert entities == [(e["start"], e["end"], e["start_char"], e["end_char"])
                            for e in record["entities"]]
        assert len(entities) >= text.count("Peter")


# slow: the exported tagger's windows are checked above; span NER shares serving_windows
@pytest.mark.slow
def test_exported_span_model_equals_predict_on_long_texts(tmp_path):
    texts = _texts(np.random.default_rng(5))
    labels = ["NONE", "PER"]
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=16)
    task = SpanNERTask(max_span_width=2)
    serve = tf.function(lambda text: task.serving_outputs(_WordSpanModel(), preprocessor,
                                                          labels, text), autograph=False)
    served = {k: v.numpy().tolist() for k, v in serve(tf.constant(texts)).items()}
    path = tmp_path / "input.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    output = tmp_path / "output.jsonl"
    task.write_predictions(_WordSpanModel(), preprocessor, task.read_prediction_input(
        str(path), "text"), labels, str(output), batch_size=8)
    records = iter(json.loads(line) for line in output.read_text(encoding="utf-8").splitlines())
    for row, text in enumerate(texts):
        if not split_words(text):  # a blank line to predict.py
            continue
        record = next(records)
        entities = [(served["entity_start"][row][k], served["entity_end"][row][k],
                     served["entity_start_char"][row][k], served["entity_end_char"][row][k],
                     round(served["entity_score"][row][k], 5))
                    for k in range(served["num_entities"][row])]
        assert entities == [(e["start"], e["end"], e["start_char"], e["end_char"],
                             round(e["score"], 5)) for e in record["entities"]]
        assert len(entities) == text.count("Peter")


# BIOES cuts both edges (IOB2 only the start; its relabelling has a doctest in tasks.tags).
@pytest.mark.parametrize("scheme", [pytest.param("IOB2", marks=pytest.mark.slow), "BIOES"])
def test_crf_loss_is_finite_where_a_window_or_the_training_cut_splits_an_entity(scheme):
    # A 30-word entity in a 60-word sentence: windows of 22 subwords start and end inside it.
    words = tuple(FILLER[i % len(FILLER)] for i in range(60))
    inside = "E" if scheme == "BIOES" else "I"
    gold = ("O",) * 10 + ("B-PER",) + ("I-PER",) * 28 + (f"{inside}-PER",) + ("O",) * 20
    labels = ["O", "B-PER", "I-PER"] + (["E-PER", "S-PER"] if scheme == "BIOES" else [])
    task = TaggingTask(tag_scheme=scheme)
    model = build_model("bert_tiny_crf_tagger", labels=labels, tag_scheme=scheme,
                        vocabulary_size=len(VOCABULARY), num_layers=1, dropout=0.0)
    small = WordPreprocessor(VOCABULARY, max_seq_length=24)
    sentences = [TaggedSentence(words, gold)]

    windows = task.prediction_examples(sentences, small)
    assert any(10 < w.window.start <= 39 for w in windows)  # a window starts inside it
    for window in windows:  # each window's tags read as a sentence of the scheme
        start, end = window.window.start, window.window.end
        assert tags.transition_error(scheme, None, window.tags[0]) is None
        assert tags.transition_error(scheme, window.tags[-1], None) is None
        first, last = max(10, start), min(39, end - 1)  # the entity's part in the window
        assert tags.tags_to_spans(window.tags) == (
            [(first - start, last - start, "PER")] if first <= last else [])

    def loss(dataset):  # eager: no tracing per shape
        return np.mean([float(model.compute_loss(x, y, model(x))) for x, y in dataset])

    windowed = loss(task.make_dataset(windows, small, labels, batch_size=8))
    whole = loss(task.make_dataset(sentences, WordPreprocessor(VOCABULARY, max_seq_length=128),
                                   labels))
    # Per word: a window's loss is like the whole sentence's (an impossible path costs 1e6).
    assert abs(windowed - whole) < 0.5 * whole, (windowed, whole)

    training = task.make_dataset(sentences, small, labels, batch_size=1, training=True)
    assert abs(loss(training) - whole) < 0.5 * whole
