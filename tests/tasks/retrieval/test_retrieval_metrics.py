"""MRR@10, Recall@k and NDCG@10 against hand-computed cases."""

import math

import pytest

from nlpzoo.tasks.retrieval import ndcg, recall, reciprocal_rank, retrieval_metrics


def test_several_relevant_documents():
    ranked = ["d5", "d2", "d9", "d7", "d1"]
    relevant = {"d2", "d7", "d8"}  # d8 never retrieved
    assert reciprocal_rank(ranked, relevant) == 0.5
    assert recall(ranked, relevant, k=1) == 0.0
    assert recall(ranked, relevant, k=10) == pytest.approx(2 / 3)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(ranked, relevant) == pytest.approx(dcg / ideal)


def test_a_relevant_document_below_the_cutoff_counts_for_nothing():
    ranked = [f"d{i}" for i in range(20)]
    relevant = {"d10"}  # rank 11
    assert reciprocal_rank(ranked, relevant) == 0.0
    assert recall(ranked, relevant, k=10) == 0.0
    assert ndcg(ranked, relevant) == 0.0
    assert reciprocal_rank(ranked, relevant, k=11) == pytest.approx(1 / 11)
    assert recall(ranked, {"d9", "d10"}, k=10) == 0.5
    assert ndcg(ranked, {"d9", "d10"}) == pytest.approx(
        (1 / math.log2(11)) / (1 + 1 / math.log2(3)))


def test_more_relevant_documents_than_the_cutoff_make_an_ideal_list_of_ten():
    ranked = [f"d{i}" for i in range(12)]
    relevant = set(ranked)
    assert ndcg(ranked, relevant) == 1.0
    assert recall(ranked, relevant, k=10) == pytest.approx(10 / 12)


def test_the_mean_over_queries():
    scores = retrieval_metrics(
        [["a", "b", "c"], ["c", "a", "b"], ["b", "c", "a"], ["x"] * 1 + ["y"]],
        [{"a"}, {"a"}, {"a"}, {"z"}])
    assert scores["mrr_at_10"] == pytest.approx((1 + 1 / 2 + 1 / 3 + 0) / 4)
    assert scores["recall_at_1"] == 0.25
    assert scores["recall_at_10"] == 0.75
    assert scores["ndcg_at_10"] == pytest.approx(
        (1 + 1 / math.log2(3) + 1 / math.log2(4) + 0) / 4)
    assert scores["queries"] == 4


def test_ties_are_scored_as_the_search_ordered_them():
    # Two documents of equal score: the ranked list (earlier corpus row first) decides.
    assert reciprocal_rank([0, 1], {1}) == 0.5
    assert reciprocal_rank([1, 0], {1}) == 1.0


def test_bad_input():
    with pytest.raises(ValueError, match="at least one relevant"):
        recall(["a"], set())
    with pytest.raises(ValueError, match="2 rankings for 1 queries"):
        retrieval_metrics([["a"], ["b"]], [{"a"}])
