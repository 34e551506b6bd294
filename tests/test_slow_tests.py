"""tests/slow_tests.txt: each line names a test (or a test file) that exists, and the
collection hook marks what it lists slow (which `make test` leaves out: setup.cfg)."""

import ast
import configparser
import functools
import os
import shlex

from tests.conftest import RUN_FIRST, mark_listed_tests_slow, order_files_for_workers
from tests.helpers.paths import ROOT
from tests.helpers.slow_tests import read_slow_list


@functools.lru_cache(maxsize=None)
def _test_functions(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_listed_test_is_a_test_function_of_its_file():
    stale = []
    for node in sorted(read_slow_list()):
        path, _, name = node.partition("::")  # a path alone: the whole file
        if not os.path.exists(os.path.join(ROOT, path)) or (
                name and name.split("[")[0] not in _test_functions(path)):
            stale.append(node)
    assert not stale, ("tests/slow_tests.txt names tests that are gone (rename or remove "
                       "them there):\n" + "\n".join(stale))


class _Item:
    """What the collection hook reads of a pytest item: its node id and `add_marker`."""

    def __init__(self, nodeid):
        self.nodeid, self.markers = nodeid, []

    def add_marker(self, marker):
        self.markers.append(marker.name)


def test_the_collection_hook_marks_listed_tests_and_files_slow():
    listed = sorted(read_slow_list())
    node = next(entry for entry in listed if "::" in entry)
    whole = next(entry for entry in listed if "::" not in entry)
    items = [_Item(node), _Item(f"{whole}::test_any[param]"), _Item("tests/test_slow_tests.py::x")]
    mark_listed_tests_slow(items)
    assert [item.markers for item in items] == [["slow"], ["slow"], []]


def test_files_go_to_workers_long_ones_first_then_by_test_count():
    ids = ["tests/a.py::t1", "tests/b.py::t1", f"{RUN_FIRST[1]}::u", "tests/b.py::t2",
           f"{RUN_FIRST[1]}::v", f"{RUN_FIRST[0]}::t", "tests/a.py::t2", "tests/c.py::t[x]",
           "tests/b.py::t3"]
    items = [_Item(node) for node in ids]
    order_files_for_workers(items)
    assert [item.nodeid for item in items] == [
        f"{RUN_FIRST[0]}::t", f"{RUN_FIRST[1]}::u", f"{RUN_FIRST[1]}::v",
        "tests/b.py::t1", "tests/b.py::t2", "tests/b.py::t3",
        "tests/a.py::t1", "tests/a.py::t2", "tests/c.py::t[x]"]
    assert all(os.path.exists(os.path.join(ROOT, path)) for path in RUN_FIRST)


def _pytest_arguments(target):
    """The arguments of the pytest command in the Makefile's recipe for `target`."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"{target}:")))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith(("\t", " ")):
            break
        if recipe and recipe[-1].endswith("\\"):  # a continued line
            recipe[-1] = recipe[-1][:-1] + line.strip()
        else:
            recipe.append(line.strip())
    [command] = [line for line in recipe if " -m pytest " in f" {line} "]
    return shlex.split(command.split(" -m pytest", 1)[1].replace("$(PYTEST_WORKERS)", ""))


def _addopts():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"), encoding="utf-8")
    section = config["tool:pytest"]
    return shlex.split(section["addopts"]), section["testpaths"].split()


# Options whose value is the next argument, and those of them that choose tests.
_WITH_VALUE = ("-m", "-p", "-n", "-k", "-o", "--dist", "--deselect", "--ignore")
_SELECTING = ("-k", "--deselect", "--ignore", "--lf", "--last-failed", "--ff", "-x",
              "--exitfirst", "--maxfail")


def _marker_and_selection(arguments):
    """(the last -m expression, what else selects or drops tests: paths and options) of
    pytest `arguments`."""
    marker, selecting, arguments = None, [], list(arguments)
    while arguments:
        argument = arguments.pop(0)
        value = arguments.pop(0) if argument in _WITH_VALUE else None
        if argument == "-m":
            marker = value
        elif argument.startswith(_SELECTING) or not argument.startswith("-"):
            selecting.append(argument if value is None else f"{argument} {value}")
    return marker, selecting


def test_make_test_and_make_test_slow_collect_every_test_exactly_once():
    """`make test` runs the tests not marked slow, `make test-slow` those marked slow,
    over the same folder, and neither drops any other way: together, each test once.
    `make test-all` runs both sets; CI (.ci/run) runs one of the two."""
    addopts, testpaths = _addopts()
    default_marker, default_selection = _marker_and_selection(addopts)
    assert default_marker == "not slow"
    assert default_selection == ["--ignore=tests/fixtures"]  # fixture generators, not tests
    test_marker, test_selection = _marker_and_selection(addopts + _pytest_arguments("test"))
    slow_marker, slow_selection = _marker_and_selection(addopts + _pytest_arguments("test-slow"))
    assert test_marker == "not slow" and slow_marker == "slow"
    assert test_selection == default_selection  # the testpaths: `tests`
    assert slow_selection == default_selection + ["tests"] and testpaths == ["tests"]
    all_marker, all_selection = _marker_and_selection(addopts + _pytest_arguments("test-all"))
    assert all_marker == "slow or not slow" and all_selection == slow_selection
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        assert [line for line in f.read().splitlines() if line.startswith("make ")] in (
            ["make test"], ["make test-all"])

