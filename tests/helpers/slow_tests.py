"""The tests `make test` leaves to `make test-slow`, chosen by their measured time.

`make test` must set up and pass in 12 minutes on the 2-core machine. A test marked
`@pytest.mark.slow` in its file is slow for a reason of its own; the others that
took `--threshold` seconds or more in a measured run are listed in
`tests/slow_tests.txt` (a file whose listed tests took three quarters of its time, and
40 s or more, is listed whole), and `tests/conftest.py` marks them slow as it collects them.
To redo the list after adding tests (a full default run, nothing else on the
machine, then the list from its report):

    .venv/bin/python -m pytest -n 2 --dist loadfile --junitxml=/tmp/durations.xml \
        -o junit_duration_report=total
    .venv/bin/python -m tests.helpers.slow_tests --junit=/tmp/durations.xml --write

A test's time in the report includes its fixtures' set-up: a module's first test
carries the module's fixtures, the first test to ask for a shared trained model
waits for its training. Listing such a test moves that wait to the next test of
the file, so check the next default run's `--durations` once after a new list.
Tests of `KEPT` files stay in the default run whatever their time: they guard
against losing a user's files, a killed run's resumption, broken runs (NaN loss, a
second run's lock, a closed pipe, empty path flags), broken run files, the
direction of imports, and this list. A line that
names a test or file that is gone fails tests/test_slow_tests.py.
"""

import argparse
import os
import xml.etree.ElementTree as ElementTree

from tests.helpers.paths import ROOT

LIST = os.path.join(ROOT, "tests", "slow_tests.txt")
THRESHOLD_SECONDS = 3.0
KEPT = ("tests/tools/test_user_directories.py", "tests/test_layering.py",
        "tests/test_slow_tests.py", "tests/tools/test_resume_after_kill.py",
        "tests/tools/test_broken_runs.py", "tests/zoo/test_untrusted_files.py")
# A file is listed whole when its listed tests took this share of its time, and at least
# WHOLE_FILE_SECONDS: the size of a shared fixture's set-up (a model trained by a binary).
WHOLE_FILE_SHARE = 0.75
WHOLE_FILE_SECONDS = 40.0
_HEADER = """\
# Tests left to `make test-slow` because a default run measured them at {threshold:g} s or
# more (set-up included); tests/helpers/slow_tests.py says how to redo this list.
# One pytest node id, or a test file's path (all of it), per line; tests/conftest.py
# marks each one slow.
"""


def read_slow_list(path=LIST):
    """The node ids of `path` (comments and blank lines skipped), as a set.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "slow.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("# why\\ntests/test_a.py::test_b[x y]\\n\\n")
    >>> sorted(read_slow_list(path))
    ['tests/test_a.py::test_b[x y]']
    """
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")}


def node_id(classname, name):
    """A JUnit report's `classname` and `name` → the pytest node id.

    >>> node_id("tests.zoo.test_zoo", "test_presets[bert_tiny]")
    'tests/zoo/test_zoo.py::test_presets[bert_tiny]'
    """
    return f"{classname.replace('.', '/')}.py::{name}"


def measured_times(junit_path):
    """{node id: seconds} of every test a JUnit report ran (skipped ones left out)."""
    times = {}
    for case in ElementTree.parse(junit_path).getroot().iter("testcase"):
        if case.find("skipped") is None:
            times[node_id(case.get("classname"), case.get("name"))] = float(case.get("time") or 0)
    return times


def slow_node_ids(times, threshold=THRESHOLD_SECONDS):
    """The node ids of `times` at `threshold` seconds or more, but those of `KEPT` files;
    a file whose listed tests took `WHOLE_FILE_SHARE` of its time and `WHOLE_FILE_SECONDS`
    or more is listed whole (its path): that time is mostly a shared fixture's set-up,
    which would only move to the file's next test.

    >>> slow_node_ids({"tests/a.py::t1": 9.0, "tests/a.py::t2": 1.0,
    ...                "tests/b.py::t1": 60.0, "tests/b.py::t2": 2.0,
    ...                "tests/tools/test_user_directories.py::t": 30.0})
    ['tests/a.py::t1', 'tests/b.py']
    """
    slow = {node for node, seconds in times.items()
            if seconds >= threshold and node.split("::")[0] not in KEPT}
    file_time, listed_time = {}, {}
    for node, seconds in times.items():
        path = node.split("::")[0]
        file_time[path] = file_time.get(path, 0.0) + seconds
        if node in slow:
            listed_time[path] = listed_time.get(path, 0.0) + seconds
    whole = {path for path, seconds in listed_time.items()
             if seconds >= max(WHOLE_FILE_SHARE * file_time[path], WHOLE_FILE_SECONDS)}
    return sorted({node for node in slow if node.split("::")[0] not in whole} | whole)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--junit", required=True, help="JUnit XML of a full default run")
    parser.add_argument("--threshold", type=float, default=THRESHOLD_SECONDS)
    parser.add_argument("--write", action="store_true", help=f"rewrite {LIST}")
    args = parser.parse_args(argv)
    times = measured_times(args.junit)
    # Listed before and so not run (a default run leaves them out): still slow.
    earlier = {entry for entry in read_slow_list() if entry not in times}
    slow = set(slow_node_ids(times, args.threshold)) | earlier
    whole = {entry for entry in slow if "::" not in entry}
    slow = sorted(entry for entry in slow if entry in whole or entry.split("::")[0] not in whole)
    default = {node: seconds for node, seconds in times.items()
               if node not in slow and node.split("::")[0] not in whole}
    print(f"{len(slow)} lines (tests or whole files) listed slow; the {len(default)} other "
          f"tests took "
          f"{sum(default.values()) / 60:.1f} worker-minutes in that run")
    if args.write:
        with open(LIST, "w", encoding="utf-8") as f:
            f.write(_HEADER.format(threshold=args.threshold) + "\n".join(slow) + "\n")


if __name__ == "__main__":
    main()
