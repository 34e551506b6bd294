"""Tokenizing documents and packing them into fixed-length pretraining sequences.

This runs once, offline, in NumPy (a few seconds for WikiText-2); the masking
that must change every epoch runs later, in `tf.data`
(`tasks.pretraining.pipeline`).

- `pack_single_segments`: `[CLS] lines… [SEP]` with consecutive lines of one
  document filling up to `max_length` pieces (MLM and span masking).
- `pack_sentence_pairs`: `[CLS] a [SEP] b [SEP]` for the segment-pair
  objectives (`pair_objectives`): next sentence prediction, `b` the segment
  that follows `a` half of the time, a segment of another document otherwise
  (`make_nsp_pairs`); or sentence-order prediction, two consecutive segments
  of one document in their order half of the time, swapped otherwise
  (`make_sop_pairs`).

As in BERT, a share `short_sequence_probability` of the sequences get a
shorter random target length, so the encoder also sees the short inputs that
fine-tuning brings. A line longer than a whole sequence is cut, preferably
at a word start.
"""

import numpy as np

from nlpzoo.tasks.pretraining.pair_objectives import PAIR_OBJECTIVES


def tokenize_documents(documents, tokenizer, batch_size=2048):
    """Documents of lines → documents of int32 wordpiece-id arrays (one per line).

    Empty lines (after tokenization) are dropped.

    Examples:
    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "it", "is", "blue", "."])
    >>> [[ids.tolist() for ids in doc]
    ...  for doc in tokenize_documents([["It is blue ."]], tokenizer)]
    [[[5, 6, 7, 8]]]
    """
    lines = [line for document in documents for line in document]
    ids = []
    for begin in range(0, len(lines), batch_size):
        pieces = tokenizer.tokenize_flat(lines[begin:begin + batch_size])
        ids.extend(np.asarray(row, np.int32) for row in pieces.numpy())
    result, position = [], 0
    for document in documents:
        rows = [row for row in ids[position:position + len(document)] if row.size]
        position += len(document)
        if rows:
            result.append(rows)
    return result


def _cut(ids, budget, continuation):
    """Cuts an id array into pieces of at most `budget`, at word starts if possible."""
    chunks = []
    while ids.size > budget:
        cut = budget
        # Back off to a word start (not a ## piece) unless the word fills the budget.
        while cut > 1 and continuation[ids[cut]]:
            cut -= 1
        if cut <= 1:
            cut = budget
        chunks.append(ids[:cut])
        ids = ids[cut:]
    chunks.append(ids)
    return chunks


def segment_document(lines, budget, rng, continuation, short_sequence_probability=0.0):
    """Groups consecutive lines of one document into segments of ≤ `budget` pieces.

    Each segment draws its target length: `budget`, or, with probability
    `short_sequence_probability`, a uniform length in [2, budget].
    """
    def target():
        if rng.random() < short_sequence_probability:
            return int(rng.integers(2, budget + 1))
        return budget

    segments, current, limit = [], [], target()
    for line in lines:
        for piece in _cut(line, budget, continuation):
            if current and sum(p.size for p in current) + piece.size > limit:
                segments.append(np.concatenate(current))
                current, limit = [], target()
            current.append(piece)
    if current:
        segments.append(np.concatenate(current))
    # A segment may still exceed its (short) target by its last line: cut it.
    return [chunk for segment in segments for chunk in _cut(segment, budget, continuation)]


def _pad_rows(rows, length, pad_id):
    array = np.full((len(rows), length), pad_id, np.int32)
    for index, row in enumerate(rows):
        array[index, :len(row)] = row
    return array


