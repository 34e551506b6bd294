"""The share of the token slots an encoder computes that hold padding."""

import keras
from keras import ops

from nlpzoo.layers.sequence_packing import packing_plan


@keras.saving.register_keras_serializable(package="nlpzoo")
class PaddingFraction(keras.metrics.Metric):
    """1 − real tokens / token slots over the batches seen (an epoch, in `fit`).

    A slot is one position of the [batch, time] input the encoder runs on;
    with `pack_length` > 0 the encoder attends in packed rows instead, and the
    slots are those of the rows (`layers.sequence_packing.packing_plan`); its
    position-wise layers then compute on the real tokens alone, no padding.
    Every `EncoderTaskModel` fed a `padding_mask` keeps one as
    `model.padding_fraction`, updated by each training and evaluation batch:
    what bucketing or packing leaves of the padding. It is an internal
    figure, not one of the model's metrics (no progress bar, logs or
    `metrics.json`): `tasks.training.callbacks.PaddingFractionLogger` writes
    it to TensorBoard under `debug/`, and it is reset only by its reader.

    Examples:
    >>> import numpy as np
    >>> metric = PaddingFraction()
    >>> metric.update_state(np.array([[1, 1, 1, 0], [1, 0, 0, 0]]))
    >>> round(float(metric.result()), 3)
    0.5
    >>> metric.reset_state()
    >>> metric.update_state(np.array([[1, 1, 1, 0], [1, 0, 0, 0]]), pack_length=4)
    >>> float(metric.result())  # both fit in one row of 4
    0.0
    """

    def __init__(self, name="padding_fraction", **kwargs):
        super().__init__(name=name, **kwargs)
        self.real = self.add_variable(shape=(), initializer="zeros", dtype="float32",
                                      name="real")
        self.slots = self.add_variable(shape=(), initializer="zeros", dtype="float32",
                                       name="slots")

    def update_state(self, padding_mask, pack_length=0):
        real = ops.cast(ops.not_equal(padding_mask, 0), "float32")
        if pack_length:
            _, _, _, num_rows, length = packing_plan(padding_mask, pack_length)
            slots = ops.cast(num_rows * length, "float32")
        else:
            slots = ops.cast(ops.size(real), "float32")
        self.real.assign_add(ops.sum(real))
        self.slots.assign_add(slots)

    def result(self):
        return 1.0 - self.real / ops.maximum(self.slots, 1.0)

    def reset_state(self):
        self.real.assign(0.0)
        self.slots.assign(0.0)
