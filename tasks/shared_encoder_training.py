"""Training several task models that share one encoder, with one optimizer.

Multi-task fine-tuning (tools/multitask.py) builds one model per task on the
same encoder object, so the encoder's variables are the same in every model
and each head is its own. One optimizer updates them all: built on the union
of the models' trainable variables, it keeps one set of moments per
variable (the encoder's are shared by every task) and one step count (the
learning-rate schedule runs over all steps of all tasks). A step of one
task's model moves the encoder and that task's head only.
"""

import tensorflow as tf

from tasks.optimization import copy_optimizer


def shared_optimizer(models):
    """A copy of the first model's optimizer, built on every model's trainable variables.

    The copy (`tasks.optimization.copy_optimizer`: same class, schedule,
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
        loss_mean.update_state(loss)
        model.compute_metrics(x, y, predictions)

    return step
