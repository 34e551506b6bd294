"""The test session's Keras data adapters without tf.data's autotuning wait.

Tests call `fit`, `evaluate` and `predict` on NumPy arrays and small
`tf.data` datasets thousands of times; Keras turns each into an autotuned
dataset, and TensorFlow 2.21 can end such a call only at the autotuning
thread's next wake-up, seconds after its work (`nlpzoo.tasks.text.autotuning`).
Our own pipelines turn autotuning off themselves; this does the same
for the datasets Keras makes in tests. Results are unchanged (the same
batches in the same order); only the idle wait goes.
"""

import os

from nlpzoo.layers.keras_internals import transform_keras_datasets
from nlpzoo.tasks.text.autotuning import without_autotuning


def keras_datasets_without_autotuning():
    """Turns autotuning off in every dataset Keras builds for `fit`, `evaluate` and
    `predict` (tests only); idempotent."""
    transform_keras_datasets(without_autotuning)


def keras_datasets_as_in_tests():
    """What every test process does once: `keras_datasets_without_autotuning`, unless
    `NLPZOO_TEST_AUTOTUNING=1` asks for Keras's default (to compare times)."""
    if os.environ.get("NLPZOO_TEST_AUTOTUNING") != "1":
        keras_datasets_without_autotuning()
