"""Writing a callback's `{tag: value}` scalars to a TensorBoard run, one step at a time."""

import tensorflow as tf


def write_scalars(writer, scalars, step):
    """Writes every `{tag: value}` of `scalars` at `step` with `writer` (a
    `tf.summary` file writer) and flushes it, so that TensorBoard shows them at once.

    Examples:
    >>> import tempfile
    >>> writer = tf.summary.create_file_writer(tempfile.mkdtemp())
    >>> write_scalars(writer, {"layer_mix/scale": 1.5}, step=0)
    >>> writer.close()
    """
    with writer.as_default():
        for tag, value in scalars.items():
            tf.summary.scalar(tag, value, step=step)
    writer.flush()
