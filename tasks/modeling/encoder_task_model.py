"""What every encoder-plus-head task model shares: its config, its own loss, accuracy,
and the metadata that makes its `.keras` file self-contained."""

import json
import logging
import math

import keras
import tensorflow as tf
from keras import ops

from nlpzoo.layers import Encoder, transformer_of
from nlpzoo.layers.keras_internals import compiled_loss
from nlpzoo.tasks.modeling.auxiliary_mlm import AuxiliaryMaskedLM  # noqa: F401  (registered for from_config)
from nlpzoo.tasks.modeling.losses import replica_weight
from nlpzoo.tasks.text.raw_inputs import is_raw_input, raw_values
from nlpzoo.tasks.training.optimization import per_update, schedule_for_fit
from nlpzoo.tasks.training.step_clock import accumulation_steps
from nlpzoo.tasks.text.padding_fraction import PaddingFraction
from nlpzoo.tasks.text.preprocessor import TextPreprocessor

logger = logging.getLogger(__name__)

# How a model finds its `Task` from its metadata: `tasks.registry` sits above this
# module (layering), so it installs its `task_from_metadata` here when it is imported.
_task_resolver = None


def install_task_resolver(resolver):
    """Sets the function `EncoderTaskModel.task` turns its metadata into a `Task` with.

    `tasks.registry` installs `task_from_metadata` when it is imported (as
    every task family and `nlpzoo.zoo` import it): the model layer may not
    import the registry, which sits above it, so the registry hands its
    lookup down instead. Returns the resolver that was installed before.

    Examples:
    >>> def by_name(metadata):
    ...     return metadata["task"]
    >>> previous = install_task_resolver(by_name)
    >>> install_task_resolver(previous) is by_name
    True
    """
    global _task_resolver
    previous, _task_resolver = _task_resolver, resolver
    return previous


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
    `zoo.build_model`, `zoo.load_pretrained`, `zoo.load_trained` and the
    binaries attach them (the preprocessor once a vocabulary is known).

    Raw inputs: with its metadata, `fit`, `evaluate` and `predict` also take
    Python values, as KerasHub's tasks do: a list (or numpy array) of
    strings, of `(text, text_pair)` tuples for pair classification, of word
    lists (or strings, split into words) for word tasks; `y` holds label
    names or ids (word tasks: one tag list per sentence). The model's `task`
    turns them into its examples (`Task.raw_examples`) and its dataset
    (`Task.make_dataset`: the command line's bucketing), and `predict`
    returns them decoded (`Task.decode_predictions`: label names and
    probabilities; words, tags and entities with character offsets). Tensors
    and datasets work as in any Keras model.

    Learning rate: a model compiled without `total_steps` (`deferred_schedule`
    set by `zoo.build_model`) gets the command line's schedule when `fit`
    starts: warm-up over 10% of the fit's steps then decay, the steps being
    steps per epoch (the dataset's declared length) × epochs.
    """

    preprocessor = None
    task_metadata = None
    # Whether the head reads the encoder's pooled [CLS] vector. Heads that do not (taggers,
    # span NER) leave the pooler out of their trainable weights: it would get no gradient
    # (Keras warns at every trace) and optimizer slots for nothing. The encoder's own pooler
    # stays trainable, for the models that share the encoder and read it (multi-task).
    reads_pooled_output = True
    auxiliary_mlm = None
    padding_fraction = None
    deferred_schedule = None
    _task = None

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
            vocabulary: the WordPiece tokens in id order; with neither this nor
                `preprocessor` the model keeps no preprocessor (yet): it
                knows its task and labels but cannot read raw text.
            lowercase: whether text is lower-cased and accent-stripped.
            max_seq_length: the longest packed sequence the model was trained on.
            task_options: the task's options, as `tasks.registry.get_task` takes them.
            **extra: further JSON-serialisable facts to keep (`preset`, `task_module`).

        Returns:
            The model.
        """
        if preprocessor is None and vocabulary is not None:
            preprocessor = TextPreprocessor(vocabulary, lowercase=lowercase,
                                            max_seq_length=max_seq_length, name="preprocessor")
        metadata = {"task": task, "labels": [str(label) for label in labels],
                    "task_options": dict(task_options or {}), **extra}
        self._set_metadata(preprocessor, metadata)
        return self

    def unused_encoder_weights(self):
        """The encoder weights this model's loss never reaches: the pooler's when the head
        reads no pooled vector (`reads_pooled_output`), else none."""
        encoder = getattr(self, "encoder", None)
        if self.reads_pooled_output or encoder is None:
            return []
        return [v for layer in transformer_of(encoder).pooler_layers for v in layer.weights]

    @property
    def trainable_weights(self):
        return self._without_unused(super().trainable_weights)

    @property
    def trainable_variables(self):
        return self._without_unused(super().trainable_variables)

    def _without_unused(self, variables):
        unused = {id(v) for v in self.unused_encoder_weights()}
        return [v for v in variables if id(v) not in unused] if unused else variables

    @property
    def task(self):
        """This model's `Task` (`tasks.task.Task`), from its metadata; None without metadata.

        Set directly by `zoo.build_model` (which knows it); otherwise looked up
        by the task name and options the metadata holds, through the resolver
        `tasks.registry` installs (`install_task_resolver`).
        """
        if self._task is None and self.task_metadata is not None:
            if _task_resolver is None:
                raise ValueError(f"the model's task {self.task_metadata['task']!r} needs the "
                                 "task registry: import nlpzoo.zoo first")
            self._task = _task_resolver(self.task_metadata)
        return self._task

    @property
    def label_names(self):
        """The label names in label-id order (from the metadata); None without metadata."""
        return None if self.task_metadata is None else list(self.task_metadata["labels"])

    def _raw_setup(self):
        """`(task, preprocessor, labels)` for raw inputs; a clear error when they are missing."""
        if self.task_metadata is None or self.preprocessor is None:
            raise ValueError(
                f"{self.name} cannot read raw text: it has no preprocessor (no vocabulary is "
                "known). Build it with one (`build_model(preset, vocabulary=tokens)` or "
                "`tokenizer=`), start from a checkpoint (`load_pretrained(path, task)`), or "
                "call `model.attach_metadata(task=..., labels=..., vocabulary=...)`; or pass "
                "the features of `task.make_dataset`")
        task = self.task
        return task, task.preprocessor_of(self.preprocessor), self.label_names

    def raw_dataset(self, inputs, targets=None, batch_size=None, training=False, seed=None):
        """The dataset `fit` (`training=True`) or `evaluate` makes of raw inputs.

        `inputs` and `targets` as for `fit` (see the class docstring); the
        examples go through the task's `raw_examples`, then (evaluation) its
        `prediction_examples` (long sentences in windows) and `make_dataset`.
        """
        task, preprocessor, labels = self._raw_setup()
        if targets is None:
            raise ValueError("raw inputs to fit or evaluate need their labels: pass y (label "
                             "names or ids; for word tasks one tag list per sentence)")
        examples = task.raw_examples(raw_values(inputs), raw_values(targets), labels)
        if not training:
            examples = task.prediction_examples(examples, preprocessor)
        return task.make_dataset(examples, preprocessor, labels, batch_size=batch_size or 32,
                                 training=training, seed=seed)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, **kwargs):
        """Keras's `fit`; `x` may also be raw inputs with `y` their labels (class docstring).

        Raw `validation_data` (a `(inputs, labels)` tuple) is converted too.
        A model compiled without `total_steps` resolves its learning-rate
        schedule here (`deferred_schedule`), and says so in one line.
        """
        if is_raw_input(x):
            x, y = self.raw_dataset(x, y, batch_size, training=True), None
            batch_size = None
            kwargs["shuffle"] = False  # the dataset shuffles itself (and Keras would warn)
        validation = kwargs.get("validation_data")
        if isinstance(validation, (tuple, list)) and validation and is_raw_input(validation[0]):
            kwargs["validation_data"] = self.raw_dataset(
                validation[0], validation[1] if len(validation) > 1 else None,
                kwargs.get("validation_batch_size") or batch_size, training=False)
        self._resolve_schedule(x, batch_size, epochs, kwargs)
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """Keras's `evaluate`; `x` may also be raw inputs with `y` their labels."""
        if is_raw_input(x):
            x, y = self.raw_dataset(x, y, batch_size, training=False), None
            batch_size = None
        return super().evaluate(x, y, batch_size=batch_size, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """Keras's `predict`: raw outputs for tensors and datasets; for raw inputs, one
        decoded result per input (`Task.decode_predictions`: label names and
        probabilities, or words, tags and entities with character offsets)."""
        if not is_raw_input(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        task, preprocessor, labels = self._raw_setup()
        examples = task.raw_examples(raw_values(x), None, labels)
        outputs = task.predict_outputs(self, preprocessor, examples, labels, batch_size or 32)
        return task.decode_predictions(examples, outputs, labels)

    def _resolve_schedule(self, x, batch_size, epochs, fit_options):
        """Gives a model compiled without `total_steps` the schedule of this `fit`'s steps."""
        optimizer = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        if self.deferred_schedule is None or optimizer is None:
            return
        steps = fit_options.get("steps_per_epoch") or _steps_per_epoch(x, batch_size)
        epochs = epochs - fit_options.get("initial_epoch", 0)
        if not steps or epochs < 1:
            logger.warning("the training data's length is unknown: the learning rate stays "
                           "constant (give steps_per_epoch, or compile with total_steps)")
            return
        options = self.deferred_schedule
        accumulation = accumulation_steps(optimizer)  # steps are updates of this many batches
        schedule, line = schedule_for_fit(
            options["schedule"], options["learning_rate"], max(steps * epochs // accumulation, 1),
            warmup_fraction=options.get("warmup_fraction", 0.1),
            warmup_steps=options.get("warmup_steps"), start_step=int(optimizer.iterations))
        optimizer.learning_rate = per_update(schedule, accumulation)
        self.train_function = None  # traced with the old rate: trace again
        if fit_options.get("verbose", "auto") != 0:
            print(line, flush=True)  # beside Keras's own progress lines
        logger.info(line)

    def _set_metadata(self, preprocessor, metadata):
        try:
            # A copy through JSON: the config must hold plain JSON values only.
            metadata = json.loads(json.dumps(metadata))
        except TypeError as error:
            raise ValueError(f"task metadata must be JSON-serialisable: {error}") from None
        self.preprocessor = preprocessor
        self.task_metadata = metadata
        self._task = None  # looked up again from the new metadata

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
        # Models whose loss is compile's (classification, question answering): a mean
        # over the batch's rows that Keras scales by 1/replicas. The others compute
        # their own and call `_plus_layer_losses` themselves.
        loss = compiled_loss(self, y, y_pred, sample_weight)
        if loss is None:  # compiled without a loss: Keras's own (layer losses, or its error)
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        weight = replica_weight(ops.shape(tf.nest.flatten(y_pred)[0])[0])
        if not isinstance(weight, float):  # several replicas
            # The step takes the weighted gradient (this replica's share of the mean over
            # the whole batch); the value stays the replica's own mean, which Keras's
            # loss tracker weights by the replica's rows: the batch's mean, as logged
            # by one device, however unevenly the rows split.
            loss = loss * weight - ops.stop_gradient(loss * weight - loss)
        return self._plus_layer_losses(loss, x, training, scaled=True)

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
        if self.task_metadata is not None:
            config["task_metadata"] = self.task_metadata
        if self.auxiliary_mlm is not None:
            config["auxiliary_mlm"] = keras.saving.serialize_keras_object(self.auxiliary_mlm)
        if self.deferred_schedule is not None:
            config["deferred_schedule"] = dict(self.deferred_schedule)
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
        deferred_schedule = config.pop("deferred_schedule", None)
        model = cls(**config)
        model.deferred_schedule = deferred_schedule
        if auxiliary_mlm is not None:
            model.attach_auxiliary_mlm(keras.saving.deserialize_keras_object(auxiliary_mlm))
        if preprocessor is not None:
            # Its vocabulary comes afterwards, from the archive's assets (`load_assets`).
            preprocessor = keras.saving.deserialize_keras_object(preprocessor)
        if metadata is not None:
            model._set_metadata(preprocessor, metadata)
        return model

    def _plus_layer_losses(self, loss, x=None, training=False, scaled=False):
        """Adds regularisation losses that layers registered with `add_loss`, and scales
        both by 1/replicas under a tf.distribute strategy (`loss` is already scaled
        when `scaled`: compile's loss), as Keras's compiled loss is: the replicas'
        gradients are summed, and Keras's loss tracker multiplies the replicas back.
        `loss` is the task's mean over this replica's items, weighted by
        `replica_weight`; a layer loss (a penalty on the weights) is the same on every
        replica and is not. With the batch's features `x`, adds the auxiliary
        masked-LM loss too (`attach_auxiliary_mlm`)."""
        extras = [ops.cast(extra, "float32") for extra in self.losses]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
            extras = [extra / replicas for extra in extras]
            loss = loss if scaled else loss / replicas
        for extra in extras:
            loss = loss + extra
        return loss + self._auxiliary_loss(x, training)


def _steps_per_epoch(x, batch_size):
    """The batches of one pass over `x`: a dataset's declared length, a Keras
    `PyDataset`'s, or arrays' rows / `batch_size`; None when unknown."""
    if isinstance(x, tf.data.Dataset):
        batches = int(x.cardinality())
        return batches if batches > 0 else None
    if isinstance(x, keras.utils.PyDataset):
        return len(x)
    leaves = [leaf for leaf in tf.nest.flatten(x) if hasattr(leaf, "shape") and len(leaf.shape)]
    if leaves:
        return math.ceil(int(leaves[0].shape[0]) / (batch_size or 32))
    return None


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
