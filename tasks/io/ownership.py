"""Which directories a program may write into, replace or remove: only its own.

A directory becomes ours when we create it or find it empty: a marker file
(`MARKER`, naming the program and the library's version) is written into it
first. Everything that writes a run or an export asks `check_output` before
it touches anything, so a user's folder is never written into, and
`--overwrite` replaces only a directory we wrote that holds nothing else.
Some paths are never ours, whatever the flags: `/`, the home directory, the
working directory and its parents.

Examples:
>>> import os, tempfile
>>> folder = os.path.join(tempfile.mkdtemp(), "run")
>>> check_output(folder, "--model_dir")
'new'
>>> claim(folder, "tools/train.py")  # marked first, then written
>>> _ = open(os.path.join(folder, "config.json"), "w").write("{}")
>>> check_output(folder, "--model_dir", overwrite=True, own_names={"config.json"})
'ours'
>>> _ = open(os.path.join(folder, "notes.txt"), "w").write("mine")
>>> check_output(folder, "--model_dir", overwrite=True, own_names={"config.json"})
Traceback (most recent call last):
...
nlpzoo.tasks.io.ownership.NotOurDirectory: --model_dir=...run holds files nlpzoo did not write (notes.txt): refusing to replace it; choose a new or empty directory
"""

import datetime
import json
import os

MARKER = ".nlpzoo"  # written first into every directory we create or claim
LOCK = ".nlpzoo.lock"  # held by the run writing the directory (tasks.io.run_lock)
VERSION = "0.1.0"


class NotOurDirectory(ValueError):
    """A directory (or file) a program must not write into or replace; the message names the
    flag and the path, and says what to do instead."""


def protected_reason(path):
    """Why `path` may never be written into or replaced by a program, or None.

    Examples:
    >>> protected_reason("/")
    'the root directory'
    >>> protected_reason(".")
    'the working directory'
    >>> protected_reason("..")
    'a parent of the working directory'
    >>> protected_reason("runs/new") is None
    True
    """
    real = os.path.realpath(path)
    here = os.path.realpath(os.getcwd())
    if real == os.path.realpath(os.sep):
        return "the root directory"
    if real == os.path.realpath(os.path.expanduser("~")):
        return "the home directory"
    if real == here:
        return "the working directory"
    if here.startswith(real.rstrip(os.sep) + os.sep):
        return "a parent of the working directory"
    return None


def is_ours(directory):
    """True when `directory` carries our marker."""
    return os.path.isfile(os.path.join(directory, MARKER))


def _entries(directory):
    return sorted(name for name in os.listdir(directory) if name not in (MARKER, LOCK))


def _named(names, limit=5):
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_output(directory, flag, overwrite=False, own_names=None, adopt=None):
    """What writing into `directory` means: "new" (missing or empty) or "ours"; refusals
    are `NotOurDirectory`. Nothing is changed.

    Args:
        directory: the output directory a flag names.
        flag: the flag, for messages ("--model_dir"); None names the path alone.
        overwrite: the caller means to replace what the directory holds; then
            every entry must be one of `own_names` (what the program writes) or
            a directory of ours, or `own_names` None for a directory replaced as
            a whole, which must hold nothing but our own output.
        own_names: the names the program writes into the directory (for
            `overwrite`); None: any name, the directory being ours as a whole.
        adopt: a function `adopt(directory) -> bool` that recognises output an
            earlier version wrote without a marker (e.g. a run directory whose
            config.json is ours); such a directory counts as ours.

    Raises:
        NotOurDirectory: `directory` is a protected path, not a directory, or
            holds files we did not write.
    """
    if directory is None or not str(directory).strip():
        raise NotOurDirectory(f"{flag or 'the output directory'} is empty: give a directory "
                              "to write to")
    where = f"{flag}={directory}" if flag else str(directory)
    reason = protected_reason(directory)
    if reason:
        raise NotOurDirectory(f"{where} is {reason}: refusing to write there; choose a new "
                              "or empty directory")
    if not os.path.lexists(directory):
        return "new"
    if os.path.islink(directory) or not os.path.isdir(directory):
        raise NotOurDirectory(f"{where} exists and is not a directory")
    try:
        entries = _entries(directory)
    except OSError as error:
        raise NotOurDirectory(f"{where}: cannot read it ({error.strerror})")
    ours = is_ours(directory) or (adopt is not None and bool(entries) and adopt(directory))
    if not entries:
        return "new"
    if not ours:
        raise NotOurDirectory(
            f"{where} is not empty and was not written by nlpzoo (it holds "
            f"{_named(entries)}): refusing to write into it; choose a new or empty directory")
    if overwrite and own_names is not None:
        foreign = [name for name in entries if name not in set(own_names)
                   and not is_ours(os.path.join(directory, name))]  # e.g. a run's sub-runs
        if foreign:
            raise NotOurDirectory(
                f"{where} holds files nlpzoo did not write ({_named(foreign)}): refusing to "
                "replace it; choose a new or empty directory")
    return "ours"


def check_replaceable(directory, flag, overwrite=False, adopt=None):
    """For an output written as a whole (an export, a conversion): "new", or "ours" when
    `overwrite` may replace it; refusals are `NotOurDirectory` (see `check_output`).

    Examples:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> claim(folder, "tools/export.py"); _ = open(os.path.join(folder, "saved_model.pb"), "w")
    >>> check_replaceable(folder, "--output")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.ownership.NotOurDirectory: --output=... already exists; pass --overwrite to replace it
    >>> check_replaceable(folder, "--output", overwrite=True)
    'ours'
    """
    state = check_output(directory, flag, adopt=adopt)
    if state == "ours" and not overwrite:
        where = f"{flag}={directory}" if flag else str(directory)
        raise NotOurDirectory(f"{where} already exists; pass "
                              f"{'--overwrite' if flag else 'overwrite=True'} to replace it")
    return state


def claim(directory, tool):
    """Creates `directory` if needed and marks it as ours (written by `tool`), first thing.

    Call it only after `check_output` said "new" or "ours".
    """
    os.makedirs(directory, exist_ok=True)
    write_marker(directory, tool)


def write_marker(directory, tool):
    """Writes our marker into `directory` (kept as it is when there already is one)."""
    marker = os.path.join(directory, MARKER)
    if os.path.exists(marker):
        return
    record = {"written_by": "nlpzoo", "version": VERSION, "tool": tool,
              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                  timespec="seconds")}
    with open(marker, "w", encoding="utf-8") as f:
        json.dump(record, f)
        f.write("\n")


def check_output_file(path, flag, overwrite=False, looks_ours=None):
    """May a program write the file `path`? Refusals are `NotOurDirectory`; nothing changes.

    An existing file is replaced only with `overwrite` and only when
    `looks_ours(path)` says it is what the program writes (e.g. a vocabulary).

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> check_output_file(path, "--output")
    >>> check_output_file(os.path.dirname(path), "--output")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.ownership.NotOurDirectory: --output=... is a directory; give a file name
    """
    if path is None or not str(path).strip():
        raise NotOurDirectory(f"{flag} is empty: give a file to write to")
    where = f"{flag}={path}"
    if os.path.isdir(path):
        raise NotOurDirectory(f"{where} is a directory; give a file name")
    if not os.path.lexists(path):
        return
    if not overwrite:
        raise NotOurDirectory(f"{where} exists; pass --overwrite to replace it")
    if os.path.islink(path) or not os.path.isfile(path) or (
            looks_ours is not None and not looks_ours(path)):
        raise NotOurDirectory(f"{where} exists and is not a file nlpzoo wrote: refusing to "
                              "replace it; choose another file name")
