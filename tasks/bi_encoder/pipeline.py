"""tf.data input pipeline for text pairs read by two towers (each text packed alone)."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.batching import shuffle_batch_and_count
from nlpzoo.tasks.bi_encoder.model import NEGATIVE_PREFIX, PAIR_PREFIX, negative_inputs, pair_inputs
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
    """The preprocessor's padding values, for every tower's features."""
    values = preprocessor.padding_values
    return {**values, **pair_inputs(values), **negative_inputs(values)}


def text_ids(examples):
    """int32 [N, 2]: per example, an id of its `text_pair` and of its hard negative (−1:
    none); equal texts get equal ids, so the ranking loss can tell a repeated positive
    from a true negative (`ranking_loss.excluded_candidates`).

    Examples:
    >>> from nlpzoo.tasks.bi_encoder.readers import RankingPair
    >>> text_ids([RankingPair("q1", "", "p1", hard_negative="p2"), RankingPair("q2", "", "p1"),
    ...           RankingPair("q3", "", "p2")]).tolist()
    [[0, 1], [0, -1], [1, -1]]
    """
    ids = {}
    rows = [(ids.setdefault(example.text_pair, len(ids)),
             -1 if hard_negative_of(example) is None
             else ids.setdefault(hard_negative_of(example), len(ids)))
            for example in examples]
    return np.asarray(rows, np.int32).reshape(-1, 2)


def hard_negative_of(example):
    """The example's hard negative text, or None (an example type without one too)."""
    return getattr(example, "hard_negative", None)


def targets(examples, labels, objective):
    """Label ids (softmax), float32 scores in [-1, 1] (cosine) or the text ids of the
    positive and hard negative (multiple_negatives: `text_ids`) of `examples`."""
    if objective == "softmax":
        return encode_labels(examples, labels)
    if objective == "multiple_negatives":
        return text_ids(examples)
    return np.asarray([score_of(example) for example in examples], np.float32)


def make_dataset(examples, preprocessor, labels, objective="softmax", max_seq_length=None,
                 batch_size=32, training=False, seed=None, hard_negatives=False):
    """Batched `(features, target)` for the two towers of a `BiEncoder`.

    Features are `BI_ENCODER_INPUTS`, int32 [batch, bucket length]; both
    towers of a batch are padded to the bucket of the longer text, so
    training sees a few static shapes only (examples of similar length are
    grouped when `training`). The target is the label id (softmax), the
    score (cosine) or the text ids of positive and hard negative
    (multiple_negatives, `text_ids`).

    multiple_negatives reads the rest of the batch as negatives, so its
    training batches are shuffled pairs, not grouped by length (length
    groups would put the questions of one long paragraph together); a pair
    always stays one example, its texts side by side. With `hard_negatives`
    each example also carries the `negative_` features of its hard negative
    (an empty text where it has none, which the loss leaves out), and the
    bucket is that of the longest of the three texts.

    Args:
        examples: `ClassificationExample`s with a `text_pair`.
        preprocessor: a `TextPreprocessor`, or a `WordPieceTokenizer` (then
            with `max_seq_length`, 128 by default).
        labels: label names in label-id order (softmax; unused by cosine).
        objective: "softmax" or "cosine".
        max_seq_length: with a tokenizer: the longest packed text.
        batch_size: pairs per batch.
        training: shuffle each epoch (and, but for multiple_negatives, group
            pairs of similar length).
        seed: shuffle seed.
        hard_negatives: add the hard negatives' features (multiple_negatives).
    """
    preprocessor = as_preprocessor(preprocessor, max_seq_length)
    missing = [example for example in examples if example.text_pair is None]
    if missing:
        raise ValueError(f"{missing[0].source}:{missing[0].line}: a bi-encoder reads text "
                         "pairs: this example has no text_pair")
    columns = [tf.constant([e.text for e in examples]),
               tf.constant([e.text_pair for e in examples])]
    length_features = LENGTH_FEATURES
    if hard_negatives:
        columns.append(tf.constant([hard_negative_of(e) or "" for e in examples]))
        length_features += (NEGATIVE_PREFIX + "token_ids",)

    def encode(texts, target):
        features = encode_pairs(preprocessor, texts[0], texts[1])
        if hard_negatives:
            features.update(negative_inputs(preprocessor.encode(texts[2])))
        return features, target

    dataset = (
        tf.data.Dataset.from_tensor_slices((tuple(columns), targets(examples, labels, objective)))
        .batch(_TOKENIZE_BATCH)
        .map(encode, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        # Unbatched ragged rows are dense tensors; this map makes their spec dense too.
        .map(lambda features, target: (features, target), num_parallel_calls=tf.data.AUTOTUNE)
    )
    return shuffle_batch_and_count(dataset, len(examples), batch_size,
                                   preprocessor.max_seq_length, pair_padding_values(preprocessor),
                                   training, seed, length_features=length_features,
                                   group_by_length=objective != "multiple_negatives")
