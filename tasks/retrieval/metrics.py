"""Ranking metrics of retrieval: MRR@k, Recall@k and NDCG@k from ranked lists and relevant sets.

Each query has a ranked list of document ids (best first; as long as the
search returned, at least the largest cut-off for exact figures) and a set
of relevant document ids (binary relevance). A query's scores:

- reciprocal rank @k: 1 / rank of the first relevant document within the
  top k, 0 when none is there;
- recall @k: the fraction of its relevant documents within the top k
  (sentence-transformers' `InformationRetrievalEvaluator` counts it so);
- NDCG @k: DCG = Σ over relevant documents at rank r ≤ k of 1 / log2(r + 1),
  divided by the DCG of an ideal list (every relevant document first).

Ties between documents of equal score are broken by whoever made the ranked
list (`tasks.retrieval.search` puts the earlier corpus document first); these
functions score the list as it is.
"""

import math

import numpy as np

# The figures every retrieval evaluation reports, and the cut-off of each.
CUTOFFS = {"mrr_at_10": 10, "recall_at_1": 1, "recall_at_10": 10, "ndcg_at_10": 10}


def reciprocal_rank(ranked, relevant, k=10):
    """1 / (rank of the first relevant id in the top `k` of `ranked`), 0 without one.

    Examples:
    >>> reciprocal_rank(["d3", "d1", "d2"], {"d1", "d2"})
    0.5
    >>> reciprocal_rank(["d3", "d1"], {"d1"}, k=1)
    0.0
    """
    for rank, document in enumerate(list(ranked)[:k], 1):
        if document in relevant:
            return 1.0 / rank
    return 0.0


def recall(ranked, relevant, k=10):
    """The fraction of the `relevant` ids found in the top `k` of `ranked`.

    Examples:
    >>> recall(["d3", "d1", "d2"], {"d1", "d4"}, k=2)
    0.5
    """
    if not relevant:
        raise ValueError("a query needs at least one relevant document")
    return len(set(list(ranked)[:k]) & set(relevant)) / len(relevant)


def ndcg(ranked, relevant, k=10):
    """Normalised discounted cumulative gain at `k`, binary relevance.

    Examples:
    >>> round(ndcg(["d3", "d1"], {"d1"}), 4)  # 1/log2(3) against 1/log2(2)
    0.6309
    >>> round(ndcg(["d1", "d3", "d2"], {"d1", "d2"}), 4)  # (1 + 1/2) / (1 + 1/log2(3))
    0.9197
    """
    if not relevant:
        raise ValueError("a query needs at least one relevant document")
    gains = sum(1.0 / math.log2(rank + 1)
                for rank, document in enumerate(list(ranked)[:k], 1) if document in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return gains / ideal


def retrieval_metrics(rankings, relevant):
    """The mean over queries of MRR@10, Recall@1, Recall@10 and NDCG@10, and the query count.

    Args:
        rankings: one ranked list of document ids per query (best first).
        relevant: one set (or list) of relevant document ids per query.

    Returns:
        `{"mrr_at_10", "recall_at_1", "recall_at_10", "ndcg_at_10"}` floats
        and `"queries"`, their number.

    Examples:
    >>> scores = retrieval_metrics([["a", "b"], ["b", "a"]], [{"a"}, {"a"}])
    >>> scores["mrr_at_10"], scores["recall_at_1"], scores["recall_at_10"]
    (0.75, 0.5, 1.0)
    """
    if len(rankings) != len(relevant):
        raise ValueError(f"{len(rankings)} rankings for {len(relevant)} queries")
    if not rankings:
        raise ValueError("no queries to score")
    score_of = {"mrr_at_10": reciprocal_rank, "recall_at_1": recall, "recall_at_10": recall,
                "ndcg_at_10": ndcg}
    scores = {name: float(np.mean([score_of[name](ranked, set(wanted), k)
                                   for ranked, wanted in zip(rankings, relevant)]))
              for name, k in CUTOFFS.items()}
    scores["queries"] = len(rankings)
    return scores
