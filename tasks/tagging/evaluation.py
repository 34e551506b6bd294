"""Decoding a dataset back to word tags, and entity-level evaluation during training."""

import keras
import numpy as np

from tasks.tagging.metrics import entity_scores


def predict_tags(model, dataset, sentences, label_names):
    """Decoded tag names for every word of `sentences`, in order.

    `dataset` must be the order-preserving (non-training) dataset of
    `sentences`. Words cut off by `max_seq_length` get "O", so that their
    gold entities still count as missed.
    """
    predictions = []
    for features, _ in dataset:
        tag_ids = np.asarray(model.predict_on_batch(features))
        kept = np.asarray(features["word_mask"]).sum(axis=1)
        for row, count in zip(tag_ids, kept):
            predictions.append([label_names[i] for i in row[:count]])
    if len(predictions) != len(sentences):
        raise ValueError(f"the dataset has {len(predictions)} sentences, expected {len(sentences)}")
    return [tags + ["O"] * (len(sentence.words) - len(tags))
            for tags, sentence in zip(predictions, sentences)]


def evaluate_tagger(model, dataset, sentences, label_names):
    """Entity-level precision, recall, F1 (seqeval's default mode) and token accuracy."""
    predicted = predict_tags(model, dataset, sentences, label_names)
    scores = entity_scores([list(s.tags) for s in sentences], predicted)
    flat = {
        "entity_precision": scores["precision"],
        "entity_recall": scores["recall"],
        "entity_f1": scores["f1"],
        "token_accuracy": scores["token_accuracy"],
        "sentences": len(sentences),
    }
    for entity_type, values in scores["per_type"].items():
        flat[f"{entity_type}_f1"] = values["f1"]
    return flat


class EntityF1Callback(keras.callbacks.Callback):
    """Adds validation `val_entity_precision`, `val_entity_recall`, `val_entity_f1`
    to the epoch logs, so TensorBoard and model selection see them.

    Put it before the TensorBoard and checkpoint callbacks in the list.

    Examples:
    >>> callback = EntityF1Callback(dataset=None, sentences=[], label_names=["O"])
    """

    def __init__(self, dataset, sentences, label_names):
        super().__init__()
        self.dataset = dataset
        self.sentences = sentences
        self.label_names = label_names

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        scores = evaluate_tagger(self.model, self.dataset, self.sentences, self.label_names)
        for name in ("entity_precision", "entity_recall", "entity_f1"):
            logs[f"val_{name}"] = scores[name]
