"""Vectors for TensorBoard's embedding projector: `tensorboard --logdir <directory>`, Projector tab.

The projector reads a `projector_config.pbtxt` naming a tab-separated file of
vectors (one row per point) and a metadata file (a header row, then one row
of labels per point), which it shows beside each point and searches. The
directory is written as a whole and atomically (`tasks.io.atomic_files`), so
it is never left half-written, and only a directory this library wrote is
replaced.
"""

import os

import numpy as np
from google.protobuf import text_format
from tensorboard.plugins import projector

from nlpzoo.tasks.io.atomic_files import write_directory_atomically

VECTORS = "vectors.tsv"
METADATA = "metadata.tsv"


def _cell(value):
    """A TSV cell: tabs and line breaks would split rows and columns."""
    return " ".join(str(value).split())


def write_projector(directory, vectors, metadata, columns, name="embeddings", overwrite=False,
                    flag=None):
    """Writes `vectors` and their labels as a TensorBoard projector directory.

    Args:
        directory: the directory to write (new, or one written here with `overwrite`).
        vectors: float [N, H].
        metadata: N rows, each one value per column (the text, its source, ...).
        columns: the metadata's column names (the header row).
        name: the tensor's name in the projector's menu.
        overwrite: replace a projector directory written earlier.
        flag: the flag that named `directory`, for error messages.

    Raises:
        ValueError: a row count or width that does not match, or a directory
            that is not ours (`tasks.io.ownership.NotOurDirectory`).

    Examples:
    >>> import tempfile
    >>> folder = os.path.join(tempfile.mkdtemp(), "projector")
    >>> write_projector(folder, np.eye(2), [("a cat", "in.txt:1"), ("a\\tdog", "in.txt:2")],
    ...                 columns=("text", "where"))
    >>> open(os.path.join(folder, METADATA)).read().splitlines()
    ['text\\twhere', 'a cat\\tin.txt:1', 'a dog\\tin.txt:2']
    >>> open(os.path.join(folder, VECTORS)).read().splitlines()
    ['1.0\\t0.0', '0.0\\t1.0']
    """
    vectors = np.asarray(vectors, np.float32)
    metadata = [tuple(row) for row in metadata]
    if vectors.ndim != 2 or len(vectors) != len(metadata):
        raise ValueError(f"{len(metadata)} metadata rows for vectors of shape {vectors.shape}")
    if any(len(row) != len(columns) for row in metadata):
        raise ValueError(f"every metadata row needs {len(columns)} values ({', '.join(columns)})")
    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = name
    embedding.tensor_path = VECTORS
    embedding.metadata_path = METADATA

    def write(folder):
        with open(os.path.join(folder, VECTORS), "w", encoding="utf-8") as f:
            for row in vectors:  # the shortest decimal that reads back as the same float32
                f.write("\t".join(row.astype(str)) + "\n")
        with open(os.path.join(folder, METADATA), "w", encoding="utf-8") as f:
            for row in [tuple(columns), *metadata]:
                f.write("\t".join(_cell(value) for value in row) + "\n")
        with open(os.path.join(folder, "projector_config.pbtxt"), "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(config))

    write_directory_atomically(directory, write, overwrite=overwrite, what=flag)
