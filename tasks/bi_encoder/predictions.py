"""A trained bi-encoder on text pairs: its outputs for every pair, and the JSONL records."""

import dataclasses

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.bi_encoder.pipeline import make_dataset
from nlpzoo.tasks.modeling.class_outputs import label_fields, softmax_probabilities
from nlpzoo.tasks.io.progress import track


def predict_pairs(model, preprocessor, examples, labels, objective="softmax", batch_size=64):
    """`BiEncoder.pair_outputs` of every pair of `examples`, in order, as NumPy arrays:
    `embedding`, `pair_embedding`, `cosine` and, for softmax, `logits`.

    The examples' own labels are not used (unlabelled input is fine).
    """
    target = labels[0] if objective == "softmax" else "0"
    unlabeled = [dataclasses.replace(example, label=target) for example in examples]
    dataset = make_dataset(unlabeled, preprocessor, labels, objective=objective,
                           batch_size=batch_size)
    run = tf.function(lambda features: model.pair_outputs(features, training=False),
                      reduce_retracing=True)
    batches = [{name: np.asarray(value) for name, value in run(features).items()}
               for features, _ in track(dataset, "predicting")]
    return {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}


def prediction_records(examples, outputs, labels):
    """One dict per pair: `text`, `text_pair`, and (softmax) `label`, its `probability`
    and every class's `probabilities`, then `cosine`; numbers rounded to 6 places.

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> pair = ClassificationExample("a b", "", "b a")
    >>> outputs = {"cosine": np.array([0.5]), "logits": np.log([[1.0, 3.0]])}
    >>> prediction_records([pair], outputs, ["0", "1"])[0]
    {'text': 'a b', 'text_pair': 'b a', 'label': '1', 'probability': 0.75,
     'probabilities': {'0': 0.25, '1': 0.75}, 'cosine': 0.5}
    """
    records = []
    for index, example in enumerate(examples):
        record = {"text": example.text, "text_pair": example.text_pair}
        if "logits" in outputs:
            probabilities = softmax_probabilities(outputs["logits"][index])
            fields = label_fields(probabilities, labels)
            record.update(label=fields["label"], probability=round(float(probabilities.max()), 6),
                          probabilities=fields["probabilities"])
        record["cosine"] = round(float(outputs["cosine"][index]), 6)
        records.append(record)
    return records
