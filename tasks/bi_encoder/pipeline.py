"""tf.data input pipeline for text pairs read by two towers (each text packed alone)."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.batching import shuffle_batch_and_count
from nlpzoo.tasks.bi_encoder.model import PAIR_PREFIX, pair_inputs
from nlpzoo.tasks.bi_encoder.readers import score_of
from nlpzoo.tasks.text.text_pipeline import encode_labels
from nlpzoo.tasks.text.preprocessor import as_preprocessor

_TOKENIZE_BATCH = 512
LENGTH_FEATURES = ("token_ids", PAIR_PREFIX + "token_ids")


def encode_pairs(preprocessor, text, text_pair):
    """[B] texts and [B] second texts → ragged features of both towers.

    Each text is packed alone, `[CLS] text [SEP]` truncated to the
    preprocessor's `max_seq_length`, by the same `TextPreprocessor.encode`
    as single-text classification; the second text's features carry the
    prefix `pair_`.
    """
    return {**preprocessor.encode(text), **pair_inputs(preprocessor.encode(text_pair))}


def pair_padding_values(preprocessor):
    """The preprocessor's padding values, for both towers' features."""
    values = preprocessor.padding_values
    return {**values, **pair_inputs(values)}


def targets(examples, labels, objective):
    """Label ids (softmax) or float32 scores in [-1, 1] (cosine) of `examples`."""
    if objective == "softmax":
        return encode_labels(examples, labels)
    return np.asarray([score_of(example) for example in examples], np.float32)


def make_dataset(examples, preprocessor, labels, objective="softmax", max_seq_length=None,
                 batch_size=32, training=False, seed=None):
    """Batched `(features, target)` for the two towers of a `BiEncoder`.

    Features are `BI_ENCODER_INPUTS`, int32 [batch, bucket length]; both
    towers of a batch are padded to the bucket of the longer text, so
    training sees a few static shapes only (examples of similar length are
    grouped when `training`). The target is the label id (softmax) or the
    score (cosine).

    Args:
        examples: `ClassificationExample`s with a `text_pair`.
        preprocessor: a `TextPreprocessor`, or a `WordPieceTokenizer` (then
            with `max_seq_length`, 128 by default).
        labels: label names in label-id order (softmax; unused by cosine).
        objective: "softmax" or "cosine".
        max_seq_length: with a tokenizer: the longest packed text.
        batch_size: pairs per batch.
        training: shuffle each epoch and group pairs of similar length.
        seed: shuffle seed.
    """
    preprocessor = as_preprocessor(preprocessor, max_seq_length)
    missing = [example for example in examples if example.text_pair is None]
    if missing:
        raise ValueError(f"{missing[0].source}:{missing[0].line}: a bi-encoder reads text "
                         "pairs: this example has no text_pair")
    columns = (tf.constant([e.text for e in examples]),
               tf.constant([e.text_pair for e in examples]))
    dataset = (
        tf.data.Dataset.from_tensor_slices((columns, targets(examples, labels, objective)))
        .batch(_TOKENIZE_BATCH)
        .map(lambda texts, target: (encode_pairs(preprocessor, *texts), target),
             num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        # Unbatched ragged rows are dense tensors; this map makes their spec dense too.
        .map(lambda features, target: (features, target), num_parallel_calls=tf.data.AUTOTUNE)
    )
    return shuffle_batch_and_count(dataset, len(examples), batch_size,
                                   preprocessor.max_seq_length, pair_padding_values(preprocessor),
                                   training, seed, length_features=LENGTH_FEATURES)
