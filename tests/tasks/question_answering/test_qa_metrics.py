"""SQuAD's exact match and F1 on hand-computed cases (the definitions of Rajpurkar et al.)."""

import pytest

from nlpzoo.tasks.question_answering.metrics import (
    exact_match,
    f1,
    normalize_answer,
    question_scores,
    squad_scores,
)
from nlpzoo.tasks.question_answering.readers import Answer, QAExample


@pytest.mark.parametrize("text, normalized", [
    ("The Broncos", "broncos"),
    ("  Denver\tBroncos\n", "denver broncos"),
    ("an apple a day", "apple day"),
    ("Theatre", "theatre"),                      # "the" inside a word stays
    ("the the", ""),
    ("U.S.A.", "usa"),                           # ASCII punctuation removed, not spaced
    ("rock-'n'-roll", "rocknroll"),
    ("«Paris»", "«paris»"),                      # only ASCII punctuation is removed
    ("A, B and C", "b and c"),
    ("Café", "café"),
])
def test_answers_are_normalised_as_squad_normalises_them(text, normalized):
    assert normalize_answer(text) == normalized


def test_f1_is_the_word_overlap_of_two_answers():
    # "denver broncos won" vs "denver broncos": 2 common of 3 predicted, 2 of 2 gold.
    assert f1("Denver Broncos won", "the Denver Broncos") == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))
    # Repeated words count as often as both have them: "a a b" has 2 of "a a a".
    assert f1("x x y", "x x x") == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))
    assert f1("Broncos", "Panthers") == 0.0
    assert f1("the", "a") == 1.0  # both normalise to nothing
    assert f1("", "Broncos") == 0.0


def test_each_question_takes_its_best_gold_answer():
    assert question_scores("Denver Broncos", ["Broncos", "Denver Broncos", "Denver"]) == (1, 1.0)
    em, score = question_scores("the Denver team", ["Denver Broncos", "team"])
    assert em == 0 and score == pytest.approx(2 * 0.5 * 1 / 1.5)  # "team": p 1/2, r 1


def test_squad_scores_are_percent_means_over_questions():
    examples = [QAExample("q", "c", (Answer("Denver Broncos"), Answer("Broncos"))),
                QAExample("q", "c", (Answer("Carolina Panthers"),)),
                QAExample("q", "c", (Answer("1966"),))]
    scores = squad_scores(["Broncos", "the Panthers", "1967"], examples)
    assert scores["total"] == 3
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)  # Panthers: p 1, r 1/2
    assert "HasAns_f1" not in scores


def test_unanswerable_questions_score_only_the_empty_answer():
    examples = [QAExample("q", "c", (Answer("Broncos"),)),
                QAExample("q", "c", is_impossible=True),
                QAExample("q", "c", is_impossible=True)]
    scores = squad_scores(["Broncos", "", "Panthers"], examples)
    assert scores["exact_match"] == pytest.approx(200 / 3)
    assert (scores["HasAns_exact_match"], scores["HasAns_total"]) == (100.0, 1)
    assert (scores["NoAns_exact_match"], scores["NoAns_f1"], scores["NoAns_total"]) == (50.0, 50.0, 2)


def test_a_prediction_per_question_is_required():
    with pytest.raises(ValueError, match="1 predictions for 2 questions"):
        squad_scores(["x"], [QAExample("q", "c"), QAExample("q", "c")])


def test_exact_match_ignores_case_articles_and_punctuation_only():
    assert exact_match("The Eiffel Tower.", "eiffel tower")
    assert not exact_match("Eiffel Towers", "eiffel tower")


def test_an_answer_that_normalises_to_nothing_scores_as_each_official_script_scores_it():
    # SQuAD v1.1's development set has the gold answer "." three times.
    v1 = [QAExample("q", "c", (Answer("."),))]
    assert squad_scores([","], v1) == {"exact_match": 100.0, "f1": 0.0, "total": 1}
    v2 = v1 + [QAExample("q", "c", is_impossible=True)]
    scores = squad_scores([",", ""], v2)
    assert (scores["exact_match"], scores["f1"]) == (100.0, 100.0)
