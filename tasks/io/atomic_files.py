"""Writes that never leave a half-written file or directory behind, and never lose the old one.

Everything is written beside its target (same file system) and renamed over
it, so a crash or a kill leaves either the old content or the new one. A
write that fails (disk full, permission denied, ...) removes its own
temporary files, leaves the previous file as it was, and raises
`FailedWrite`: one line saying what could not be written, why, and that the
previous file is kept.

Examples:
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> write_json_atomically({"f1": 0.9}, os.path.join(folder, "metrics.json"))
>>> open(os.path.join(folder, "metrics.json")).read()
'{\\n  "f1": 0.9\\n}\\n'
>>> sorted(os.listdir(folder))
['metrics.json']
"""

import errno
import json
import math
import os
import shutil
import tempfile


class FailedWrite(OSError):
    """A write that failed and changed nothing: the previous content (if any) is kept.

    Args:
        path: what could not be written (a file or a directory).
        cause: the error that stopped it (an `OSError`, or an earlier `FailedWrite`).
        previous_kept: whether `path` existed before (and so is kept as it was).

    Examples:
    >>> import errno
    >>> error = FailedWrite("run/best_model.keras",
    ...                     OSError(errno.ENOSPC, "No space left on device"), True)
    >>> str(error)
    'cannot write run/best_model.keras: No space left on device (ENOSPC); the previous run/best_model.keras is kept unchanged'
    >>> error.errno == errno.ENOSPC
    True
    """

    def __init__(self, path, cause, previous_kept):
        if isinstance(cause, FailedWrite):  # a write inside a directory written atomically
            reason = cause.reason
        else:
            reason = cause.strerror or str(cause) or type(cause).__name__
            if cause.errno in errno.errorcode:
                reason = f"{reason} ({errno.errorcode[cause.errno]})"
        super().__init__(cause.errno, reason)
        self.path = os.fspath(path)
        self.reason = reason
        self.previous_kept = previous_kept

    def __str__(self):
        kept = (f"the previous {self.path} is kept unchanged" if self.previous_kept
                else "nothing was written")
        return f"cannot write {self.path}: {self.reason}; {kept}"


def _temporary_path(path):
    """A sibling name for `path`'s new content; Keras insists on its own file suffixes."""
    path = os.fspath(path)
    for suffix in (".weights.h5", ".keras"):
        if path.endswith(suffix):
            return path[: -len(suffix)] + ".partial" + suffix
    return path + ".partial"


def _remove_quietly(path):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
    except OSError:
        pass  # the error being reported matters more than a leftover


def _write_then_rename(path, temporary, write):
    """`write(temporary)`, then rename it to `path`; the temporary file never outlives a failure."""
    previous = os.path.exists(path)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException as error:
        _remove_quietly(temporary)
        if isinstance(error, OSError):
            raise FailedWrite(path, error, previous) from error
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


def _strict(data):
    """`data` with NaN and infinities as None (null): strict JSON, which every reader takes."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {key: _strict(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_strict(value) for value in data]
    return data


def _json_text(data):
    """Indented strict JSON (no NaN: `_strict`), keys sorted, a final newline.

    >>> _json_text({"loss": float("nan"), "f1": [0.5, float("inf")]})
    '{\\n  "f1": [\\n    0.5,\\n    null\\n  ],\\n  "loss": null\\n}\\n'
    """
    return json.dumps(_strict(data), indent=2, sort_keys=True, ensure_ascii=False,
                      allow_nan=False) + "\n"


def write_json_atomically(data, path):
    """Writes `data` as indented JSON with sorted keys (and a final newline)."""
    write_text_atomically(path, [_json_text(data)])


def json_writer(data):
    """A `write(path)` function for `write_files_together` that writes `data` as JSON.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "record.json")
    >>> json_writer({"epoch": 2})(path)
    >>> open(path).read()
    '{\\n  "epoch": 2\\n}\\n'
    """
    def write(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(_json_text(data))

    return write


def save_model_atomically(model, path):
    """`model.save(path)` (a `.keras` file) through a temporary file beside it.

    The file keeps no optimizer state (`save_without_optimizer_state`).
    """
    if not str(path).endswith(".keras"):
        raise ValueError(f"a Keras model file must end in .keras, got {path}")
    from nlpzoo.layers.keras_internals import save_without_optimizer_state  # loads Keras

    _write_then_rename(path, _temporary_path(path),
                       lambda temporary: save_without_optimizer_state(model, temporary))


def write_weights_atomically(model, path):
    """`model.save_weights(path)` (a `.weights.h5` file) through a temporary file beside it."""
    if not str(path).endswith(".weights.h5"):
        raise ValueError(f"a Keras weights file must end in .weights.h5, got {path}")
    _write_then_rename(path, _temporary_path(path),
                       lambda temporary: model.save_weights(temporary, overwrite=True))


def _keep_copy(path, backup):
    """A second name (or, where links are refused, a copy) for `path`'s current content."""
    _remove_quietly(backup)
    try:
        os.link(path, backup)
    except OSError:
        try:
            shutil.copy2(path, backup)
        except BaseException:
            _remove_quietly(backup)
            raise


