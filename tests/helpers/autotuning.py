"""The test session's Keras data adapters without tf.data's autotuning wait.

Tests call `fit`, `evaluate` and `predict` on NumPy arrays and small
`tf.data` datasets thousands of times; Keras turns each into an autotuned
dataset, and TensorFlow 2.21 can end such a call only at the autotuning
thread's next wake-up, seconds after its work (`nlpzoo.tasks.text.autotuning`).
Our own pipelines turn autotuning off themselves; this does the same
for the datasets Keras makes in tests. Results are unchanged (the same
batches in the same order); only the idle wait goes.
"""

from keras.src.trainers.data_adapters import array_data_adapter
from keras.src.trainers.data_adapters import generator_data_adapter
from keras.src.trainers.data_adapters import tf_dataset_adapter

from nlpzoo.tasks.text.autotuning import without_autotuning

_ADAPTERS = (array_data_adapter.ArrayDataAdapter, generator_data_adapter.GeneratorDataAdapter,
             tf_dataset_adapter.TFDatasetAdapter)


def keras_datasets_without_autotuning():
    """Wraps each adapter's `get_tf_dataset` (private Keras API, tests only); idempotent."""
    for adapter in _ADAPTERS:
        original = adapter.get_tf_dataset
        if getattr(original, "without_autotuning", False):
            continue

        def get_tf_dataset(self, _original=original):
            return without_autotuning(_original(self))

        get_tf_dataset.without_autotuning = True
        adapter.get_tf_dataset = get_tf_dataset
