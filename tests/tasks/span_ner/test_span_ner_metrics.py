import random

import pytest

from nlpzoo.tasks.span_ner.metrics import span_scores
from nlpzoo.tasks.span_ner.readers import SpanSentence
from nlpzoo.tasks.tagging.metrics import entity_scores
from nlpzoo.tasks.words.tags import tags_to_spans

TYPES = ("PER", "LOC", "ORG")


def _random_iob2(rng, length):
    """A random valid IOB2 sequence: I-x only right after B-x or I-x."""
    tags = []
    for _ in range(length):
        choices = ["O", "O", "O"] + [f"B-{kind}" for kind in TYPES]
        if tags and tags[-1] != "O":
            choices += [f"I-{tags[-1][2:]}"] * 3
        tags.append(rng.choice(choices))
    return tags


def _perturbed_iob2(rng, tags, rate=0.3):
    """A valid IOB2 prediction close to `tags`: some words re-tagged, then each I-x that no
    longer continues an x entity turned into B-x."""
    tags = [_random_iob2(rng, 1)[0] if rng.random() < rate else tag for tag in tags]
    for position, tag in enumerate(tags):
        previous = tags[position - 1] if position else "O"
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tags[position] = "B-" + tag[2:]
    return tags


def _assert_is_iob2(tags):
    for position, tag in enumerate(tags):
        if tag.startswith("I-"):
            assert position and tags[position - 1][2:] == tag[2:], tags


def _assert_equal_to_entity_scores(true, pred):
    for tags in true + pred:
        _assert_is_iob2(tags)
    expected = entity_scores(true, pred)
    got = span_scores([tags_to_spans(t) for t in true], [tags_to_spans(p) for p in pred])
    for key in ("precision", "recall", "f1"):
        assert got[key] == pytest.approx(expected[key], abs=1e-12)
    assert got["support"] == expected["support"]
    assert list(got["per_type"]) == list(expected["per_type"])
    for entity_type, expected_scores in expected["per_type"].items():
        for key in ("precision", "recall", "f1"):
            assert got["per_type"][entity_type][key] == pytest.approx(
                expected_scores[key], abs=1e-12
            )
        assert got["per_type"][entity_type]["support"] == expected_scores["support"]


def test_equals_entity_scores_on_random_iob2_batches():
    rng = random.Random(0)
    sequences = 0
    for _ in range(400):
        true = [_random_iob2(rng, rng.randint(0, 15)) for _ in range(rng.randint(1, 8))]
        pred = [_perturbed_iob2(rng, tags) for tags in true]
        _assert_equal_to_entity_scores(true, pred)
        sequences += len(true)
    assert sequences >= 1000


def test_equals_entity_scores_on_one_large_random_batch():
    rng = random.Random(1)
    true = [_random_iob2(rng, rng.randint(0, 20)) for _ in range(1500)]
    pred = [_perturbed_iob2(rng, tags) for tags in true]
    _assert_equal_to_entity_scores(true, pred)


# ---------------------------------------------------------------------------------------------
# Hand-checked cases
# ---------------------------------------------------------------------------------------------


def test_hand_checked_nested_case():
    gold = [
        [(0, 2, "ORG"), (0, 1, "ORG"), (4, 4, "DATE")],
        [(1, 1, "PER")],
    ]
    predicted = [
        [(0, 2, "ORG", 0.9), (0, 1, "ORG", 0.8), (4, 5, "DATE", 0.7)],  # DATE end is wrong
        [(1, 1, "LOC", 0.6), (3, 3, "PER", 0.55)],  # right place, wrong type; wrong place
    ]
    scores = span_scores(gold, predicted)
    # 2 correct of 5 predicted, of 4 gold.
    assert scores["precision"] == 2 / 5 and scores["recall"] == 2 / 4
    assert scores["f1"] == pytest.approx(2 * 0.4 * 0.5 / 0.9)
    assert scores["support"] == 4
    assert scores["per_type"] == {
        "DATE": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
        "LOC": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0},
        "ORG": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2},
        "PER": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
    }


def test_sentences_are_kept_apart_and_duplicates_count_once():
    # The same span in another sentence is not a match.
    assert span_scores([[(0, 0, "PER")], []], [[], [(0, 0, "PER")]])["f1"] == 0.0
    scores = span_scores([[(0, 0, "PER"), (0, 0, "PER")]], [[(0, 0, "PER", 0.9), (0, 0, "PER")]])
    assert (scores["precision"], scores["recall"], scores["support"]) == (1.0, 1.0, 1)


def test_zero_division_and_empty_input():
    empty = span_scores([], [])
    assert empty == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "per_type": {}}
    no_predictions = span_scores([[(0, 1, "PER")]], [[]])
    assert (no_predictions["precision"], no_predictions["recall"], no_predictions["f1"]) == (
        0.0,
        0.0,
        0.0,
    )
    no_gold = span_scores([[]], [[(0, 1, "PER")]])
    assert no_gold["recall"] == 0.0 and no_gold["per_type"]["PER"]["support"] == 0


def test_accepts_span_sentences():
    gold = [SpanSentence(("United", "Airlines", "Holding"), [(0, 2, "ORG"), (0, 1, "ORG")])]
    assert span_scores(gold, [[(0, 1, "ORG", 0.7)]])["recall"] == 0.5


def test_errors():
    with pytest.raises(ValueError, match="1 gold sentences but 2 predicted"):
        span_scores([[]], [[], []])
    with pytest.raises(ValueError, match="predicted sentence 0"):
        span_scores([[]], [[(0, 1)]])
