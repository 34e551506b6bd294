"""A finished run's hyperparameters and final metrics for TensorBoard's HParams dashboard."""

import os

import tensorflow as tf
from tensorboard.plugins.hparams import api as hp

HPARAMS_RUN = "hparams"  # the sub-folder of the logs that holds the HParams session
METRIC_PREFIX = "final/"


def hparams_of(config):
    """The run settings HParams can show: every bool, number and string of `config`.

    Nested dicts (`task_options`) are flattened as `task_options.<name>`;
    lists (the labels) and unset (None) values are left out.

    Examples:
    >>> hparams_of({"learning_rate": 1e-3, "labels": ["O"], "dropout": None,
    ...             "task_options": {"stride": 16, "tag_scheme": "IOB2"}})
    {'learning_rate': 0.001, 'task_options.stride': 16, 'task_options.tag_scheme': 'IOB2'}
    """
    hparams = {}
    for name, value in config.items():
        if isinstance(value, dict):
            for inner, inner_value in hparams_of(value).items():
                hparams[f"{name}.{inner}"] = inner_value
        elif isinstance(value, (bool, int, float, str)):
            hparams[name] = value
    return hparams


def write_hparams(log_dir, config, metrics):
    """Writes one HParams session: the run's settings and its final metrics.

    The session goes to `<log_dir>/hparams` with each number of `metrics`
    (what `metrics.json` holds) as the scalar `final/<name>` at step 0. Runs
    under one `tensorboard --logdir` then line up in the HParams table,
    one row per run, one column per setting and per final metric. Written
    once training has finished, so a killed run shows no half row.

    Args:
        log_dir: the run's TensorBoard folder (`<model_dir>/logs`).
        config: the run's settings (`config.json`); see `hparams_of`.
        metrics: the final metrics, `{name: number}`; other values are left out.

    Returns:
        The folder written to.

    Examples:
    >>> import tempfile
    >>> folder = write_hparams(tempfile.mkdtemp(), {"learning_rate": 1e-3}, {"f1": 0.5})
    >>> os.path.basename(folder), len(tf.io.gfile.listdir(folder))
    ('hparams', 1)
    """
    folder = os.path.join(log_dir, HPARAMS_RUN)
    writer = tf.summary.create_file_writer(folder)
    try:
        with writer.as_default():
            hp.hparams(hparams_of(config))
            for name, value in sorted(metrics.items()):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    tf.summary.scalar(METRIC_PREFIX + name, float(value), step=0)
        writer.flush()
    finally:
        writer.close()
    return folder
