"""Prompt classification's class scores against a brute-force computation with the
fill-mask model of the same checkpoint.

The fixture tests/fixtures/tiny_bert_mlm is a tiny BertForMaskedLM whose fill-mask logits
equal transformers' (tests/tasks/fill_mask/test_fill_mask_parity.py). Brute force: the
pattern is filled in by hand with n "[MASK]" tokens, the fill-mask model gives the
logits at them, a NumPy log-softmax over the whole vocabulary, and each label word's
score is the mean log-probability of its pieces at the first masks; several patterns
average those scores.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.fill_mask.preprocessor import model_inputs
from nlpzoo.tasks.prompt_classification.preprocessor import PromptPreprocessor
from nlpzoo.tasks.text.text_readers import ClassificationExample
from nlpzoo.zoo import load_pretrained
from tests.helpers.paths import ROOT

CHECKPOINT = os.path.join(ROOT, "tests", "fixtures", "tiny_bert_mlm")
TEXTS = ["The cat sat on the mat", "she was happy in the big house",
         "they walk to the river at night", "my dog"]
PAIRS = ["the dog was sad", "he read a book", "Paris is a city", "the cat sat"]
# float32 on both sides, the same layers: only the order of sums differs.
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def fill_mask():
    return load_pretrained(CHECKPOINT, "fill_mask")


def _prompt_model(patterns, verbalizer, **options):
    return load_pretrained(CHECKPOINT, "prompt_classification", patterns=patterns,
                           verbalizer=verbalizer, **options)


def _log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _brute_force(fill_mask, pattern, text, text_pair, word_pieces):
    """Each label's mean log-probability at the masks of `pattern` filled by hand."""
    masks = max(len(pieces) for pieces in word_pieces)
    filled = (pattern.replace("[MASK]", " ".join(["[MASK]"] * masks))
              .replace("{text_pair}", text_pair or "").replace("{text}", text))
    features = fill_mask.preprocessor(tf.constant([filled]))
    assert int(features["num_masks_kept"][0]) == masks
    log_probabilities = _log_softmax(fill_mask.predict_on_batch(model_inputs(features))[0])
    return np.array([np.mean([log_probabilities[j, piece] for j, piece in enumerate(pieces)])
                     for pieces in word_pieces]), features["token_ids"].numpy()[0]


def _prompt_scores(model, texts, pairs=None):
    features = model.preprocessor(tf.constant(texts),
                                  None if pairs is None else tf.constant(pairs))
    return np.asarray(model.predict_on_batch(features), np.float64), features


def _word_pieces(model):
    return model.preprocessor.label_pieces()


def test_single_piece_words_score_their_log_probability_at_the_mask(fill_mask):
    pattern = "{text} . it was [MASK] ."
    model = _prompt_model([pattern], {"neg": "sad", "pos": "happy", "size": "big"})
    pieces = _word_pieces(model)
    assert [len(word) for word in pieces] == [1, 1, 1]
    scores, features = _prompt_scores(model, TEXTS)
    for row, text in enumerate(TEXTS):
        expected, token_ids = _brute_force(fill_mask, pattern, text, None, pieces)
        np.testing.assert_allclose(scores[row], expected, atol=TOLERANCE)
        # The same sequence as the hand-filled text, whatever the batch pads it to.
        length = int(features["padding_mask"].numpy()[row, :, 0].sum())
        np.testing.assert_array_equal(features["token_ids"].numpy()[row, :length, 0],
                                      token_ids[:length])
    assert model.label_names == ["neg", "pos", "size"]


def test_multi_piece_words_score_the_mean_of_their_pieces_at_the_first_masks(fill_mask):
    pattern = "{text} , [MASK] ."
    # unable = un ##able, plays = play ##s, reading = read ##ing: n = 2 masks.
    verbalizer = {"a": "happy", "b": "unable", "c": "plays", "d": "reading"}
    model = _prompt_model([pattern], verbalizer)
    pieces = _word_pieces(model)
    assert [len(word) for word in pieces] == [1, 2, 2, 2]
    assert model.preprocessor.num_masks == 2
    scores, _ = _prompt_scores(model, TEXTS)
    for row, text in enumerate(TEXTS):
        expected, _ = _brute_force(fill_mask, pattern, text, None, pieces)
        np.testing.assert_allclose(scores[row], expected, atol=TOLERANCE)


def test_pairs_fill_both_slots(fill_mask):
    pattern = "{text} ? [MASK] , {text_pair}"
    model = _prompt_model([pattern], {"0": "sad", "1": "happy"})
    assert model.task.serving_inputs() == ("text", "text_pair")
    scores, _ = _prompt_scores(model, TEXTS, PAIRS)
    for row, (text, pair) in enumerate(zip(TEXTS, PAIRS)):
        expected, _ = _brute_force(fill_mask, pattern, text, pair, _word_pieces(model))
        np.testing.assert_allclose(scores[row], expected, atol=TOLERANCE)


