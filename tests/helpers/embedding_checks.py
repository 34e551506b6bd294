"""What the sentence embedding tests share: tiny encoders, a tiny checkpoint, texts, and
NumPy references for pooling (sentence-transformers' formulas)."""

import os

import numpy as np

from nlpzoo.tasks.classification import read_examples
from nlpzoo.tasks.text.tokenizer import build_vocabulary
from tests.helpers.paths import TREC
from nlpzoo.zoo import build_encoder, build_model
from nlpzoo.zoo.checkpoints import save_encoder_checkpoint

TINY_ENCODER = dict(num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32,
                    max_sequence_length=64, dropout=0.0, attention_dropout=0.0)


def trec_texts(count=40):
    """The first `count` distinct questions of the TREC sample, in file order."""
    texts = []
    for example in read_examples(os.path.join(TREC, "train.label")):
        if example.text not in texts:
            texts.append(example.text)
    return texts[:count]


def tiny_vocabulary():
    return build_vocabulary(trec_texts(300), 400)


def tiny_encoder(vocabulary_size, **overrides):
    return build_encoder("bert_tiny", vocabulary_size=vocabulary_size,
                         **{**TINY_ENCODER, **overrides})


def save_tiny_checkpoint(directory, seed=0):
    """A native checkpoint of a random tiny encoder; returns (path, encoder, vocabulary)."""
    import keras

    keras.utils.set_random_seed(seed)
    vocabulary = tiny_vocabulary()
    encoder = tiny_encoder(len(vocabulary))
    path = os.path.join(str(directory), "checkpoint")
    save_encoder_checkpoint(encoder, path, vocabulary, lowercase=True)
    return path, encoder, vocabulary


def save_tiny_classifier(path, vocabulary, max_seq_length=32, seed=1):
    """A `.keras` classifier with its metadata, as tools/train.py writes one (untrained)."""
    import keras

    keras.utils.set_random_seed(seed)
    classifier = build_model("bert_tiny_classifier", num_classes=3, compile=False,
                             vocabulary_size=len(vocabulary), **TINY_ENCODER)
    classifier.attach_metadata(vocabulary=vocabulary, lowercase=True,
                               max_seq_length=max_seq_length, task="classification",
                               labels=["a", "b", "c"])
    classifier.save(str(path))
    return classifier


def numpy_pooling(tokens, mask, pooling="mean", normalize=True):
    """sentence-transformers' pooling in float64: masked mean (sum / clamp(count, 1e-9)),
    masked max, or [CLS]; then `F.normalize(p=2)` (norm clamped at 1e-12)."""
    tokens = np.asarray(tokens, np.float64)
    mask = np.asarray(mask, np.float64)[:, :, None]
    if pooling == "mean":
        pooled = (tokens * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    elif pooling == "max":
        pooled = np.where(mask > 0, tokens, -np.inf).max(1)
    else:
        pooled = tokens[:, 0]
    if normalize:
        pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
    return pooled
