"""What every encoder-plus-head task model shares: its config, its own loss, accuracy,
and the metadata that makes its `.keras` file self-contained."""

import json

import keras
import tensorflow as tf
from keras import ops

from nlpzoo.layers import Encoder, transformer_of
from nlpzoo.tasks.modeling.auxiliary_mlm import AuxiliaryMaskedLM  # noqa: F401  (registered for from_config)
from nlpzoo.tasks.text.padding_fraction import PaddingFraction
from nlpzoo.tasks.text.preprocessor import TextPreprocessor


class EncoderTaskModel(keras.Model):
    """Base of task models built around an encoder (functional subclassing).

    Subclasses build their layers, call `super().__init__(inputs=..., outputs=...)`
    and list their own constructor arguments in `_task_config()`; the encoder
    is serialised here so `.keras` files load with no `custom_objects` (once
    our classes are registered: `import zoo`, or any `tasks` model module).

    Inference metadata (`attach_metadata`): a trained model can carry what is
    needed to use it on raw text, so its `.keras` file alone is enough to
    predict, evaluate and export:

    - `model.preprocessor`: a `TextPreprocessor` (vocabulary, lower-casing,
      `max_seq_length`); the vocabulary is saved as a Keras asset inside the
      `.keras` archive, the rest in the config;
    - `model.task_metadata`: a small JSON dict saved in the config: `task`
      (a `tasks.registry` name), `labels` (label names in id order),
      `task_options` (the task's constructor options: span NER decoding and
      threshold, ...) and any extra keys given (`tag_scheme`, `preset`, ...).

    Both are None on a model without metadata (and on `.keras` files saved
    before it existed); they are left out of the config then.
    """

    preprocessor = None
    task_metadata = None
    auxiliary_mlm = None
    padding_fraction = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(self.input, dict) and "padding_mask" in self.input:
            # How much of the computed input is padding: an internal figure, set past
            # Keras's tracking so that it stays out of the metrics (progress bar, logs,
            # `evaluate`, metrics.json); TensorBoard gets it as debug/padding_fraction.
            object.__setattr__(self, "padding_fraction", PaddingFraction())

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if self.padding_fraction is not None and isinstance(x, dict) and "padding_mask" in x:
            encoder = getattr(self, "encoder", None)
            pack_length = transformer_of(encoder).pack_length if encoder is not None else 0
            # Two-tower models run the encoder on text and text pair (`pair_` inputs).
            for name in ("padding_mask", "pair_padding_mask"):
                if name in x:
                    self.padding_fraction.update_state(x[name], pack_length)
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def attach_metadata(self, *, task, labels, preprocessor=None, vocabulary=None,
                        lowercase=True, max_seq_length=128, task_options=None, **extra):
        """Attaches the inference metadata that `get_config` and `.keras` files keep.

        Args:
            task: the task name (a `tasks.registry` name).
            labels: the label names in label-id order.
            preprocessor: the task's preprocessor (`task.make_preprocessor`);
                or, to make a `TextPreprocessor`, give the next three.
            vocabulary: the WordPiece tokens in id order.
            lowercase: whether text is lower-cased and accent-stripped.
            max_seq_length: the longest packed sequence the model was trained on.
            task_options: the task's options, as `tasks.registry.get_task` takes them.
            **extra: further JSON-serialisable facts to keep (`preset`, `task_module`).

        Returns:
            The model.
        """
        if preprocessor is None:
            preprocessor = TextPreprocessor(vocabulary, lowercase=lowercase,
                                            max_seq_length=max_seq_length, name="preprocessor")
        metadata = {"task": task, "labels": [str(label) for label in labels],
                    "task_options": dict(task_options or {}), **extra}
        self._set_metadata(preprocessor, metadata)
        return self

    def _set_metadata(self, preprocessor, metadata):
        try:
            # A copy through JSON: the config must hold plain JSON values only.
            metadata = json.loads(json.dumps(metadata))
        except TypeError as error:
            raise ValueError(f"task metadata must be JSON-serialisable: {error}") from None
        self.preprocessor = preprocessor
        self.task_metadata = metadata

    def attach_auxiliary_mlm(self, objective):
        """Adds an auxiliary masked-LM loss (`tasks.modeling.auxiliary_mlm`) to this model's training loss.

        `objective` is an `AuxiliaryMaskedLM` (see `auxiliary_mlm_for`); its
        head is tied to this model's encoder and becomes part of the model:
        trained, checkpointed, saved in `.keras` files and restored by
        `from_config`. Attach it before `fit` (and before restoring a
        checkpoint saved with it). Returns the model.
        """
        missing = [name for name in Encoder.INPUTS if name not in self.input]
        if not isinstance(self.input, dict) or missing:
            raise ValueError("an auxiliary masked-LM loss needs a model fed one encoder "
                             f"sequence ({', '.join(Encoder.INPUTS)}); {self.name} is not")
        self.auxiliary_mlm = objective.tie(self.encoder)
        return self

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        # Models whose loss is compile's (classification); the others add the
        # auxiliary loss in `_plus_layer_losses`.
        loss = super().compute_loss(x, y, y_pred, sample_weight, training=training)
        return loss + self._auxiliary_loss(x, training)

    def _auxiliary_loss(self, x, training):
        """λ · the auxiliary masked-LM loss (0 without one), scaled for tf.distribute."""
        if self.auxiliary_mlm is None or x is None:
            return 0.0
        step = self.optimizer.iterations if self.optimizer is not None else 0
        loss = self.auxiliary_mlm.loss(self.encoder, x, step, training)
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return loss / replicas if replicas > 1 else loss

    def _task_config(self):
        raise NotImplementedError

    def get_config(self):
        config = {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self._task_config(),
            "name": self.name,
            "trainable": self.trainable,
        }
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
            config["task_metadata"] = self.task_metadata
        if self.auxiliary_mlm is not None:
            config["auxiliary_mlm"] = keras.saving.serialize_keras_object(self.auxiliary_mlm)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        if "num_labels" in config:  # saved before the name was `num_classes`
            config["num_classes"] = config.pop("num_labels")
        preprocessor = config.pop("preprocessor", None)
        metadata = config.pop("task_metadata", None)
        auxiliary_mlm = config.pop("auxiliary_mlm", None)
        model = cls(**config)
        if auxiliary_mlm is not None:
            model.attach_auxiliary_mlm(keras.saving.deserialize_keras_object(auxiliary_mlm))
        if preprocessor is not None:
            # Its vocabulary comes afterwards, from the archive's assets (`load_assets`).
            model._set_metadata(keras.saving.deserialize_keras_object(preprocessor), metadata)
        return model

    def _plus_layer_losses(self, loss, x=None, training=False):
        """Adds regularisation losses that layers registered with `add_loss`, and scales
        the total by 1/replicas under a tf.distribute strategy, as Keras's own
        `compute_loss` does: the replicas' gradients are summed, and Keras's loss
        tracker multiplies the replicas back. With the batch's features `x`, adds
        the auxiliary masked-LM loss too (`attach_auxiliary_mlm`)."""
        for extra in self.losses:
            loss = loss + ops.cast(extra, "float32")
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        loss = loss / replicas if replicas > 1 else loss
        return loss + self._auxiliary_loss(x, training)


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