def test_several_patterns_average_the_class_scores(fill_mask):
    patterns = ["{text} . it was [MASK] .", "[MASK] : {text}", "{text} , [MASK] day !"]
    verbalizer = {"x": "unable", "y": "happy", "z": "old"}
    model = _prompt_model(patterns, verbalizer)
    pieces = _word_pieces(model)
    scores, features = _prompt_scores(model, TEXTS)
    assert features["token_ids"].shape[-1] == 3
    for row, text in enumerate(TEXTS):
        expected = np.mean([_brute_force(fill_mask, pattern, text, None, pieces)[0]
                            for pattern in patterns], axis=0)
        np.testing.assert_allclose(scores[row], expected, atol=TOLERANCE)


def test_predict_takes_raw_strings_and_gives_the_softmax_of_the_scores():
    model = _prompt_model(["{text} . it was [MASK] ."], {"neg": "sad", "pos": "happy"})
    scores, _ = _prompt_scores(model, TEXTS)
    predicted = model.predict(TEXTS)
    probabilities = np.exp(scores - scores.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    for record, row in zip(predicted, probabilities):
        assert record["label"] == ["neg", "pos"][int(np.argmax(row))]
        np.testing.assert_allclose([record["scores"]["neg"], record["scores"]["pos"]], row,
                                   atol=1e-6)


def test_a_long_text_is_truncated_but_the_pattern_and_masks_are_kept():
    vocabulary = [line.strip() for line in open(os.path.join(CHECKPOINT, "vocab.txt"))]
    preprocessor = PromptPreprocessor(vocabulary, max_seq_length=12,
                                      patterns=["{text} it was [MASK] .", "[MASK] : {text}"],
                                      label_words=["happy", "unable"])
    features = preprocessor(tf.constant(["the cat sat on the mat " * 5, "my dog"]))
    ids, positions = features["token_ids"].numpy(), features["mask_positions"].numpy()
    mask_id, sep_id = vocabulary.index("[MASK]"), vocabulary.index("[SEP]")
    words = [vocabulary.index(word) for word in ("it", "was")]
    assert ids.shape[1] == 12
    # The first pattern: [CLS] + 5 text pieces + it was [MASK] [MASK] . [SEP] = 12.
    assert ids[0, 6:8, 0].tolist() == words
    assert ids[0, positions[0, :, 0], 0].tolist() == [mask_id, mask_id] == ids[0, 8:10, 0].tolist()
    assert ids[0, 11, 0] == sep_id
    # The second: [CLS] [MASK] [MASK] : + 7 text pieces + [SEP].
    assert positions[0, :, 1].tolist() == [1, 2] and ids[0, 11, 1] == sep_id
    # A short text: each pattern as long as it is, padded to the longer.
    assert features["padding_mask"].numpy()[1].sum(axis=0).tolist() == [9, 7]


def test_the_verbalizer_needs_a_word_for_every_label_of_the_data():
    task = _prompt_model(["{text} [MASK]"], {"a": "happy", "b": "sad"}).task
    examples = [ClassificationExample("x", "a", source="d.tsv", line=1),
                ClassificationExample("y", "c", source="d.tsv", line=2)]
    with pytest.raises(ValueError, match=r"^d.tsv:2: the verbalizer has no word for the label\(s\) c "):
        task.label_names(examples)
    pairs = [ClassificationExample("x", "a", text_pair="z", source="d.tsv", line=1)]
    with pytest.raises(ValueError, match="d.tsv:1: the data holds text pairs but the patterns "
                                         "have no {text_pair} slot"):
        task.adapt(pairs)


@pytest.mark.parametrize("words, message", [
    (["happy", "zebra"], "--verbalizer: the word 'zebra' is not in the vocabulary"),
    (["happy", "Happy"], "--verbalizer: the words 'happy' and 'Happy' are the same word pieces"),
])
def test_label_words_the_vocabulary_cannot_tell_apart_are_refused(words, message):
    vocabulary = [line.strip() for line in open(os.path.join(CHECKPOINT, "vocab.txt"))]
    preprocessor = PromptPreprocessor(vocabulary, patterns=["{text} [MASK]"], label_words=words)
    with pytest.raises(ValueError, match=message):
        preprocessor(tf.constant(["my dog"]))


@pytest.mark.parametrize("pattern, message", [
    ("{text} it was .", "pattern '{text} it was .': 0 [MASK] slots; a pattern has exactly one"),
    ("{text} [MASK] [MASK]", "2 [MASK] slots"),
    ("{text} [MASK] {label}", "unknown slot {label}"),
    ("[MASK] only", "no {text} slot"),
])
def test_bad_patterns_are_refused_in_one_line(pattern, message):
    from nlpzoo.tasks.registry import get_task

    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("{", r"\{")) as error:
        get_task("prompt_classification", patterns=[pattern], verbalizer="a:b,c:d")
    assert "\n" not in str(error.value)
