"""`tf.data` pipeline of question-answering windows: features and start/end labels."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.batching import shuffle_batch_and_count


def make_dataset(windows, preprocessor, batch_size=32, training=False, seed=None):
    """Batched `(features, labels)` of `QAWindow`s (`tasks.question_answering.windows`).

    Features: `token_ids`, `segment_ids` (0 for `[CLS] question [SEP]`, 1 for
    the context and its `[SEP]`), `padding_mask` and `answer_mask`, int32
    [batch, bucket length]. Labels: int32 [batch, 2], the answer's start and
    end position (0, 0 when the window holds no answer). Batching is
    `tasks.text.batching.shuffle_batch_and_count`'s: in order for
    evaluation and prediction, shuffled and grouped by length for training.

    Examples:
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> from nlpzoo.tasks.question_answering.readers import Answer, QAExample
    >>> from nlpzoo.tasks.question_answering.windows import make_windows
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "who"])
    >>> windows = make_windows([QAExample("who", "a b", (Answer("b", 2),))], preprocessor)
    >>> features, labels = next(iter(make_dataset(windows, preprocessor)))
    >>> features["answer_mask"].numpy()[0, :7].tolist(), labels.numpy().tolist()
    ([1, 0, 0, 1, 1, 0, 0], [[4, 4]])
    """
    windows = list(windows)
    if not windows:
        raise ValueError("no questions to make a dataset of")
    lengths = np.asarray([len(window.token_ids) for window in windows], np.int64)

    def ragged(rows):
        return tf.RaggedTensor.from_row_lengths(np.concatenate(rows).astype(np.int32), lengths)

    features = {
        "token_ids": ragged([window.token_ids for window in windows]),
        "segment_ids": ragged([window.segment_ids for window in windows]),
        "padding_mask": ragged([np.ones(len(window.token_ids), np.int32) for window in windows]),
        "answer_mask": ragged([window.answer_mask for window in windows]),
    }
    labels = np.asarray([[window.start_position, window.end_position] for window in windows],
                        np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).map(
        # Sliced ragged rows are dense tensors; this map makes their spec dense too.
        lambda features, labels: (features, labels), num_parallel_calls=tf.data.AUTOTUNE)
    return shuffle_batch_and_count(dataset, len(windows), batch_size,
                                   preprocessor.max_seq_length, preprocessor.padding_values,
                                   training, seed)


def window_logits(model, dataset, limit=None):
    """The model's start/end logits of every window of an order-preserving `dataset` (of
    the first `limit` windows, when given): one float32 array [2, bucket length] per
    window, in order."""
    rows = []
    for features, _ in dataset:
        if limit is not None and len(rows) >= limit:
            break
        rows.extend(np.asarray(model.predict_on_batch(features), np.float32))
    return rows if limit is None else rows[:limit]
