"""Writes that never leave a half-written file or directory behind.

Everything is written beside its target (same file system) and renamed over
it, so a crash or a kill leaves either the old content or the new one.

Examples:
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> write_json_atomically({"f1": 0.9}, os.path.join(folder, "metrics.json"))
>>> open(os.path.join(folder, "metrics.json")).read()
'{\\n  "f1": 0.9\\n}\\n'
>>> sorted(os.listdir(folder))
['metrics.json']
"""

import json
import os
import shutil
import tempfile


def _write_then_rename(path, temporary, write):
    """`write(temporary)`, then rename it to `path`; the temporary file never outlives a failure."""
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def write_text_atomically(path, lines):
    """Writes the strings `lines` (any iterable) to `path` through `path + ".partial"`."""
    def write(temporary):
        with open(temporary, "w", encoding="utf-8") as f:
            f.writelines(lines)

    _write_then_rename(path, f"{path}.partial", write)


def write_binary_atomically(path, write):
    """Calls `write(f)` on a binary file that becomes `path` only once `write` returned.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.bin")
    >>> write_binary_atomically(path, lambda f: f.write(b"\\x00\\x01"))
    >>> open(path, "rb").read()
    b'\\x00\\x01'
    """
    def write_file(temporary):
        with open(temporary, "wb") as f:
            write(f)

    _write_then_rename(path, f"{path}.partial", write_file)


def write_json_atomically(data, path):
    """Writes `data` as indented JSON with sorted keys (and a final newline)."""
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_text_atomically(path, [text])


def save_model_atomically(model, path):
    """`model.save(path)` (a `.keras` file) through a temporary file beside it."""
    if not str(path).endswith(".keras"):
        raise ValueError(f"a Keras model file must end in .keras, got {path}")
    _write_then_rename(path, str(path)[: -len(".keras")] + ".partial.keras", model.save)


def write_directory_atomically(directory, write, overwrite=False):
    """Calls `write(temporary_dir)` and renames the result to `directory`.

    The temporary directory is a hidden sibling of `directory` (same file
    system, so the rename is atomic). An existing non-empty `directory` is
    refused unless `overwrite`, in which case it is replaced only once the new
    contents are complete.
    """
    directory = os.path.abspath(os.fspath(directory))
    exists = os.path.lexists(directory)
    if exists and not os.path.isdir(directory):
        raise ValueError(f"{directory} exists and is not a directory")
    if exists and os.listdir(directory) and not overwrite:
        raise ValueError(f"{directory} exists and is not empty; choose a new directory or "
                         "pass overwrite=True to replace it")
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.tmp-", dir=parent)
    try:
        write(temporary)
        if exists:
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.old-", dir=parent)
            os.rename(directory, os.path.join(old, "previous"))
            os.rename(temporary, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(temporary, directory)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
