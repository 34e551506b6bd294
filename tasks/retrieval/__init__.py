"""Retrieval: a corpus and its queries, top-k cosine search in blocks, MRR/Recall/NDCG."""

from nlpzoo.tasks.retrieval.corpus import Document, Query, read_corpus, read_queries
from nlpzoo.tasks.retrieval.evaluation import (
    SEARCH_DEPTH,
    embed_texts,
    pairs_as_retrieval,
    rank_and_score,
)
from nlpzoo.tasks.retrieval.metrics import CUTOFFS, ndcg, recall, reciprocal_rank, retrieval_metrics
from nlpzoo.tasks.retrieval.search import DEFAULT_BLOCK_SIZE, block_top_k, unit_rows

__all__ = [
    "CUTOFFS",
    "DEFAULT_BLOCK_SIZE",
    "Document",
    "Query",
    "SEARCH_DEPTH",
    "block_top_k",
    "embed_texts",
    "ndcg",
    "pairs_as_retrieval",
    "rank_and_score",
    "read_corpus",
    "read_queries",
    "recall",
    "reciprocal_rank",
    "retrieval_metrics",
    "unit_rows",
]
