"""The block top-k search equals the brute force (`sentence_embedding.top_k`), ties included."""

import numpy as np
import pytest

from nlpzoo.tasks.retrieval import block_top_k, rank_and_score, retrieval_metrics
from nlpzoo.tasks.retrieval.metrics import CUTOFFS
from nlpzoo.tasks.sentence_embedding import cosine_similarities, top_k


@pytest.mark.parametrize("block_size", [1, 3, 64, 999, 1000, 5000])
def test_random_vectors_give_the_brute_force_ranking(block_size):
    rng = np.random.default_rng(block_size)
    queries, corpus = rng.normal(size=(9, 24)), rng.normal(size=(1000, 24))
    indices, scores = block_top_k(queries, corpus, k=10, block_size=block_size)
    expected_indices, expected_scores = top_k(queries, corpus, k=10)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-6)


@pytest.mark.parametrize("block_size", [1, 2, 5, 17, 400])
def test_ties_go_to_the_earlier_corpus_row_in_every_block_size(block_size):
    # Vectors of -1/0/1 entries: many exactly equal cosines (duplicated rows too).
    rng = np.random.default_rng(11)
    corpus = rng.integers(-1, 2, size=(400, 3)).astype(float)
    queries = np.array([[1, 1, 0], [1, 0, 0], [1, -1, 1], [0, 1, 1], [1, 1, 1], [-1, 0, 1]], float)
    indices, _ = block_top_k(queries, corpus, k=25, block_size=block_size)
    similarities = cosine_similarities(queries, corpus).astype(np.float32)
    assert len(np.unique(similarities.round(5))) < 20  # the case is full of ties
    expected = np.argsort(-similarities, axis=-1, kind="stable")[:, :25]
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_array_equal(indices, block_top_k(queries, corpus, k=25,
                                                       block_size=400)[0])


def test_a_stream_of_blocks_and_fewer_documents_than_k():
    rng = np.random.default_rng(5)
    queries, corpus = rng.normal(size=(3, 8)), rng.normal(size=(7, 8))
    stream = iter([corpus[:2], corpus[2:5], corpus[5:]])
    indices, scores = block_top_k(queries, stream, k=10)
    assert indices.shape == (3, 7)
    np.testing.assert_array_equal(indices, top_k(queries, corpus, k=10)[0])


def test_rank_and_score_equals_the_metrics_of_the_brute_force_ranking():
    rng = np.random.default_rng(2)
    queries, documents = rng.normal(size=(30, 6)), rng.normal(size=(200, 6))
    relevant = [set(rng.choice(200, size=rng.integers(1, 4), replace=False).tolist())
                for _ in range(30)]
    ranked, _ = top_k(queries, documents, k=max(CUTOFFS.values()))
    expected = retrieval_metrics([row.tolist() for row in ranked], relevant)
    got = rank_and_score(queries, documents, relevant, block_size=7)
    assert got == {**expected, "documents": 200}


def test_bad_arguments():
    with pytest.raises(ValueError, match="k must be at least 1"):
        block_top_k(np.ones((1, 2)), np.ones((3, 2)), k=0)
    with pytest.raises(ValueError, match="the corpus is empty"):
        block_top_k(np.ones((1, 2)), iter([]), k=3)
