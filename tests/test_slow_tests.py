"""tests/slow_tests.txt: each line names a test (or a test file) that exists, and the
collection hook marks what it lists slow (which `make test` leaves out: setup.cfg)."""

import ast
import functools
import os

from tests.conftest import pytest_collection_modifyitems
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
    pytest_collection_modifyitems(None, items)
    assert [item.markers for item in items] == [["slow"], ["slow"], []]
