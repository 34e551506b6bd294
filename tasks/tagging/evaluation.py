"""Decoding a dataset back to word tags, and entity-level evaluation during training."""

import numpy as np

from nlpzoo.tasks.words.length_sorting import (
    compiles_each_shape,
    encode_word_sentences,
    predict_encoded_in_length_order,
)
from nlpzoo.tasks.io.progress import track
from nlpzoo.tasks.tagging.metrics import entity_scores
from nlpzoo.tasks.words.windows import merge_word_values, parents


def tag_rows(model, features, labels):
    """The decoded tag names of each row of one batch, for its kept words."""
    tag_ids = np.asarray(model.predict_on_batch(features))
    kept = np.asarray(features["word_mask"]).sum(axis=1)
    return [[labels[i] for i in row[:count]] for row, count in zip(tag_ids, kept)]


def sentence_tags(sentences, rows):
    """One tag per word of every original sentence, from `tag_rows` of `sentences`.

    `rows` has one tag list per sentence of `sentences` (windows of longer
    sentences merged here, `tasks.words.windows`). Words cut off by
    `max_seq_length` get "O", so that their gold entities still count as missed.
    """
    if len(rows) != len(sentences):
        raise ValueError(f"the dataset has {len(rows)} sentences, expected {len(sentences)}")
    return merge_word_values(sentences, [tags + ["O"] * (len(sentence.words) - len(tags))
                                         for tags, sentence in zip(rows, sentences)])


def predict_tags(model, dataset, sentences, labels):
    """Decoded tag names for every word of `sentences`, in order.

    `dataset` must be the order-preserving (non-training) dataset of
    `sentences`. When `sentences` holds windows of longer sentences
    (`tasks.words.windows`), their tags are merged: one list per original
    sentence (see `sentence_tags`).
    """
    rows = [row for features, _ in track(dataset, "predicting")
            for row in tag_rows(model, features, labels)]
    return sentence_tags(sentences, rows)


def predict_tags_in_length_order(model, preprocessor, sentences, labels, batch_size):
    """`predict_tags` in batches of similar lengths, each padded little
    (`tasks.words.length_sorting.predict_encoded_in_length_order`): the same tags.

    Args:
        model: the tagger (or an ensemble).
        preprocessor: its `WordPreprocessor`.
        sentences: the sentences (or windows) to tag, in order.
        labels: tag names in id order.
        batch_size: sentences per batch.
    """
    rows = predict_encoded_in_length_order(
        encode_word_sentences(preprocessor, sentences),
        lambda features: tag_rows(model, features, labels), batch_size,
        preprocessor.padding_values, preprocessor.max_seq_length,
        pad_to_buckets=compiles_each_shape(model))
    return sentence_tags(sentences, rows)


def evaluate_tagger(model, dataset, sentences, labels):
    """Entity-level precision, recall, F1 (seqeval's default mode) and token accuracy."""
    predicted = predict_tags(model, dataset, sentences, labels)
    sentences = parents(sentences)
    scores = entity_scores([list(s.tags) for s in sentences], predicted)
    flat = {
        "entity_precision": scores["precision"],
        "entity_recall": scores["recall"],
        "entity_f1": scores["f1"],
        "token_accuracy": scores["token_accuracy"],
        "sentences": len(sentences),
    }
    for entity_type, values in scores["per_type"].items():
        for measure in ("precision", "recall", "f1"):
            flat[f"{entity_type}_{measure}"] = values[measure]
    return flat
