"""What every encoder-plus-head task model shares: its config, its own loss, accuracy."""

import keras
from keras import ops


class EncoderTaskModel(keras.Model):
    """Base of task models built around an encoder (functional subclassing).

    Subclasses build their layers, call `super().__init__(inputs=..., outputs=...)`
    and list their own constructor arguments in `_task_config()`; the encoder
    is serialised here so `.keras` files load with no `custom_objects`.
    """

    def _task_config(self):
        raise NotImplementedError

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self._task_config(),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)

    def _plus_layer_losses(self, loss):
        """Adds regularisation losses that layers registered with `add_loss`."""
        for extra in self.losses:
            loss = loss + ops.cast(extra, "float32")
        return loss


@keras.saving.register_keras_serializable(package="nlpzoo")
class MaskedAccuracy(keras.metrics.Metric):
    """Accuracy of arg-max scores where the label is >= 0 (-1 marks padding).

    Labels and scores are flattened, so [B, W] tag labels with [B, W, K]
    scores, and [B, T, L] span labels with [B, T·L, C] scores, both work.

    Examples:
    >>> import numpy as np
    >>> metric = MaskedAccuracy()
    >>> metric.update_state(np.array([[1, 0, -1]]),
    ...     np.array([[[0., 1.], [0., 1.], [1., 0.]]]))
    >>> float(metric.result())
    0.5
    """

    def __init__(self, name="accuracy", dtype="float32", **kwargs):
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.total = self.add_variable((), initializer="zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.reshape(ops.cast(y_true, "int32"), (-1,))
        predicted = ops.reshape(ops.cast(ops.argmax(y_pred, -1), "int32"), (-1,))
        real = ops.cast(y_true >= 0, "float32")
        self.correct.assign_add(ops.sum(ops.cast(predicted == y_true, "float32") * real))
        self.total.assign_add(ops.sum(real))

    def result(self):
        return self.correct / ops.maximum(self.total, 1.0)

    def reset_state(self):
        self.correct.assign(0.0)
        self.total.assign(0.0)
