"""Errors for bad user input: messages name the file, line or option at fault."""


class UserError(Exception):
    """Bad input from the user: a flag, a file, a model directory.

    The binaries (`tools/cli/errors.py`) print its message as `error: <message>` and
    exit 1; it lives here, at the bottom of the house, so that every package can raise it.
    """


class OptionError(UserError, ValueError):
    """An option that cannot work (a flag, or the keyword argument of the same name), found
    out where the library checks it: a `ValueError` to a Python caller, a one-line
    `error: ...` from a binary. The message names the option.

    Examples:
    >>> error = OptionError("--verbalizer: the word 'x' is not in the vocabulary")
    >>> isinstance(error, ValueError), isinstance(error, UserError)
    (True, True)
    """


class DataFormatError(ValueError):
    """A data file that cannot be read as asked; the message names the file and, where it
    applies, the 1-based line (`path:LINE: what is wrong`).

    Examples:
    >>> str(DataFormatError("train.txt:3: expected 4 columns (word ... tag), found 3"))
    'train.txt:3: expected 4 columns (word ... tag), found 3'
    """


class MissingDataFileError(DataFormatError, FileNotFoundError):
    """A data file that does not exist: a `DataFormatError` that is also the
    `FileNotFoundError` callers of `open` expect.

    Examples:
    >>> error = MissingDataFileError("dev.txt: no such file")
    >>> isinstance(error, FileNotFoundError), isinstance(error, DataFormatError), str(error)
    (True, True, 'dev.txt: no such file')
    """


class PlacedError(ValueError):
    """What is wrong (`problem`) at one `place` (a path, `path:LINE`, a run); the message
    is `place: problem`, and a caller that names the place its own way (a flag) reads the
    two apart.

    Examples:
    >>> error = PlacedError("data.jsonl:3", "not valid JSON")
    >>> str(error), error.place, error.problem
    ('data.jsonl:3: not valid JSON', 'data.jsonl:3', 'not valid JSON')
    """

    def __init__(self, place, problem):
        super().__init__(str(place), problem)  # both in `args`, so that it pickles

    @property
    def place(self):
        return self.args[0]

    @property
    def problem(self):
        return self.args[1]

    def __str__(self):
        return f"{self.place}: {self.problem}"


class RunDirectoryError(PlacedError):
    """A trained run (a model directory or a `.keras` file) that cannot be loaded.

    `path` is the run (or the file of it) at fault and `problem` what is
    wrong with it; the message is `path: problem`. The binaries name the
    flag that gave `path` instead (`tools.cli.errors.run`).

    Examples:
    >>> error = RunDirectoryError("runs/trec", "no such directory")
    >>> str(error), error.path, error.problem
    ('runs/trec: no such directory', 'runs/trec', 'no such directory')
    """

    path = PlacedError.place
