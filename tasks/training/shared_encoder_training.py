"""Training several task models that share one encoder, with one optimizer.

Multi-task fine-tuning (tools/multitask.py) builds one model per task on the
same encoder object, so the encoder's variables are the same in every model
and each head is its own. One optimizer updates them all: built on the union
of the models' trainable variables, it keeps one set of moments per
variable (the encoder's are shared by every task) and one step count (the
learning-rate schedule runs over all steps of all tasks). A step of one
task's model moves the encoder and that task's head only.
"""

import os

import keras
import tensorflow as tf

from nlpzoo.tasks.training.callbacks import StepLogger
from nlpzoo.tasks.training.layerwise_optimizer import LayerwiseAdamW
from nlpzoo.tasks.training.optimization import copy_optimizer, learning_rate_at


def shared_optimizer(models):
    """A copy of the first model's optimizer, built on every model's trainable variables.

    The copy (`tasks.training.optimization.copy_optimizer`: same class, schedule,
    per-part rates and weight-decay exclusions) leaves each model its own
    compiled optimizer, unused, so that a model saved alone carries no
    optimizer state of the others.

    Examples:
    >>> import keras
    >>> dense = keras.layers.Dense(2)
    >>> models = []
    >>> for width in (3, 4):
    ...     inputs = keras.Input((5,))
    ...     model = keras.Model(inputs, keras.layers.Dense(width)(dense(inputs)))
    ...     model.compile("adam", "mse")
    ...     models.append(model)
    >>> optimizer = shared_optimizer(models)
    >>> optimizer is models[0].optimizer, len(optimizer.variables) > 2 * 6
    (False, True)
    """
    optimizer = copy_optimizer(models[0].optimizer)
    variables = {id(v): v for model in models for v in model.trainable_variables}
    optimizer.build(list(variables.values()))
    return optimizer


class SharedEncoderModels(keras.Model):
    """The task models on one encoder and their shared optimizer, as one Keras model.

    Training does not call it: it is what the training state saves and
    restores (`tasks.training.training_state.TrainingState`): every model's
    weights (the shared encoder's once), the optimizer's moments and step
    count, and the dropout layers' random states.

    Examples:
    >>> shared = keras.layers.Dense(2)
    >>> def head_on_shared(width):
    ...     features = keras.Input((5,))
    ...     return keras.Model(features, keras.layers.Dense(width)(shared(features)))
    >>> models = [head_on_shared(3), head_on_shared(4)]
    >>> for model in models:
    ...     model.compile("adam", "mse")
    >>> together = SharedEncoderModels(models, shared_optimizer(models))
    >>> len(together.weights)  # the shared layer's kernel and bias once, then each head's
    6
    """

    def __init__(self, models, optimizer, **kwargs):
        super().__init__(**kwargs)
        self.task_models = list(models)
        self.optimizer = optimizer
        self.built = True  # of built models: nothing to build


def train_step(model, optimizer, loss_mean):
    """`step((features, labels))`: one update of `model` by the shared `optimizer`.

    What Keras's own `train_step` does (the model's `compute_loss`, loss
    scaling under `mixed_float16`, the model's metrics), with an optimizer
    that is not the model's. The loss goes to `loss_mean` (a
    `keras.metrics.Mean`). Wrap it in `tf.function`.

    Variables the loss does not reach (the encoder's pooler under a tagger's
    head) are left out of the update, as they would be by Keras, but without
    its warning at every trace.
    """
    def step(data):
        x, y = data
        with tf.GradientTape() as tape:
            predictions = model(x, training=True)
            loss = model.compute_loss(x, y, predictions, training=True)
            scaled = optimizer.scale_loss(loss)
        variables = model.trainable_variables
        optimizer.apply_gradients([(gradient, variable) for gradient, variable in
                                   zip(tape.gradient(scaled, variables), variables)
                                   if gradient is not None])
        # Under tf.distribute the model's loss is its replica's share (1/replicas: the
        # optimizer sums the replicas' gradients); the mean logs the replica's whole loss,
        # as Keras's own train step does.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        loss_mean.update_state(loss * replicas if replicas > 1 else loss)
        model.compute_metrics(x, y, predictions)

    return step


