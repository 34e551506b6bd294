"""How a binary ends when something goes wrong: one line on stderr and a non-zero exit.

User errors (a flag, a file, a model directory) print `error: <what is wrong>` and
exit 1; Ctrl-C at any moment exits 130 with one line; a reader that closes the
output early (`predict ... | head`) ends the program quietly. Anything else is a
bug of ours: one line saying so and where the full traceback was written.
Under multi-worker training every such line names the worker
(`error: worker 1: ...`), and a worker that lost its peers says so
(`tasks.training.distribution.worker_failure`) instead of reporting a bug.
"""

import datetime
import math
import os
import signal
import sys
import tempfile
import traceback

from absl import app, flags

from nlpzoo.tasks.io.atomic_files import FailedWrite
from nlpzoo.tasks.io.errors import DataFormatError, RunDirectoryError, UserError
from nlpzoo.tools.cli import help  # noqa: A004  (the module, not the builtin)


# FailedWrite: a save refused by the disk (full, read-only, no permission); its
# message says what was kept.
USER_ERRORS = (UserError, DataFormatError, FileNotFoundError, FailedWrite)

# Set to print the full traceback of an unexpected error on stderr as well.
TRACEBACK_VARIABLE = "NLPZOO_TRACEBACK"


def check_numbers(flag_values=flags.FLAGS):
    """Refuses float flags that are NaN or infinite, and learning rates that are not > 0.

    absl's bounds let NaN through (every comparison with NaN is false), and a
    NaN learning rate trains a NaN model that looks finished.

    Raises:
        UserError: naming the flag.

    Examples:
    >>> values = flags.FlagValues()
    >>> _ = flags.DEFINE_float("learning_rate", None, "", flag_values=values)
    >>> _ = values(["prog", "--learning_rate=nan"])
    >>> check_numbers(values)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: --learning_rate=nan: expected a finite number
    """
    for name in flag_values:
        flag = flag_values[name]
        if not isinstance(flag.parser, flags.FloatParser) or flag.value is None:
            continue
        values = flag.value if isinstance(flag.value, list) else [flag.value]
        for value in values:
            if not math.isfinite(value):
                raise UserError(f"--{name}={value}: expected a finite number")
            if name.endswith("learning_rate") and value <= 0:
                raise UserError(f"--{name}={value}: a learning rate must be > 0")


_PATH_FLAGS = ("model_dir", "output", "input", "model", "vocab", "init_checkpoint", "teacher",
               "tasks", "corpus", "data", "run", "logdir")
_PATH_SUFFIXES = ("_data", "_dir", "_file", "_path", "_checkpoint")


def check_paths(flag_values=flags.FLAGS):
    """Refuses path flags given as an empty string (`--model_dir=`), naming the flag, and
    expands a leading `~` in the others (`expand_home`).

    Examples:
    >>> values = flags.FlagValues()
    >>> _ = flags.DEFINE_string("model_dir", None, "", flag_values=values)
    >>> _ = values(["prog", "--model_dir="])
    >>> check_paths(values)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: --model_dir is empty: give a path
    """
    for name in flag_values:
        flag = flag_values[name]
        if not flag.present or not (name in _PATH_FLAGS or name.endswith(_PATH_SUFFIXES)):
            continue
        values = flag.value if isinstance(flag.value, list) else [flag.value]
        if not values or any(isinstance(value, str) and not value.strip() for value in values):
            raise UserError(f"--{name} is empty: give a path")
        expanded = [expand_home(value, f"--{name}") if isinstance(value, str) else value
                    for value in values]
        if expanded != values:
            flag.value = expanded if isinstance(flag.value, list) else expanded[0]


def _expand_part(part, flag):
    name, separator, path = part.rpartition("=")  # compare.py's NAME=MODEL
    if not path.startswith("~"):
        return part
    expanded = os.path.expanduser(path)
    if expanded.startswith("~"):  # ~user of no user here: it would be a folder named "~…"
        raise UserError(f"{flag}={part}: {path.split(os.sep)[0]!r} is no user's home folder "
                        "here; write the path in full (a folder named '~' is never created)")
    return name + separator + expanded


def expand_home(value, flag):
    """`value` of a path flag with a leading `~` or `~user` expanded in each of its
    comma-separated paths (and in the MODEL of NAME=MODEL), as a shell expands it in
    `--flag ~/x` but not in `--flag=~/x`: a run never creates a folder named `~` in the
    working directory.

    Raises:
        UserError: `~user` of no user of this machine, naming the flag.

    Examples:
    >>> import os
    >>> expand_home("~/runs/a,b", "--model_dir") == os.path.expanduser("~/runs/a") + ",b"
    True
    >>> expand_home("base=~/runs/c", "--run") == "base=" + os.path.expanduser("~/runs/c")
    True
    >>> expand_home("~no_such_user_here/x", "--model_dir")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: --model_dir=~no_such_user_here/x: '~no_such_user_here' is no user's home folder here; write the path in full (a folder named '~' is never created)
    """
    if "~" not in value:
        return value
    return ",".join(_expand_part(part, flag) for part in value.split(","))


