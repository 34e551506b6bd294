"""A finished run's hyperparameters and final metrics for TensorBoard's HParams dashboard."""

import os

import tensorflow as tf
from tensorboard.plugins.hparams import api as hp

METRIC_PREFIX = "final/"
# The settings that usually differ between the runs a person compares come first.
# One run cannot know the others, so this is a guess; TensorBoard 2.21 itself lists
# the hyperparameters whose values differ between the shown runs first (then by name)
# when no experiment config is written, and we write none for that reason.
USUALLY_VARYING = ("preset", "init_checkpoint", "learning_rate", "epochs", "batch_size",
                   "head", "adapter_size", "lora_rank", "freeze_encoder", "layer_mix",
                   "layer_lr_decay", "gradual_unfreezing")


def hparams_of(config):
    """The run settings HParams can show: every bool, number and string of `config`.

    Nested dicts (`task_options`) are flattened as `task_options.<name>`;
    lists (the labels) and unset (None) values are left out; an absolute
    path (a data file, the checkpoint) is shown by its last component.
    The usually varying settings (`USUALLY_VARYING`) come first, the others
    by name.

    Examples:
    >>> hparams_of({"max_seq_length": 128, "learning_rate": 1e-3, "labels": ["O"],
    ...             "dropout": None, "init_checkpoint": "/ckpt/all-MiniLM-L6-v2",
    ...             "task_options": {"stride": 16, "tag_scheme": "IOB2"}})
    {'init_checkpoint': 'all-MiniLM-L6-v2', 'learning_rate': 0.001, 'max_seq_length': 128, \
'task_options.stride': 16, 'task_options.tag_scheme': 'IOB2'}
    """
    hparams = {}
    for name, value in config.items():
        if isinstance(value, dict):
            for inner, inner_value in hparams_of(value).items():
                hparams[f"{name}.{inner}"] = inner_value
        elif isinstance(value, str) and os.path.isabs(value):
            hparams[name] = os.path.basename(os.path.normpath(value))
        elif isinstance(value, (bool, int, float, str)):
            hparams[name] = value
    first = [name for name in USUALLY_VARYING if name in hparams]
    rest = sorted(name for name in hparams if name not in USUALLY_VARYING)
    return {name: hparams[name] for name in first + rest}


def write_hparams(log_dir, config, metrics, trial=None):
    """Writes the run's HParams session: its settings and its final metrics.

    The session goes into the run's existing `validation` run (`train` when
    it has none), not into a run of its own, so TensorBoard shows no extra
    run of one-point charts. It is named `trial`, by default the run
    directory's name (the folder above `log_dir`), so the HParams table says
    `pretrained` and `scratch`, not a hash. Each number of `metrics` (what
    `metrics.json` holds) becomes the scalar `final/<name>` at step 0: the
    table's metric columns (with the last values of the run's other series).
    Written once training has finished, so a killed run shows no half row.

    Args:
        log_dir: the run's TensorBoard folder (`<model_dir>/logs`).
        config: the run's settings (`config.json`); see `hparams_of`.
        metrics: the final metrics, `{name: number}`; other values are left out.
        trial: the session's name in the HParams table.

    Returns:
        The folder written to.

    Examples:
    >>> import tempfile
    >>> log_dir = os.path.join(tempfile.mkdtemp(), "scratch", "logs")
    >>> folder = write_hparams(log_dir, {"learning_rate": 1e-3}, {"f1": 0.5})
    >>> os.path.relpath(folder, log_dir), len(tf.io.gfile.listdir(folder))
    ('train', 1)
    """
    log_dir = os.path.abspath(log_dir)
    if trial is None:
        trial = os.path.basename(os.path.dirname(log_dir))
    run = "validation" if tf.io.gfile.isdir(os.path.join(log_dir, "validation")) else "train"
    folder = os.path.join(log_dir, run)
    writer = tf.summary.create_file_writer(folder)
    try:
        with writer.as_default():
            hp.hparams(hparams_of(config), trial_id=trial)
            for name, value in sorted(metrics.items()):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    tf.summary.scalar(METRIC_PREFIX + name, float(value), step=0)
        writer.flush()
    finally:
        writer.close()
    return folder
