"""User errors in binaries become one line on stderr and a non-zero exit."""

import sys

from absl import app

from tasks.atomic_files import FailedWrite
from tasks.errors import DataFormatError


class UserError(Exception):
    """Bad input from the user: a flag, a file, a model directory."""


# FailedWrite: a save refused by the disk (full, read-only, no permission); its
# message says what was kept.
USER_ERRORS = (UserError, DataFormatError, FileNotFoundError, FailedWrite)


def run(main):
    """`absl.app.run(main)`, printing user errors without a traceback (exit 1)."""

    def guarded(argv):
        if len(argv) > 1:
            raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
        try:
            return main(argv)
        except USER_ERRORS as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(1)

    app.run(guarded)
