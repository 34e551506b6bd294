"""Cosine top-k search against a brute-force reference."""

import numpy as np
import pytest

from nlpzoo.tasks.sentence_embedding.similarity import cosine_similarities, top_k


def test_cosine_similarities_match_the_definition():
    rng = np.random.default_rng(0)
    queries, corpus = rng.normal(size=(4, 7)), rng.normal(size=(9, 7)) * 3.0
    expected = [[q @ c / (np.linalg.norm(q) * np.linalg.norm(c)) for c in corpus]
                for q in queries]
    np.testing.assert_allclose(cosine_similarities(queries, corpus), expected, atol=1e-12)
    # A zero vector is similar to nothing (and is no division by zero).
    assert cosine_similarities(np.zeros((1, 7)), corpus).tolist() == [[0.0] * 9]


def test_top_k_is_the_best_k_in_order_against_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(20):
        queries, corpus = rng.normal(size=(3, 5)), rng.normal(size=(12, 5))
        k = int(rng.integers(1, 15))
        indices, scores = top_k(queries, corpus, k)
        similarities = cosine_similarities(queries, corpus)
        for row in range(3):
            expected = sorted(range(12), key=lambda i: -similarities[row, i])[:k]
            assert indices[row].tolist() == expected
            np.testing.assert_allclose(scores[row], similarities[row, expected])
        assert indices.shape == (3, min(k, 12))


def test_exact_duplicates_rank_first_and_ties_keep_corpus_order():
    corpus = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [1.0, 1.0]])
    indices, scores = top_k(np.array([[3.0, 0.0]]), corpus, k=3)
    assert indices.tolist() == [[1, 2, 3]]
    np.testing.assert_allclose(scores, [[1.0, 1.0, np.sqrt(0.5)]])
    with pytest.raises(ValueError, match="k must be at least 1"):
        top_k(corpus, corpus, 0)