def pack_single_segments(documents, max_length, *, cls_id, sep_id, pad_id, continuation,
                         rng, short_sequence_probability=0.1):
    """`[CLS] text [SEP]` sequences padded to `max_length`.

    Args:
        documents: documents of id arrays (`tokenize_documents`).
        max_length: T, the packed length.
        cls_id, sep_id, pad_id: the special ids.
        continuation: bool [V], True for `##` pieces (`continuation_flags`).
        rng: a `numpy.random.Generator`.
        short_sequence_probability: share of sequences with a short target.

    Returns:
        A dict of NumPy arrays: `token_ids` and `segment_ids` int32 [N, T].

    Examples:
    >>> docs = [[np.array([5, 6, 7]), np.array([8, 9])]]
    >>> out = pack_single_segments(docs, 6, cls_id=2, sep_id=3, pad_id=0,
    ...     continuation=np.zeros(10, bool), rng=np.random.default_rng(0),
    ...     short_sequence_probability=0.0)
    >>> out["token_ids"].tolist()
    [[2, 5, 6, 7, 3, 0], [2, 8, 9, 3, 0, 0]]
    """
    rows = []
    for lines in documents:
        for segment in segment_document(lines, max_length - 2, rng, continuation,
                                        short_sequence_probability):
            rows.append(np.concatenate([[cls_id], segment, [sep_id]]))
    if not rows:
        raise ValueError("the corpus holds no tokens")
    token_ids = _pad_rows(rows, max_length, pad_id)
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids)}


def pack_sentence_pairs(documents, max_length, *, cls_id, sep_id, pad_id, continuation,
                        rng, short_sequence_probability=0.1, next_probability=0.5,
                        objective="mlm_nsp"):
    """`[CLS] a [SEP] b [SEP]` pairs padded to `max_length`, with NSP or SOP labels.

    Each document is cut into segments of at most `(max_length - 3) // 2`
    pieces; consecutive segments make the pairs of label 1, and the
    objective's pair maker the others: a segment of another document for
    "mlm_nsp" (`make_nsp_pairs`), the two segments swapped for "mlm_sop"
    (`make_sop_pairs`).

    Args:
        next_probability: the share of pairs of label 1 (b follows a).
        objective: "mlm_nsp" or "mlm_sop" (`pair_objectives.PAIR_OBJECTIVES`).
        The others as in `pack_single_segments`.

    Returns:
        A dict of NumPy arrays: `token_ids`, `segment_ids` int32 [N, T] and
        the label int32 [N] (1 = b follows a in the document), named
        `next_sentence` for "mlm_nsp", `sentence_order` for "mlm_sop".

    Examples:
    >>> docs = [[np.array([5, 6]), np.array([7])], [np.array([8]), np.array([9])]]
    >>> out = pack_sentence_pairs(docs, 8, cls_id=2, sep_id=3, pad_id=0,
    ...     continuation=np.zeros(10, bool), rng=np.random.default_rng(0),
    ...     short_sequence_probability=0.0)
    >>> out["token_ids"].shape, out["next_sentence"].tolist()
    ((1, 8), [1])
    >>> out = pack_sentence_pairs(docs, 8, cls_id=2, sep_id=3, pad_id=0,
    ...     continuation=np.zeros(10, bool), rng=np.random.default_rng(1),
    ...     short_sequence_probability=0.0, objective="mlm_sop")
    >>> out["token_ids"].tolist(), out["sentence_order"].tolist()  # [5, 6] then [7], swapped
    ([[2, 7, 3, 5, 6, 3, 0, 0]], [0])
    """
    pair = PAIR_OBJECTIVES[objective]
    half = (max_length - 3) // 2
    if half < 1:
        raise ValueError(f"max_length={max_length} is too short for sentence pairs")
    segmented = [
        segment_document(lines, half, rng, continuation, short_sequence_probability)
        for lines in documents
    ]
    pairs = pair.make_pairs(segmented, rng, next_probability)
    rows, segments, labels = [], [], []
    for first, second, is_next in pairs:
        rows.append(np.concatenate([[cls_id], first, [sep_id], second, [sep_id]]))
        segments.append(np.concatenate([np.zeros(len(first) + 2), np.ones(len(second) + 1)]))
        labels.append(is_next)
    return {
        "token_ids": _pad_rows(rows, max_length, pad_id),
        "segment_ids": _pad_rows(segments, max_length, 0),
        pair.label: np.asarray(labels, np.int32),
    }


def continuation_flags(vocabulary):
    """bool [V]: True for WordPiece continuation pieces (`##…`), which never start a word."""
    return np.array([token.startswith("##") for token in vocabulary], bool)
