"""tf.data input pipeline for single-text and text-pair classification."""

import numpy as np
import tensorflow as tf

from tasks.batching import shuffle_batch_and_count

_TOKENIZE_BATCH = 512


def encode_labels(examples, label_names):
    """Label ids for `examples`; a label not in `label_names` is an error naming where."""
    index = {name: i for i, name in enumerate(label_names)}
    ids = []
    for example in examples:
        if example.label not in index:
            raise ValueError(
                f"{example.source}:{example.line}: label {example.label!r} was not "
                f"seen in training (known labels: {', '.join(label_names)})"
            )
        ids.append(index[example.label])
    return np.asarray(ids, np.int32)


def make_dataset(
    examples,
    tokenizer,
    label_names,
    max_seq_length=128,
    batch_size=32,
    training=False,
    seed=None,
):
    """Builds a batched dataset of (features, label id) for `examples`.

    Features are KerasHub's encoder inputs: `token_ids`, `segment_ids`,
    `padding_mask` (int32, [batch, bucket length]). Texts are packed as
    `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, truncated longest-first to
    `max_seq_length`, and padded to the smallest bucket length that fits.

    Args:
        examples: `ClassificationExample`s; all with or all without `text_pair`.
        tokenizer: a `WordPieceTokenizer`.
        label_names: label names, in label-id order.
        max_seq_length: the longest packed sequence.
        batch_size: examples per batch.
        training: shuffle each epoch and group examples of similar length.
        seed: shuffle seed.
    """
    paired = [example.text_pair is not None for example in examples]
    if any(paired) and not all(paired):
        first = examples[paired.index(not paired[0])]
        raise ValueError(
            f"{first.source}:{first.line}: mixes single texts and text pairs"
        )
    columns = {"text": tf.constant([e.text for e in examples])}
    if paired[0]:
        columns["text_pair"] = tf.constant([e.text_pair for e in examples])
    labels = encode_labels(examples, label_names)

    def tokenize(columns, labels):
        segments = [tokenizer.tokenize_flat(columns["text"])]
        if "text_pair" in columns:
            segments.append(tokenizer.tokenize_flat(columns["text_pair"]))
        token_ids, segment_ids = tokenizer.pack(segments, max_seq_length)
        # Dense rows plus lengths: unbatched ragged rows cannot be padded-batched.
        features = {
            "token_ids": token_ids.to_tensor(),
            "segment_ids": segment_ids.to_tensor(),
            "padding_mask": tf.ones_like(token_ids).to_tensor(),
            "length": tf.cast(token_ids.row_lengths(), tf.int32),
        }
        return features, labels

    def trim(features, label):
        length = features.pop("length")
        return {name: value[:length] for name, value in features.items()}, label

    dataset = (
        tf.data.Dataset.from_tensor_slices((columns, labels))
        .batch(_TOKENIZE_BATCH)
        .map(tokenize, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        .map(trim, num_parallel_calls=tf.data.AUTOTUNE)
        .cache()
    )
    return shuffle_batch_and_count(dataset, len(examples), batch_size, max_seq_length,
                                   {"token_ids": tokenizer.pad_id}, training, seed)
