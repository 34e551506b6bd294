"""SQuAD's exact match and F1, from their definition (Rajpurkar et al. 2016, 2018).

An answer is normalised before it is compared: lower case, ASCII punctuation
(`string.punctuation`) removed, the articles "a", "an" and "the" removed as
words, whitespace collapsed. Exact match is 1 when the normalised prediction
equals a normalised gold answer; F1 is the harmonic mean of the precision and
recall of the prediction's words (a bag of words: repeats count) against a
gold answer's. Each question takes the maximum over its gold answers, and the
scores are means over questions, in percent, as the official scripts print
them. An unanswerable question (SQuAD v2.0) has the one gold answer "": only
the empty prediction scores 1 on it; `HasAns_*` and `NoAns_*` split the
scores by kind when the data has unanswerable questions.

The two official scripts differ in one corner: when a prediction and a gold
answer both normalise to nothing (a gold answer "." exists in SQuAD v1.1's
development set), v2.0's F1 is 1 and v1.1's is 0 (no word in common). Data
without unanswerable questions is scored as v1.1's script scores it,
other data as v2.0's (`empty_matches_empty`).
"""

import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """SQuAD's normalisation of an answer.

    >>> normalize_answer("The  Denver Broncos!"), normalize_answer("an  apple, a day")
    ('denver broncos', 'apple day')
    """
    text = "".join(character for character in text.lower() if character not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold):
    """1 when the two normalised answers are equal, else 0.

    >>> exact_match("the Broncos", "Broncos."), exact_match("Broncos", "Denver Broncos")
    (1, 0)
    """
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction, gold, empty_matches_empty=True):
    """The word-overlap F1 of two answers; 0 when only one is empty, and when both are:
    1 (SQuAD v2.0's script) or, with `empty_matches_empty=False`, 0 (v1.1's).

    >>> round(f1("Denver Broncos won", "the Denver Broncos"), 4)  # p 2/3, r 2/2
    0.8
    >>> f1("", ""), f1("", "Broncos"), f1(",", ".", empty_matches_empty=False)
    (1.0, 0.0, 0.0)
    """
    predicted, wanted = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not predicted or not wanted:
        return float(predicted == wanted and empty_matches_empty)
    common = sum((collections.Counter(predicted) & collections.Counter(wanted)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def question_scores(prediction, gold_answers, empty_matches_empty=True):
    """`(exact match, F1)` of one prediction: the best over the gold answers (see `f1`).

    >>> question_scores("Broncos", ["Denver Broncos", "Broncos"])
    (1, 1.0)
    """
    gold_answers = list(gold_answers) or [""]
    return (max(exact_match(prediction, gold) for gold in gold_answers),
            max(f1(prediction, gold, empty_matches_empty) for gold in gold_answers))


def squad_scores(predictions, examples):
    """`exact_match` and `f1` (percent) of `predictions` (one answer per example, in order),
    `total`; with unanswerable questions also `HasAns_*` and `NoAns_*`.

    Args:
        predictions: the predicted answer texts ("" for no answer).
        examples: `QAExample`s (their `answer_texts` are the gold answers).

    Examples:
    >>> from nlpzoo.tasks.question_answering.readers import Answer, QAExample
    >>> examples = [QAExample("q", "c", (Answer("Denver Broncos"),)),
    ...             QAExample("q", "c", is_impossible=True)]
    >>> scores = squad_scores(["Broncos", ""], examples)  # F1 2/3 and 1
    >>> {name: round(value, 2) for name, value in scores.items()}
    {'exact_match': 50.0, 'f1': 83.33, 'total': 2, 'HasAns_exact_match': 0.0, 'HasAns_f1': 66.67, 'HasAns_total': 1, 'NoAns_exact_match': 100.0, 'NoAns_f1': 100.0, 'NoAns_total': 1}
    """
    predictions, examples = list(predictions), list(examples)
    if len(predictions) != len(examples):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} questions")
    version_2 = any(example.is_impossible for example in examples)
    scores = [question_scores(p, e.answer_texts, empty_matches_empty=version_2)
              for p, e in zip(predictions, examples)]
    result = _means(scores)
    if version_2:
        for name, keep in (("HasAns", False), ("NoAns", True)):
            part = [s for s, e in zip(scores, examples) if e.is_impossible == keep]
            result.update({f"{name}_{key}": value for key, value in _means(part).items()})
    return result


def _means(scores):
    total = len(scores)
    return {"exact_match": 100.0 * sum(s[0] for s in scores) / total if total else 0.0,
            "f1": 100.0 * sum(s[1] for s in scores) / total if total else 0.0,
            "total": total}