def write_files_together(writes):
    """Writes several files so that either all of them change or none does.

    Each `write(temporary_path)` writes one file's new content beside its
    target; only when every one has succeeded are they renamed over the
    targets. Should a rename fail half-way, the targets already replaced get
    their previous content back (kept under a second name until the end).
    Used for a model and the record that describes it, or Keras's checkpoint
    weights and its epoch counter, which must never disagree.

    Args:
        writes: `(path, write)` pairs; `write` is called with the temporary
            path to write (Keras's suffixes `.keras` and `.weights.h5` are kept).

    Raises:
        FailedWrite: naming the file that could not be written; every target
            is as it was and no temporary file remains.

    Examples:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> model, record = os.path.join(folder, "model.bin"), os.path.join(folder, "model.json")
    >>> write_files_together([(model, lambda p: open(p, "wb").write(b"weights")),
    ...                       (record, json_writer({"epoch": 1}))])
    >>> sorted(os.listdir(folder))
    ['model.bin', 'model.json']
    """
    writes = [(os.fspath(path), write) for path, write in writes]
    previous = {path: os.path.exists(path) for path, _ in writes}
    temporaries = []
    current = None
    try:
        for path, write in writes:
            current = path
            temporaries.append(_temporary_path(path))
            write(temporaries[-1])
        replaced = []  # (path, the name its previous content is kept under, or None)
        try:
            for (path, _), temporary in zip(writes, temporaries):
                current = path
                backup = path + ".previous" if previous[path] else None
                if backup:
                    _keep_copy(path, backup)
                replaced.append((path, backup))
                os.replace(temporary, path)
        except BaseException:
            # Put every target back; a backup that cannot be put back stays where it is.
            for path, backup in reversed(replaced):
                if backup:
                    os.replace(backup, path)
                    # Renaming a hard link onto its twin does nothing: the name stays.
                    _remove_quietly(backup)
                else:
                    _remove_quietly(path)
            raise
        for _, backup in replaced:
            if backup:
                _remove_quietly(backup)
    except BaseException as error:
        for temporary in temporaries:
            _remove_quietly(temporary)
        if isinstance(error, OSError):
            raise FailedWrite(current, error, previous[current]) from error
        raise


def write_directory_atomically(directory, write, overwrite=False, adopt=None, what=None):
    """Calls `write(temporary_dir)` and renames the result to `directory`.

    The temporary directory is a hidden sibling of `directory` (same file
    system, so the rename is atomic) and carries our ownership marker
    (`tasks.io.ownership`). An existing non-empty `directory` is refused
    unless it is ours and `overwrite` is given, in which case it is replaced
    only once the new contents are complete; should that replacement fail,
    it is put back. A directory we did not write, the working directory, its
    parents, the home directory and `/` are never replaced.

    Args:
        directory: where the result goes.
        write: `write(temporary_dir)` fills the new directory.
        overwrite: replace an existing directory of ours.
        adopt: recognises an existing directory an earlier version wrote
            without a marker (see `tasks.io.ownership.check_output`).
        what: the flag that named `directory`, for messages (e.g. "--output").

    Raises:
        ValueError: (`tasks.io.ownership.NotOurDirectory`) `directory` is not
            a directory, is not ours, or exists (without `overwrite`).
        FailedWrite: the write or the rename failed: no temporary directory
            remains and an existing `directory` is as it was.
    """
    from nlpzoo.tasks.io.ownership import check_replaceable, write_marker

    state = check_replaceable(directory, what, overwrite=overwrite, adopt=adopt)
    directory = os.path.abspath(os.fspath(directory))
    exists = os.path.lexists(directory)
    parent = os.path.dirname(directory)
    temporary = old = None
    try:
        os.makedirs(parent, exist_ok=True)
        temporary = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.tmp-", dir=parent)
        write(temporary)
        write_marker(temporary, what or "nlpzoo")
        if exists:
            if state != "ours" and os.listdir(directory):
                raise ValueError(f"{directory} was filled while it was written: refusing "
                                 "to replace it")
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.old-", dir=parent)
            previous = os.path.join(old, "previous")
            os.rename(directory, previous)
            try:
                os.rename(temporary, directory)
            except BaseException:
                os.rename(previous, directory)
                raise
        else:
            os.rename(temporary, directory)
    except BaseException as error:
        for leftover in (temporary, old):
            if leftover:
                _remove_quietly(leftover)
        if isinstance(error, OSError):
            raise FailedWrite(directory, error, exists) from error
        raise
    if old:
        shutil.rmtree(old, ignore_errors=True)
