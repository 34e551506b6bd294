"""Top-k cosine search of queries over a corpus of vectors, one block of the corpus at a time.

The full [queries, corpus] similarity matrix is never held: the corpus is
read in blocks of `block_size` rows, and a running top k per query (scores
and corpus indices, [Q, k]) is merged with each block's scores by
`tf.math.top_k`. Memory is O(Q · (k + block_size)) whatever the corpus size,
so a corpus of millions of documents is searched as a stream. With one
block (`block_size >= len(corpus)`) this is the brute-force search.

Ties: `tf.math.top_k` keeps equal scores in the order it sees them, and the
running top k (earlier blocks) comes before the new block, whose rows are in
corpus order: among equal scores the earlier corpus row wins, in every
block size, as `np.argsort(-scores, kind="stable")` orders them.
"""

import numpy as np
import tensorflow as tf

# Corpus rows scored at once: 8,192 × (a few hundred queries) float32 is a few MB.
DEFAULT_BLOCK_SIZE = 8192


def unit_rows(vectors):
    """`vectors` [N, H] as float32 rows of L2 norm 1 (a zero row stays zero).

    Examples:
    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).astype(float).round(6).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    vectors = np.asarray(vectors, np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def block_top_k(queries, corpus, k=10, block_size=DEFAULT_BLOCK_SIZE):
    """The `k` corpus rows most cosine-similar to each query, best first, block by block.

    Args:
        queries: [Q, H] query vectors (normalised here).
        corpus: [N, H] document vectors, or an iterable of [n_i, H] blocks
            (e.g. read from disk), normalised here block by block.
        k: how many to keep per query (all N when N < k).
        block_size: corpus rows scored at once when `corpus` is an array.

    Returns:
        `(indices, scores)`, int64 and float32 [Q, min(k, N)]: corpus row
        indices and cosine similarities, best first; equal scores keep
        corpus order.

    Examples:
    >>> corpus = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    >>> indices, scores = block_top_k(np.array([[1.0, 0.1]]), corpus, k=3, block_size=2)
    >>> indices.tolist(), scores.astype(float).round(3).tolist()
    ([[0, 3, 2]], [[0.995, 0.995, 0.774]])
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    queries = tf.constant(unit_rows(queries))
    if isinstance(corpus, np.ndarray) or not hasattr(corpus, "__next__"):
        corpus = np.asarray(corpus, np.float32)
        blocks = (corpus[start:start + block_size] for start in range(0, len(corpus), block_size))
    else:
        blocks = corpus
    best_scores = tf.zeros([queries.shape[0], 0], tf.float32)
    best_indices = tf.zeros([queries.shape[0], 0], tf.int64)
    offset = 0
    for block in blocks:
        block = unit_rows(block)
        scores = tf.matmul(queries, tf.constant(block), transpose_b=True)
        indices = tf.broadcast_to(tf.range(offset, offset + len(block), dtype=tf.int64),
                                  tf.shape(scores, out_type=tf.int64))
        # The running best first: among equal scores, earlier corpus rows stay ahead.
        best_scores, best_indices = _merge(tf.concat([best_scores, scores], axis=1),
                                           tf.concat([best_indices, indices], axis=1), k)
        offset += len(block)
    if offset == 0:
        raise ValueError("the corpus is empty")
    return best_indices.numpy(), best_scores.numpy()


def _merge(scores, indices, k):
    top = tf.math.top_k(scores, k=min(k, scores.shape[1]), sorted=True)
    return top.values, tf.gather(indices, top.indices, batch_dims=1)
