"""Retrieval evaluation: embed queries and documents, search the top 10, score the rankings."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.io.progress import track
from nlpzoo.tasks.retrieval.metrics import CUTOFFS, retrieval_metrics
from nlpzoo.tasks.retrieval.search import DEFAULT_BLOCK_SIZE, block_top_k
from nlpzoo.tasks.text.text_pipeline import make_dataset
from nlpzoo.tasks.text.text_readers import ClassificationExample

# How deep the search goes: the largest cut-off of the reported figures.
SEARCH_DEPTH = max(CUTOFFS.values())


def embed_texts(embed, preprocessor, texts, batch_size=64, what="embedding"):
    """float32 [len(texts), H]: `embed(features)` of every text, in order.

    Args:
        embed: encoder features (`Encoder.INPUTS`) → [B, H] vectors, e.g. a
            `BiEncoder`'s `embed` or a `SentenceEmbedder`.
        preprocessor: the model's `TextPreprocessor` (each text packed alone).
        texts: strings.
        batch_size: texts per batch.
        what: the progress line's word.

    Examples:
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"],
    ...                                 max_seq_length=8)
    >>> lengths = lambda features: tf.reduce_sum(features["padding_mask"], 1, keepdims=True)
    >>> embed_texts(lengths, preprocessor, ["a b a", "b"]).tolist()
    [[5.0], [3.0]]
    """
    examples = [ClassificationExample(text, "") for text in texts]
    dataset = make_dataset(examples, preprocessor, [""], batch_size=batch_size)
    run = tf.function(lambda features: embed(features), reduce_retracing=True)
    vectors = [np.asarray(run(features), np.float32) for features, _ in track(dataset, what)]
    return np.concatenate(vectors, axis=0)


def rank_and_score(query_vectors, document_vectors, relevant, block_size=DEFAULT_BLOCK_SIZE):
    """Retrieval metrics (`metrics.retrieval_metrics`) of a cosine search of every query
    over the documents, and the number of documents.

    Args:
        query_vectors: [Q, H].
        document_vectors: [N, H].
        relevant: per query, the row indices of its relevant documents.
        block_size: documents scored at once (`search.block_top_k`).

    Examples:
    >>> documents = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> scores = rank_and_score(np.array([[1.0, 0.1], [0.0, 1.0]]), documents, [{2}, {1}])
    >>> scores["mrr_at_10"], scores["recall_at_1"], scores["documents"]
    (0.75, 0.5, 3)
    """
    indices, _ = block_top_k(query_vectors, document_vectors, k=SEARCH_DEPTH,
                             block_size=block_size)
    scores = retrieval_metrics([row.tolist() for row in indices], relevant)
    scores["documents"] = int(len(document_vectors))
    return scores


def pairs_as_retrieval(anchors, positives):
    """Text pairs as a retrieval test: (query texts, document texts, relevant indices).

    Queries are the distinct anchors and documents the distinct positives,
    each in first-seen order; a query's relevant documents are the positives
    of every pair with its text (a paragraph that answers several questions
    is one document, relevant to each).

    Examples:
    >>> pairs_as_retrieval(["q1", "q2", "q1"], ["p1", "p1", "p2"])
    (['q1', 'q2'], ['p1', 'p2'], [{0, 1}, {0}])
    """
    queries, documents = {}, {}
    for anchor, positive in zip(anchors, positives):
        queries.setdefault(anchor, set()).add(documents.setdefault(positive, len(documents)))
    return list(queries), list(documents), list(queries.values())
