"""tests/slow_tests.txt: each line names a test (or a test file) that exists, and the
default run leaves them out."""

import ast
import functools
import os
import subprocess
import sys

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


def _collected(path, marker_expression):
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", marker_expression, path], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return {line.strip() for line in completed.stdout.splitlines() if "::" in line}


def test_the_default_run_leaves_listed_tests_out():
    listed = read_slow_list()
    path = "tests/test_front_door.py"  # a small file with a listed test and unlisted ones
    in_file = {node for node in listed if node.startswith(path + "::")}
    assert in_file, f"choose another file: {path} has no listed test any more"
    default = _collected(path, "not slow")  # what `make test` runs of that file
    assert default, f"every test of {path} is slow: choose another file"
    assert not in_file & default
