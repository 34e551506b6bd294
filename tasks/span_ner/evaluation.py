"""Decoding span probabilities into entities, span-level evaluation, calibration."""

import numpy as np

from nlpzoo.tasks.words.length_sorting import (
    compiles_each_shape,
    encode_word_sentences,
    predict_encoded_in_length_order,
)
from nlpzoo.tasks.io.progress import track
from nlpzoo.tasks.span_ner.decoding import calibrate_threshold, decode_flat, decode_nested
from nlpzoo.tasks.span_ner.metrics import span_scores
from nlpzoo.tasks.words.windows import merge_span_scores, parents


def span_rows(model, features, max_span_width):
    """Per row of one batch: (probabilities [S, C], starts [S], ends [S]) of its valid spans.

    Spans are those of the model's [words, L] grid that lie inside the row's
    kept words.
    """
    probabilities = np.asarray(model.predict_on_batch(features), np.float32)
    kept = np.asarray(features["word_mask"]).sum(axis=1)
    words = probabilities.shape[1] // max_span_width
    starts = np.repeat(np.arange(words), max_span_width)
    ends = starts + np.tile(np.arange(max_span_width), words)
    rows = []
    for row, count in zip(probabilities, kept):
        valid = ends < count
        rows.append((row[valid], starts[valid], ends[valid]))
    return rows


def span_probabilities(model, dataset, sentences, max_span_width):
    """Per sentence: (probabilities [S, C], starts [S], ends [S]) of its valid spans.

    `dataset` is the order-preserving dataset of `sentences` (see `span_rows`).
    When `sentences` holds windows of longer sentences (`tasks.words.windows`),
    their spans are merged: one triple per original sentence.
    """
    results = [row for features, _ in track(dataset, "predicting")
               for row in span_rows(model, features, max_span_width)]
    if len(results) != len(sentences):
        raise ValueError(f"the dataset has {len(results)} sentences, expected {len(sentences)}")
    return merge_span_scores(sentences, results)


def span_probabilities_in_length_order(model, preprocessor, sentences, max_span_width,
                                       batch_size):
    """`span_probabilities` in batches of similar lengths, each padded little
    (`tasks.words.length_sorting.predict_encoded_in_length_order`): the same scores.

    Args:
        model: the span model (or an ensemble).
        preprocessor: its `WordPreprocessor`.
        sentences: the sentences (or windows) to score, in order.
        max_span_width: L, the widest span of the model's grid.
        batch_size: sentences per batch.
    """
    results = predict_encoded_in_length_order(
        encode_word_sentences(preprocessor, sentences),
        lambda features: span_rows(model, features, max_span_width), batch_size,
        preprocessor.padding_values, preprocessor.max_seq_length,
        pad_to_buckets=compiles_each_shape(model))
    return merge_span_scores(sentences, results)


def decode_all(predictions, labels, threshold=0.5, decoding="flat", method="greedy"):
    """Entities (start, end, label, score) per sentence from `span_probabilities`."""
    if decoding == "nested":
        return [decode_nested(p, s, e, labels, threshold) for p, s, e in predictions]
    return [decode_flat(p, s, e, labels, threshold, method) for p, s, e in predictions]


def evaluate_span_model(model, dataset, sentences, labels, max_span_width,
                        threshold=0.5, decoding="flat", method="greedy", tune_threshold=False):
    """Span precision, recall and F1 (exact start, end and label), overall and per type.

    With `tune_threshold`, the scores are those at the F1-best threshold on
    these very sentences (`calibrate_threshold`, from one pass of the model),
    and `threshold` is ignored: how a run scores each epoch's model when the
    threshold will be tuned after training, so that the best epoch is not
    chosen at a threshold that training then replaces. The threshold used is
    reported as `threshold` either way.
    """
    predictions = span_probabilities(model, dataset, sentences, max_span_width)
    if tune_threshold:
        threshold = calibrate_threshold([s.spans for s in parents(sentences)], predictions,
                                        labels, mode=decoding, method=method).threshold
    decoded = decode_all(predictions, labels, threshold, decoding, method)
    sentences = parents(sentences)
    scores = span_scores([s.spans for s in sentences], decoded)
    flat = {"span_precision": scores["precision"], "span_recall": scores["recall"],
            "span_f1": scores["f1"], "threshold": threshold, "sentences": len(sentences)}
    for entity_type, values in scores["per_type"].items():
        for measure in ("precision", "recall", "f1"):
            flat[f"{entity_type}_{measure}"] = values[measure]
    return flat


def calibrate(model, dataset, sentences, labels, max_span_width, decoding="flat",
              method="greedy"):
    """The threshold on the best non-NONE probability that maximises F1 on `sentences`."""
    predictions = span_probabilities(model, dataset, sentences, max_span_width)
    return calibrate_threshold([s.spans for s in parents(sentences)], predictions, labels,
                               mode=decoding, method=method)
