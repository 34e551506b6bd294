"""Saves that fail (disk full, permission denied) lose nothing.

The errors are simulated at the lowest write call (`os.replace`, the file
write, `keras.Model.save`, `save_weights`) failing on its Nth call, while the
real save code runs: the best-model callback and the checkpoint callback
inside a real `fit`, the atomic file and directory helpers, the model card
and the binaries' one-line error (`tools.cli.errors.run`). Each test checks that
the previous files are byte-identical and that no partial or temporary
entry is left.
"""

import errno
import hashlib
import json
import os
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.io import atomic_files
from nlpzoo.tasks.io.atomic_files import (
    FailedWrite,
    save_model_atomically,
    write_directory_atomically,
    write_json_atomically,
)
from nlpzoo.tasks.training.callbacks import BestModelCheckpoint
from nlpzoo.tasks.training.training_state import TrainingState, fit_resumable
from nlpzoo.tools.cli.errors import run
from nlpzoo.zoo.runs.model_card import write_model_card

DISK_FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
DENIED = PermissionError(errno.EACCES, os.strerror(errno.EACCES))


def _snapshot(directory):
    """{relative path: sha256} of every file under `directory`, hidden ones included."""
    found = {}
    for parent, folders, files in os.walk(directory):
        for name in files + [f for f in folders if os.path.islink(os.path.join(parent, f))]:
            full = os.path.join(parent, name)
            with open(full, "rb") as f:
                found[os.path.relpath(full, directory)] = hashlib.sha256(f.read()).hexdigest()
    return found


def _fail_on_call(monkeypatch, owner, name, n, error):
    """Makes `owner.name` raise `error` on its n-th call (1-based); counts every call."""
    real = getattr(owner, name)
    calls = {"count": 0}

    def failing(*args, **kwargs):
        calls["count"] += 1
        if calls["count"] == n:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing)
    return calls


def _tiny_model():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(inputs))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype("float32")
    return x, (x[:, 0] > 0).astype("int32")


# === The atomic helpers ===

@pytest.mark.parametrize("error", [DISK_FULL, DENIED], ids=["ENOSPC", "EACCES"])
@pytest.mark.parametrize("where", ["write", "rename"])
def test_a_failed_file_write_keeps_the_previous_file(tmp_path, monkeypatch, error, where):
    target = tmp_path / "metrics.json"
    write_json_atomically({"f1": 0.5}, str(target))
    before = _snapshot(tmp_path)
    if where == "rename":
        _fail_on_call(monkeypatch, os, "replace", 1, error)
    else:  # the write itself: the temporary file is created, then writing fails
        def failing_open(file, mode="r", *args, **kwargs):
            open(file, mode, *args, **kwargs).close()
            raise error

        monkeypatch.setattr(atomic_files, "open", failing_open, raising=False)
    with pytest.raises(FailedWrite) as raised:
        write_json_atomically({"f1": 0.9}, str(target))
    assert _snapshot(tmp_path) == before
    assert raised.value.errno == error.errno
    name = errno.errorcode[error.errno]
    assert str(raised.value) == (f"cannot write {target}: {error.strerror} ({name}); "
                                 f"the previous {target} is kept unchanged")


def test_a_failed_first_write_leaves_nothing(tmp_path, monkeypatch):
    _fail_on_call(monkeypatch, os, "replace", 1, DISK_FULL)
    with pytest.raises(FailedWrite, match="; nothing was written$"):
        write_model_card(str(tmp_path), {"title": "m"})
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("failing", ["save", "replace"])
def test_save_model_atomically_keeps_the_previous_model(tmp_path, monkeypatch, failing):
    model = _tiny_model()
    path = str(tmp_path / "best_model.keras")
    save_model_atomically(model, path)
    before = _snapshot(tmp_path)
    model.layers[-1].kernel.assign(np.ones((3, 2), "float32"))  # the new save would differ
    if failing == "save":
        _fail_on_call(monkeypatch, keras.Model, "save", 1, DISK_FULL)
    else:
        _fail_on_call(monkeypatch, os, "replace", 1, DISK_FULL)
    with pytest.raises(FailedWrite, match="No space left on device"):
        save_model_atomically(model, path)
    assert _snapshot(tmp_path) == before


