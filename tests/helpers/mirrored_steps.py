"""Run as a script by tests/test_distribution.py: the same training steps on one device and
mirrored over two logical CPU devices, from the same weights on the same global batches.

    python tests/helpers/mirrored_steps.py TASK TRAIN_FILE JIT_COMPILE [GLOBAL_BATCH]
    # prints one JSON line; GLOBAL_BATCH 8 by default (an odd one splits unevenly)

Two logical devices must be configured before TensorFlow initialises its devices, hence a
process of its own. Dropout is off and the optimizer is plain SGD, so that the two runs
differ only by how the batch is split (an optimizer that normalises its steps, like Adam,
would hide a gradient scaled by the number of replicas).
"""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

NUM_STEPS = 4
GLOBAL_BATCH = 8


def run_steps(strategy_name, task, data, tokens, labels, weights, jit_compile):
    """(per-step losses, starting weights, final weights, replicas) of NUM_STEPS SGD steps
    under a strategy, from `weights` (None: the new model's own)."""
    import keras

    from nlpzoo.tasks.training.callbacks import StepLogger
    from nlpzoo.tasks.training import distribution
    from nlpzoo.zoo import build_task_model

    strategy = distribution.make_strategy(strategy_name)
    with strategy.scope():
        model = build_task_model(task, "bert_tiny", compile=False, dropout=0.0,
                                 attention_dropout=0.0, vocabulary_size=len(tokens),
                                 **task.model_head_options(labels))
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss=task.loss(),
                      jit_compile=jit_compile)
    for features, _ in data.take(1):
        model(features)  # builds the weights
    distribution.build_for_fit(model, strategy, data)  # as the binaries do
    if weights is not None:
        model.set_weights(weights)
    start = model.get_weights()
    losses = []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(float(logs["loss"])))
    log_dir = tempfile.mkdtemp()
    model.fit(distribution.shard_by_data(data), epochs=1, verbose=0, shuffle=False,
              callbacks=[record, StepLogger(log_dir, every_steps=1)])
    step_losses = _step_losses(log_dir)
    shutil.rmtree(log_dir)
    return losses, step_losses, start, model.get_weights(), strategy.num_replicas_in_sync


def _step_losses(log_dir):
    """The per-step losses StepLogger wrote (it reads Keras's loss mean, whose variables are
    sync-on-read under a strategy)."""
    import tensorflow as tf
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from nlpzoo.tasks.training.callbacks import StepLogger

    accumulator = EventAccumulator(log_dir, size_guidance={"tensors": 0})
    accumulator.Reload()
    return [float(tf.make_ndarray(event.tensor_proto))
            for event in accumulator.Tensors(StepLogger.loss_tag)]


def main(task_name, train_file, jit_compile, global_batch=GLOBAL_BATCH):
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import numpy as np

    from nlpzoo.tasks.registry import get_task_class
    from nlpzoo.tasks.text.tokenizer import build_vocabulary

    keras.utils.set_random_seed(7)
    task = get_task_class(task_name)()
    examples = task.read(train_file)[:global_batch * NUM_STEPS]
    task = task.adapt(examples)
    labels = task.label_names(examples)
    tokens = build_vocabulary(task.texts(examples), 300, True)
    preprocessor = task.make_preprocessor(tokens, True, 32)
    data = task.make_dataset(examples, preprocessor, labels, batch_size=global_batch,
                             training=False).take(NUM_STEPS).cache()
    one_losses, one_step_losses, start, one_weights, _ = run_steps(
        "one_device", task, data, tokens, labels, None, jit_compile)
    mirrored_losses, mirrored_step_losses, _, mirrored_weights, replicas = run_steps(
        "mirrored", task, data, tokens, labels, start, jit_compile)
    print(json.dumps({
        "replicas": replicas, "one_device": one_losses, "mirrored": mirrored_losses,
        "one_device_step_logger": one_step_losses, "mirrored_step_logger": mirrored_step_losses,
        "max_weight_difference": max(float(np.max(np.abs(a - b)))
                                     for a, b in zip(one_weights, mirrored_weights)),
        "max_weight_change": max(float(np.max(np.abs(a - b)))
                                 for a, b in zip(one_weights, start)),
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] == "true", *map(int, sys.argv[4:]))
