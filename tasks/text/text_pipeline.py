"""tf.data input pipeline for labelled single texts and text pairs (classification; the
bi-encoder's label encoding; sentence embedding's texts)."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.batching import shuffle_batch_and_count
from nlpzoo.tasks.text.labels import LabelSet
from nlpzoo.tasks.text.preprocessor import as_preprocessor

_TOKENIZE_BATCH = 512


def encode_labels(examples, labels):
    """Label ids for `examples`; a label not in `labels` is an error naming where."""
    label_set = LabelSet(labels)
    return np.asarray([label_set.id(e.label, f"{e.source}:{e.line}") for e in examples],
                      np.int32)


def text_columns(examples):
    """`(texts, text_pairs)` of `examples`; `text_pairs` is None for single texts.

    Raises:
        ValueError: some examples have a `text_pair` and others not (names the
            first that differs from the first example: its file and line).

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> text_columns([ClassificationExample("a", "x", text_pair="b")])
    (['a'], ['b'])
    """
    examples = list(examples)
    paired = [example.text_pair is not None for example in examples]
    if any(paired) and not all(paired):
        first = examples[paired.index(not paired[0])]
        raise ValueError(f"{first.source}:{first.line}: mixes single texts and text pairs")
    texts = [example.text for example in examples]
    return texts, ([example.text_pair for example in examples] if any(paired) else None)


def make_dataset(
    examples,
    preprocessor,
    labels,
    max_seq_length=None,
    batch_size=32,
    training=False,
    seed=None,
    targets=None,
):
    """Builds a batched dataset of (features, label id) for `examples`.

    Features are KerasHub's encoder inputs: `token_ids`, `segment_ids`,
    `padding_mask` (int32, [batch, bucket length]), made by
    `TextPreprocessor.encode`: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`,
    truncated longest-first to `max_seq_length`, padded to the smallest
    bucket length that fits.

    Args:
        examples: `ClassificationExample`s; all with or all without `text_pair`.
        preprocessor: a `TextPreprocessor`, or a `WordPieceTokenizer` (then
            with `max_seq_length`, 128 by default).
        labels: label names, in label-id order.
        max_seq_length: with a tokenizer: the longest packed sequence.
        batch_size: examples per batch.
        training: shuffle each epoch and group examples of similar length.
        seed: shuffle seed.
        targets: one target per example in place of the label ids (a regression
            classifier's float32 scores); None: `encode_labels(examples, labels)`.
    """
    preprocessor = as_preprocessor(preprocessor, max_seq_length)
    texts, pairs = text_columns(examples)
    columns = {"text": tf.constant(texts)}
    if pairs is not None:
        columns["text_pair"] = tf.constant(pairs)
    if targets is None:
        targets = encode_labels(examples, labels)

    dataset = (
        tf.data.Dataset.from_tensor_slices((columns, targets))
        .batch(_TOKENIZE_BATCH)
        .map(lambda columns, labels: (preprocessor.encode(**columns), labels),
             num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        # Unbatched ragged rows are dense tensors; this map makes their spec dense too.
        .map(lambda features, label: (features, label), num_parallel_calls=tf.data.AUTOTUNE)
    )
    return shuffle_batch_and_count(dataset, len(examples), batch_size,
                                   preprocessor.max_seq_length, preprocessor.padding_values,
                                   training, seed)
