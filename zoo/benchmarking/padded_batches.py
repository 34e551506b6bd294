"""Length-sorted, padded batches for KerasHub's side of `tools/benchmark.py --what=finetune`.

Plain NumPy and no absl flags, so tests import it. Our own pipeline buckets
lengths in tf.data (`tasks.text.batching`); KerasHub's models are fed the way its
users usually feed them: sentences sorted by length, each batch padded to its
longest.
"""

import numpy as np


def length_sorted_batches(token_ids, word_starts, tag_ids, batch_size, multiple, max_length):
    """Length-sorted batches, each padded to its longest row rounded up to `multiple`.

    Args:
        token_ids: one list of token ids per sentence (`[CLS] … [SEP]`).
        word_starts: each sentence's first-subword positions (its kept words).
        tag_ids: each sentence's tag ids, one per word (only the kept ones are read).
        batch_size: rows per batch.
        multiple: the padded length is a multiple of this (capped at `max_length`).
        max_length: the model's positions.

    Returns:
        A list of `(x, y, sample_weight, rows)`: `x` the three BERT inputs
        [b, length], `y` the tag id at each first subword (0 elsewhere),
        `sample_weight` 1.0 there and 0.0 elsewhere, `rows` the sentences'
        indices.

    Examples:
    >>> batches = length_sorted_batches([[2, 7, 3], [2, 7, 8, 9, 3]], [[1], [1, 3]],
    ...                                 [[4], [5, 6]], batch_size=2, multiple=4, max_length=512)
    >>> x, y, weight, rows = batches[0]
    >>> x["padding_mask"].tolist(), rows
    ([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0]], [0, 1])
    >>> y.tolist(), weight.tolist()[1]
    ([[0, 4, 0, 0, 0, 0, 0, 0], [0, 5, 0, 6, 0, 0, 0, 0]], [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    """
    if not len(token_ids) == len(word_starts) == len(tag_ids):
        raise ValueError(f"expected one row per sentence in token_ids ({len(token_ids)}), "
                         f"word_starts ({len(word_starts)}) and tag_ids ({len(tag_ids)})")
    for name, value in (("batch_size", batch_size), ("multiple", multiple),
                        ("max_length", max_length)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
    batches = []
    for begin in range(0, len(order), batch_size):
        rows = order[begin:begin + batch_size]
        longest = max(len(token_ids[i]) for i in rows)
        length = max(longest, min(-(-longest // multiple) * multiple, max_length))
        x = {name: np.zeros((len(rows), length), "int32")
             for name in ("token_ids", "segment_ids", "padding_mask")}
        y = np.zeros((len(rows), length), "int32")
        weight = np.zeros((len(rows), length), "float32")
        for row, i in enumerate(rows):
            x["token_ids"][row, :len(token_ids[i])] = token_ids[i]
            x["padding_mask"][row, :len(token_ids[i])] = 1
            starts = word_starts[i]
            y[row, starts] = tag_ids[i][:len(starts)]
            weight[row, starts] = 1.0
        batches.append((x, y, weight, rows))
    return batches
