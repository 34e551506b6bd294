"""One run per directory: an advisory lock held while a program writes it.

`fcntl.flock` on a lock file inside the directory: the kernel releases it
when the process ends, however it ends, so a run killed with SIGKILL leaves
no stale lock and the same command resumes. A second program asking for the
lock is refused at once, told which process holds it.

Examples:
>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> lock = hold_run_lock(folder, "--model_dir")
>>> hold_run_lock(folder, "--model_dir") is lock  # the same process: already held
True
>>> release_run_lock(folder)
"""

import fcntl
import os

from nlpzoo.tasks.io.ownership import LOCK

_held = {}  # real path → open lock file, for the life of the process


class DirectoryInUse(RuntimeError):
    """Another process is writing the directory; the message names it."""


def _holder(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or "another process"
    except OSError:
        return "another process"


def hold_run_lock(directory, flag):
    """Takes the lock of `directory` (which must exist) for the rest of this process.

    Raises:
        DirectoryInUse: another process holds it.
    """
    key = os.path.realpath(directory)
    path = os.path.join(directory, LOCK)
    held = _held.get(key)
    if held is not None:
        try:
            if os.fstat(held.fileno()).st_ino == os.stat(path).st_ino:
                return held
        except OSError:
            pass
        _held.pop(key).close()  # the directory was removed and made again
    handle = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise DirectoryInUse(f"{flag}={directory} is in use by {_holder(path)}: wait for it to "
                             "finish or stop it, or choose another directory")
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()} on {os.uname().nodename}\n")
    handle.flush()
    _held[key] = handle
    return handle


def release_run_lock(directory):
    """Releases the lock of `directory` if this process holds it."""
    handle = _held.pop(os.path.realpath(directory), None)
    if handle is not None:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
