"""Sentence-order prediction pairs (ALBERT, Lan et al. 2020).

SOP asks whether two consecutive segments of one document are in their
original order. Both segments always come from the same document, and next to
each other, so the topic is no clue: unlike next sentence prediction, whose
negative is a segment of another document (`make_nsp_pairs`), SOP can only be
solved from discourse coherence. Packed as `[CLS] a [SEP] b [SEP]` like NSP
pairs (`tasks.pretraining.packing.pack_sentence_pairs`).
"""

import numpy as np


def make_sop_pairs(documents, rng, in_order_probability=0.5):
    """Builds sentence-order-prediction pairs from documents.

    For every pair of consecutive segments `(a, b)` of a document, with
    probability `in_order_probability` the pair is `(a, b, 1)`, otherwise the
    swapped `(b, a, 0)`. A document of one segment has no consecutive pair and
    gives none (as in `make_nsp_pairs`, where it gives no first segment).

    Args:
        documents: a list of documents, each a list of segments (sentences or
            chunks), each a list or array of token ids.
        rng: a `numpy.random.Generator`.
        in_order_probability: the share of pairs kept in their order.

    Returns:
        A list of `(first, second, in_order)` tuples, `in_order` 1 or 0; one
        per consecutive pair, in document order.

    Raises:
        ValueError: no document has two segments (there is no pair to make).

    Examples:
    >>> docs = [[[5, 6], [7], [8]], [[9]]]
    >>> make_sop_pairs(docs, np.random.default_rng(0))
    [([7], [5, 6], 0), ([7], [8], 1)]
    """
    pairs = []
    for document in documents:
        for position in range(len(document) - 1):
            first, second = list(document[position]), list(document[position + 1])
            if rng.random() < in_order_probability:
                pairs.append((first, second, 1))
            else:
                pairs.append((second, first, 0))
    if not pairs:
        raise ValueError("sentence-order prediction needs a document of at least two "
                         "segments (longer than half of --max_seq_length, or of several "
                         "lines); every document here packs into one segment")
    return pairs