def test_a_failed_directory_replacement_puts_the_old_one_back(tmp_path, monkeypatch):
    export = tmp_path / "export"

    def write(contents):
        def writer(directory):
            for name, text in contents.items():
                with open(os.path.join(directory, name), "w") as f:
                    f.write(text)
        return writer

    write_directory_atomically(str(export), write({"saved_model.pb": "old", "README.md": "a"}))
    before = _snapshot(tmp_path)
    # Rename 1 moves the old export aside, rename 2 (the new one into place) fails.
    _fail_on_call(monkeypatch, os, "rename", 2, DISK_FULL)
    with pytest.raises(FailedWrite, match=f"cannot write {export}: .*previous {export} is kept"):
        write_directory_atomically(str(export), write({"saved_model.pb": "new"}), overwrite=True)
    assert _snapshot(tmp_path) == before
    assert os.listdir(tmp_path) == ["export"]  # no hidden .tmp-/.old- directory left


def test_a_failed_write_inside_a_directory_names_the_directory(tmp_path):
    def write(directory):
        raise FailedWrite(os.path.join(directory, "vocab.txt"), DISK_FULL, False)

    with pytest.raises(FailedWrite) as raised:
        write_directory_atomically(str(tmp_path / "encoder"), write)
    assert str(raised.value) == (f"cannot write {tmp_path / 'encoder'}: No space left on device "
                                 "(ENOSPC); nothing was written")
    assert os.listdir(tmp_path) == []


# === The training callbacks, inside a real fit ===

def _fit(model, callbacks, epochs, initial_epoch=0):
    x, y = _data()
    model.fit(x, y, validation_data=(x, y), epochs=epochs, initial_epoch=initial_epoch,
              callbacks=callbacks, verbose=0, shuffle=False)


class _AlwaysImproves(keras.callbacks.Callback):
    """Logs a validation score that rises every epoch, so the best model is saved each time."""

    def on_epoch_end(self, epoch, logs=None):
        logs["val_score"] = float(epoch)


# os.replace calls of one best-model save: 1 the model, 2 the record (then the rollback).
@pytest.mark.parametrize("failure", [
    ("replace", 1, DISK_FULL), ("replace", 2, DISK_FULL), ("replace", 2, DENIED),
    ("save", 1, DISK_FULL), ("save", 1, DENIED)],
    ids=["model rename ENOSPC", "record rename ENOSPC", "record rename EACCES",
         "Model.save ENOSPC", "Model.save EACCES"])
def test_failed_best_model_save_keeps_the_previous_best(tmp_path, monkeypatch, failure):
    path = str(tmp_path / "best_model.keras")
    model = _tiny_model()
    best = BestModelCheckpoint(path, "val_score", "max")
    _fit(model, [_AlwaysImproves(), best], epochs=1)
    assert best.best_epoch == 1
    before = _snapshot(tmp_path)
    name, n, error = failure
    owner = os if name == "replace" else keras.Model
    _fail_on_call(monkeypatch, owner, name, n, error)
    with pytest.raises(FailedWrite) as raised:
        _fit(model, [_AlwaysImproves(), best], epochs=2, initial_epoch=1)
    assert _snapshot(tmp_path) == before  # model and record byte-identical, nothing left over
    assert (best.best, best.best_epoch) == (0.0, 1)  # the earlier best is still in force
    assert raised.value.errno == error.errno and "is kept unchanged" in str(raised.value)
    record = json.load(open(path + ".json"))
    assert record["epoch"] == 1 and record["validation"]["val_score"] == 0.0


