"""Taggers and span NER read word vectors, never the pooled [CLS]: their pooler is not among
their trainable weights, so Keras has no missing gradients to warn about (through gradual
unfreezing and saving too); the encoder's pooler stays trainable for a model sharing it."""

import warnings

import keras
import numpy as np
import pytest

from nlpzoo.layers import transformer_of
from nlpzoo.tasks.training.gradual_unfreezing import GradualUnfreezing
from nlpzoo.zoo import build_model

COMMON = dict(vocabulary_size=50, num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32)


def _word_batch(casing=False):
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], "int32")
    x = {"token_ids": mask * 9, "segment_ids": np.zeros_like(mask), "padding_mask": mask,
         "word_starts": np.array([[1, 2, 0], [1, 0, 0]], "int32"),
         "word_mask": np.array([[1, 1, 0], [1, 0, 0]], "int32")}
    return x


@pytest.mark.parametrize("preset, options", [
    pytest.param("bert_tiny_crf_tagger", {"labels": ["O", "B-PER", "I-PER"],
                                          "tag_scheme": "IOB2"},
                 marks=pytest.mark.slow),  # the softmax tagger shows the same in make test
    ("bert_tiny_tagger", {"num_classes": 3}),
])
def test_tagger_trains_without_a_trainable_pooler_or_warnings(preset, options, tmp_path):
    model = build_model(preset, **options, **COMMON)
    pooler = transformer_of(model.encoder).pooler
    assert pooler.trainable  # the encoder's: a classifier sharing it trains it
    assert not {id(v) for v in pooler.variables} & {id(v) for v in model.trainable_variables}
    assert not {id(v) for v in pooler.variables} & {id(v) for v in model.trainable_weights}
    x, y = _word_batch(), np.array([[1, 2, -1], [0, -1, -1]], "int32")
    before = [v.numpy().copy() for v in pooler.variables]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x, y, epochs=4, batch_size=2, verbose=0,
                  callbacks=[GradualUnfreezing(1)])
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert not {id(v) for v in pooler.variables} & {id(v) for v in model.trainable_weights}
    for old, variable in zip(before, pooler.variables):
        np.testing.assert_array_equal(old, variable.numpy())
    # Saved and loaded (from_config), the pooler is still out of its training.
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert not ({id(v) for v in transformer_of(loaded.encoder).pooler.variables}
                & {id(v) for v in loaded.trainable_variables})


def test_span_ner_trains_no_pooler_and_a_classifier_on_its_encoder_does():
    span = build_model("bert_tiny_span_ner", num_classes=2, max_span_width=2,
                       span_hidden_dim=8, width_embedding_dim=4, **COMMON)
    pooler = {id(v) for v in transformer_of(span.encoder).pooler.variables}
    assert not pooler & {id(v) for v in span.trainable_variables}
    classifier = build_model("bert_tiny_classifier", num_classes=2, encoder=span.encoder,
                             **COMMON)
    assert pooler <= {id(v) for v in classifier.trainable_variables}
