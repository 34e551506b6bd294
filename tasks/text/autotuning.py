"""tf.data pipelines without autotuning: the parallelism fixed at the machine's cores.

TensorFlow 2.21 can destroy an autotuned iterator only when the autotuning
model thread next wakes up, and that thread sleeps 10 ms, then 20, 40, …
(doubling) from the iterator's start: wake-ups at about 0.31, 0.63, 1.27,
2.55, 5.11, 10.2, 20.5 s …. So a `fit`, `evaluate` or `predict` over an
autotuned dataset, or a pass that fills a cache, could end seconds after its
work: measured here, iterators used for 0.51 s and 3.0 s were gone 0.68 s and
5.13 s after their start (another, used 1.51 s, at once), and two timed windows
of equal work took 10.2 s and 20.5 s (docs/performance.md, "The Intel Xeon
gap"). Without autotuning, `num_parallel_calls=AUTOTUNE` runs as many calls
at once as the machine has cores (at most 16) and `prefetch(AUTOTUNE)` keeps
its own buffer, so our pipelines keep their parallelism and lose the wait.
"""

import tensorflow as tf


def without_autotuning(dataset):
    """`dataset` with `tf.data.Options().autotune.enabled = False` (see the module docstring).

    Examples:
    >>> import tensorflow as tf
    >>> dataset = without_autotuning(tf.data.Dataset.range(4).map(
    ...     lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
    >>> dataset.options().autotune.enabled, [int(x) for x in dataset]
    (False, [0, 2, 4, 6])
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