def flag_naming(path, flag_values=flags.FLAGS):
    """`--name=value` for the flag given on the command line whose value names `path`:
    as a whole, as one of its comma-separated values, or as the MODEL of a NAME=MODEL
    value (compare.py's `--run`); None when no flag does.

    Examples:
    >>> values = flags.FlagValues()
    >>> _ = flags.DEFINE_string("model_dir", None, "", flag_values=values)
    >>> _ = flags.DEFINE_multi_string("run", [], "", flag_values=values)
    >>> _ = values(["prog", "--model_dir=runs/a,runs/b", "--run=base=runs/c"])
    >>> flag_naming("runs/b", values), flag_naming("runs/c", values), flag_naming("x", values)
    ('--model_dir=runs/b', '--run=base=runs/c', None)
    """
    for name in flag_values:
        flag = flag_values[name]
        if not flag.present:
            continue
        values = flag.value if isinstance(flag.value, list) else [flag.value]
        for value in values:
            if not isinstance(value, str):
                continue
            for part in (value, *value.split(",")):
                if path in (part, part.partition("=")[2]):
                    return f"--{name}={part}"
    return None


def run_directory_message(error, flag_values=flags.FLAGS):
    """The line for a `RunDirectoryError`: the run named as the flag that gave it, so
    that the user sees which flag to change.

    Examples:
    >>> values = flags.FlagValues()
    >>> _ = flags.DEFINE_string("teacher", None, "", flag_values=values)
    >>> _ = values(["prog", "--teacher=runs/old"])
    >>> run_directory_message(RunDirectoryError("runs/old", "no such directory"), values)
    '--teacher=runs/old: no such directory'
    >>> run_directory_message(RunDirectoryError("runs/old/labels.json", "not valid JSON"), values)
    'runs/old/labels.json: not valid JSON'
    """
    flag = flag_naming(error.path, flag_values)
    return f"{flag}: {error.problem}" if flag else str(error)


def _report_internal_error(error):
    """Writes the traceback to a file; returns the one line that points at it."""
    text = "".join(traceback.format_exception(error))
    name = os.path.splitext(os.path.basename(sys.argv[0] or "nlpzoo"))[0]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        handle, where = tempfile.mkstemp(prefix=f"nlpzoo-{name}-{stamp}-", suffix=".traceback")
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError:
        where = None
    if os.environ.get(TRACEBACK_VARIABLE):
        sys.stderr.write(text)
    summary = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    place = f"the full traceback is in {where}" if where else "no traceback file could be written"
    return f"error: internal error ({summary[:300]}); {place}; please report it"


def _quiet_broken_pipe():
    """The reader of our output went away: end without a word (as `head` expects)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's final flush must not fail again
    except (OSError, ValueError):
        pass
    os._exit(141)  # 128 + SIGPIPE, as a shell reports a program killed by it


def _worker():
    """This process's task ("worker 1") under multi-worker training, else None; without
    importing the distribution module (and TensorFlow) when the binary did not."""
    distribution = sys.modules.get("nlpzoo.tasks.training.distribution")
    return distribution.this_worker() if distribution else None


def _fail(message):
    """Prints `error: <message>` (naming the worker under multi-worker training); exits 1."""
    worker = _worker()
    print(f"error: {worker}: {message}" if worker else f"error: {message}", file=sys.stderr)
    sys.exit(1)


def _worker_failure(error):
    distribution = sys.modules.get("nlpzoo.tasks.training.distribution")
    return distribution.worker_failure(error) if distribution else None


def run(main):
    """`absl.app.run(main)`, ending every failure in one line (see the module docstring)."""

    def guarded(argv):
        # From here on Ctrl-C raises KeyboardInterrupt, so that `finally` blocks clean up.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            if len(argv) > 1:
                raise UserError(f"unexpected arguments: {' '.join(argv[1:])} (flags are "
                                "written --name=value)")
            check_numbers()
            check_paths()
            return main(argv)
        except RunDirectoryError as error:  # the library's wording, with the flag's name
            _fail(run_directory_message(error))
        except USER_ERRORS as error:
            _fail(error)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except KeyboardInterrupt:
            print("interrupted (Ctrl-C): nothing more was written", file=sys.stderr)
            sys.exit(130)
        except OSError as error:  # a read-only or missing folder, a permission, a full disk
            where = f"{error.filename}: " if error.filename else ""
            _fail(f"{where}{error.strerror or error}")
        except (SystemExit, app.UsageError):
            raise
        except Exception as error:  # noqa: BLE001  (a bug of ours: one line and a file)
            lost = _worker_failure(error)  # a peer worker stopped: not a bug
            if lost:
                print(f"error: {lost}", file=sys.stderr)
                sys.exit(1)
            line = _report_internal_error(error)
            worker = _worker()
            print(line.replace("error: ", f"error: {worker}: ", 1) if worker else line,
                  file=sys.stderr)
            sys.exit(1)

    help.install(main)  # --help lists the binary's flags, grouped, and exits 0
    try:
        app.run(guarded)
    except KeyboardInterrupt:  # during flag parsing or start-up, before `guarded`
        print("interrupted (Ctrl-C): nothing was written", file=sys.stderr)
        sys.exit(130)
