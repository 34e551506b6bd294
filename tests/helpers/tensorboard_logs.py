"""What a training binary wrote to TensorBoard, read back for tests."""

import os


def logged_step_rates(model_dir):
    """{step: learning rate} of the run's `logs/train` (the `learning_rate/step` scalars)."""
    import tensorflow as tf
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(os.path.join(model_dir, "logs", "train"),
                                   size_guidance={"tensors": 0})
    accumulator.Reload()
    return {event.step: float(tf.make_ndarray(event.tensor_proto))
            for event in accumulator.Tensors("learning_rate/step")}
