"""Decoding a dataset back to word tags, and entity-level evaluation during training."""

import numpy as np

from tasks.progress import track
from tasks.tagging.metrics import entity_scores
from tasks.word_windows import merge_word_values, parents


def predict_tags(model, dataset, sentences, labels):
    """Decoded tag names for every word of `sentences`, in order.

    `dataset` must be the order-preserving (non-training) dataset of
    `sentences`. When `sentences` holds windows of longer sentences
    (`tasks.word_windows`), their tags are merged: one list per original
    sentence. Words cut off by `max_seq_length` get "O", so that their gold
    entities still count as missed.
    """
    predictions = []
    for features, _ in track(dataset, "predicting"):
        tag_ids = np.asarray(model.predict_on_batch(features))
        kept = np.asarray(features["word_mask"]).sum(axis=1)
        for row, count in zip(tag_ids, kept):
            predictions.append([labels[i] for i in row[:count]])
    if len(predictions) != len(sentences):
        raise ValueError(f"the dataset has {len(predictions)} sentences, expected {len(sentences)}")
    return merge_word_values(sentences, [tags + ["O"] * (len(sentence.words) - len(tags))
                                         for tags, sentence in zip(predictions, sentences)])


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