def _fit_resumably(model, backup_dir, epochs, callbacks=()):
    """`fit_resumable` over the 16 examples in batches of 4, its state in `backup_dir`."""
    x, y = _data()
    batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    state = TrainingState(backup_dir, steps_per_epoch=4)
    fit_resumable(model, lambda skip: batches.repeat().skip(skip), 4, epochs, state,
                  callbacks=callbacks, validation_data=(x, y), verbose=0)


# A state save: 1 save_weights, then os.replace of 1 the weights, 2 the record.
@pytest.mark.parametrize("failure", [
    ("save_weights", 1, DISK_FULL), ("replace", 1, DISK_FULL), ("replace", 2, DENIED)],
    ids=["save_weights ENOSPC", "weights rename ENOSPC", "record rename EACCES"])
def test_failed_checkpoint_keeps_the_previous_one_and_resumes(tmp_path, monkeypatch, failure):
    backup_dir = str(tmp_path / "checkpoints")
    model = _tiny_model()
    _fit_resumably(model, backup_dir, epochs=1)
    before = _snapshot(tmp_path)
    saved_kernel = np.array(model.layers[-1].kernel)
    name, n, error = failure
    owner = os if name == "replace" else keras.Model
    calls = _fail_on_call(monkeypatch, owner, name, n, error)
    with pytest.raises(FailedWrite):
        _fit_resumably(model, backup_dir, epochs=3)
    assert calls["count"] >= n
    assert _snapshot(tmp_path) == before
    monkeypatch.undo()
    # The kept state is whole: a new model resumes from step 4 with its weights.
    resumed = _tiny_model()
    assert TrainingState(backup_dir, steps_per_epoch=4).restore(resumed)["step"] == 4
    np.testing.assert_array_equal(np.array(resumed.layers[-1].kernel), saved_kernel)


def test_binary_stops_with_one_line_and_keeps_best_model_and_checkpoint(
        tmp_path, monkeypatch, capsys):
    """What the training binaries do: their callbacks in their order, their error handling (run)."""
    model_dir = tmp_path / "run"
    best_path, backup_dir = str(model_dir / "best_model.keras"), str(model_dir / "checkpoints")

    def callbacks():
        return [_AlwaysImproves(), BestModelCheckpoint(best_path, "val_score", "max")]

    model = _tiny_model()
    os.makedirs(model_dir)
    _fit_resumably(model, backup_dir, epochs=1, callbacks=callbacks())
    before = _snapshot(model_dir)
    _fail_on_call(monkeypatch, keras.Model, "save", 1, DISK_FULL)
    monkeypatch.setattr(sys, "argv", ["train.py"])

    def main(argv):
        _fit_resumably(model, backup_dir, epochs=3, callbacks=callbacks())

    with pytest.raises(SystemExit) as exit_:
        run(main)
    assert exit_.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: cannot write {best_path}: No space left on device (ENOSPC); "
                   f"the previous {best_path} is kept unchanged"]
    assert _snapshot(model_dir) == before  # the state of epoch 1 too: resuming redoes epoch 2


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes into a 0o500 directory regardless")
def test_read_only_model_directory_keeps_everything(tmp_path):
    """A real permission error: the model directory made read-only (chmod 0o500)."""
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    path = str(model_dir / "best_model.keras")
    model = _tiny_model()
    best = BestModelCheckpoint(path, "val_score", "max")
    _fit(model, [_AlwaysImproves(), best], epochs=1)
    write_model_card(str(model_dir), {"title": "m"})
    before = _snapshot(model_dir)
    os.chmod(model_dir, 0o500)
    try:
        with pytest.raises(FailedWrite) as raised:
            _fit(model, [_AlwaysImproves(), best], epochs=2, initial_epoch=1)
        assert raised.value.errno == errno.EACCES
        assert "Permission denied (EACCES); the previous" in str(raised.value)
        with pytest.raises(FailedWrite, match="Permission denied"):
            write_model_card(str(model_dir), {"title": "new"})
    finally:
        os.chmod(model_dir, 0o700)
    assert _snapshot(model_dir) == before