def distributed_step(step, strategy, jit_compile=False):
    """`step` (a `train_step`) run on every replica of `strategy` at each call, on a
    batch of `strategy.experimental_distribute_dataset(...)`: each replica takes its
    share of the global batch, and the shared optimizer sums their gradients.

    Keras's own `fit` idiom: the step compiled on its own (`jit_compile`), called
    through `strategy.run` from a `tf.function`.

    Examples:
    >>> dense = keras.layers.Dense(1, kernel_initializer="zeros")
    >>> model = keras.Sequential([keras.Input((2,)), dense])
    >>> model.compile("sgd", "mse")
    >>> strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    >>> optimizer = shared_optimizer([model])
    >>> step = distributed_step(train_step(model, optimizer, keras.metrics.Mean()), strategy)
    >>> data = tf.data.Dataset.from_tensors((tf.ones((4, 2)), tf.ones((4, 1))))
    >>> step(next(iter(strategy.experimental_distribute_dataset(data))))
    >>> int(optimizer.iterations.numpy())
    1
    """
    one_step = tf.function(step, reduce_retracing=True, jit_compile=jit_compile)

    @tf.function(reduce_retracing=True)
    def step_on_replicas(data):
        strategy.run(one_step, args=(data,))

    return step_on_replicas


class StepLog:
    """The per-step TensorBoard series of a multi-task run, every `every_steps` steps.

    At step `s` (1 after the first) with `s` a multiple of `every_steps`, and
    at each epoch's last step, it writes the learning rate the step applied
    (`learning_rate/step`, and `learning_rate/head` when the heads have their
    own rate) to `<logs>/train`, and to `<logs>/<entry>/train` each entry's
    `loss/step`: the mean loss of that entry's batches since the last write
    (nothing for an entry not drawn since). Between writes nothing leaves
    the device: the losses add up in each entry's loss mean.

    Examples:
    >>> import tempfile
    >>> log = StepLog(tempfile.mkdtemp(), [], None, every_steps=10)
    >>> [log.due(s, epoch_ends=False) for s in (9, 10)], log.due(3, epoch_ends=True)
    ([False, True], True)
    """

    def __init__(self, logs, entries, optimizer, every_steps):
        self.entries, self.optimizer, self.every_steps = entries, optimizer, int(every_steps)
        self.writer = tf.summary.create_file_writer(os.path.join(logs, "train"))
        self.entry_writers = {entry.name: tf.summary.create_file_writer(
            os.path.join(logs, entry.name, "train")) for entry in entries}
        self.bases = {}

    def due(self, step, epoch_ends):
        return epoch_ends or step % self.every_steps == 0

    def epoch_begins(self):
        self.bases = {entry.name: (0.0, 0.0) for entry in self.entries}  # means were reset

    def after_step(self, step, epoch_ends):
        if not self.due(step, epoch_ends):
            return
        inner = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        rate = float(learning_rate_at(self.optimizer, step - 1))
        with self.writer.as_default(step=step):
            tf.summary.scalar(StepLogger.tag, rate)
            if isinstance(inner, LayerwiseAdamW) and inner.head_multiplier != 1:
                tf.summary.scalar(StepLogger.head_tag, rate * inner.head_multiplier)
        for entry in self.entries:
            total, count = (float(entry.loss_mean.total.numpy()),
                            float(entry.loss_mean.count.numpy()))
            base_total, base_count = self.bases[entry.name]
            if count > base_count:
                with self.entry_writers[entry.name].as_default(step=step):
                    tf.summary.scalar(StepLogger.loss_tag,
                                      (total - base_total) / (count - base_count))
            self.bases[entry.name] = (total, count)

    def close(self):
        for writer in (self.writer, *self.entry_writers.values()):
            writer.flush()
            writer.close()
