"""Cosine similarity search over embeddings (NumPy): the closest texts to each query."""

import numpy as np


def cosine_similarities(queries, corpus):
    """[Q, N] cosine similarities between the rows of `queries` [Q, H] and `corpus` [N, H].

    Rows are L2-normalised first (a zero row has similarity 0 with everything),
    so the vectors need not be normalised already. Computed in float64.

    Examples:
    >>> cosine_similarities(np.array([[1.0, 0.0]]), np.array([[2.0, 0.0], [1.0, 1.0]])).round(4)
    array([[1.    , 0.7071]])
    """
    def unit(rows):
        rows = np.asarray(rows, np.float64)
        norms = np.linalg.norm(rows, axis=-1, keepdims=True)
        return rows / np.maximum(norms, 1e-12)

    return unit(queries) @ unit(corpus).T


def top_k(queries, corpus, k=5):
    """The `k` corpus rows most cosine-similar to each query, best first.

    Args:
        queries: [Q, H] query embeddings.
        corpus: [N, H] embeddings to search.
        k: how many to keep per query (all N when N < k).

    Returns:
        `(indices, scores)`, each [Q, min(k, N)]: corpus row indices and
        their cosine similarities, best first; equal scores keep corpus order.

    Examples:
    >>> corpus = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> indices, scores = top_k(np.array([[1.0, 0.1]]), corpus, k=2)
    >>> indices.tolist(), scores.round(3).tolist()
    ([[0, 2]], [[0.995, 0.774]])
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    similarities = cosine_similarities(queries, corpus)
    order = np.argsort(-similarities, axis=-1, kind="stable")[:, :k]
    return order, np.take_along_axis(similarities, order, axis=-1)
