import pytest

from nlpzoo.tasks.words.entity_scores import precision_recall_f1, score_entities


def test_counts_by_exact_match_per_sentence_and_type():
    gold = [(0, 0, 1, "PER"), (0, 3, 3, "LOC"), (1, 0, 1, "PER"), (1, 0, 1, "PER")]
    predicted = [(0, 0, 1, "PER"), (0, 3, 4, "LOC"), (2, 0, 1, "PER"), (1, 5, 5, "ORG")]
    scores = score_entities(gold, predicted)
    # Gold counts (1, 0, 1, PER) once; (2, 0, 1, PER) is in another sentence.
    assert scores["support"] == 3
    assert scores["precision"] == pytest.approx(1 / 4)
    assert scores["recall"] == pytest.approx(1 / 3)
    assert scores["f1"] == pytest.approx(2 / 7)
    assert list(scores["per_type"]) == ["LOC", "ORG", "PER"]
    assert scores["per_type"]["PER"] == precision_recall_f1(2, 2, 1)
    assert scores["per_type"]["ORG"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}


def test_zero_denominators_give_zero():
    assert score_entities([], []) == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "per_type": {}
    }
    assert precision_recall_f1(0, 3, 0)["f1"] == 0.0
    assert precision_recall_f1(2, 2, 2) == {
        "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2
    }
