"""Imports run one way only (DESIGN §1): layers ← tasks ← zoo ← tools.

Every module under layers/, tasks/, zoo/ and tools/ is read with `ast`, not
imported: `import x` and `from x import y` count wherever they stand (module
level, inside a function, under `if TYPE_CHECKING:`), relative imports are
resolved against the module's own package, `importlib.import_module("x")` and
`__import__("x")` with a literal name count too, and so does every `>>>` line
of a docstring (doctests run with `pytest --doctest-modules`, so an example
that imports `zoo` makes a `tasks` module depend on `zoo`).
"""

import ast
import doctest
import os
import textwrap
from typing import NamedTuple

import pytest
from tests.helpers.paths import ROOT



# What each source package may import from this repository (besides itself).
# `tests` is ours too: no source package may import it.
ALLOWED_IMPORTS = {
    "layers": set(),
    "tasks": {"layers"},
    "zoo": {"tasks", "layers"},
    "tools": {"zoo", "tasks", "layers"},
}
OUR_PACKAGES = set(ALLOWED_IMPORTS) | {"tests"}


class Import(NamedTuple):
    line: int
    module: str  # absolute dotted name, e.g. "nlpzoo.zoo.presets"
    in_doctest: bool


def module_name(relative_path):
    """"tasks/tagging/model.py" → "nlpzoo.tasks.tagging.model"; "tasks/__init__.py" → "tasks"."""
    parts = relative_path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(module, level, importer, is_package):
    """The absolute name `from <level dots><module> import ...` refers to inside `importer`."""
    if level == 0:
        return module
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join(base + ([module] if module else []))


def _imports_in_tree(tree, importer, is_package, line_offset=0, in_doctest=False):
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [_resolve(node.module, node.level, importer, is_package)]
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names = [first.value]
        found += [Import(node.lineno + line_offset, name, in_doctest) for name in names]
    return found


def _is_dynamic_import(func):
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def _docstring_nodes(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                yield body[0].value


def _doctest_imports(tree, importer, is_package, path):
    found = []
    parser = doctest.DocTestParser()
    for docstring in _docstring_nodes(tree):
        for example in parser.get_examples(docstring.value):
            try:
                example_tree = ast.parse(example.source)
            except SyntaxError as error:
                raise AssertionError(
                    f"{path}:{docstring.lineno + example.lineno}: doctest example does not "
                    f"parse: {error}") from None
            # example.lineno counts from the docstring's first line (0-based); the
            # example's own lines count from 1.
            offset = docstring.lineno + example.lineno - 1
            found += _imports_in_tree(example_tree, importer, is_package, offset, True)
    return found


def imports_of_source(source, relative_path):
    """Every import of one module's source, doctest examples included, by line."""
    importer = module_name(relative_path)
    is_package = relative_path.endswith("__init__.py")
    tree = ast.parse(source, filename=relative_path)
    return sorted(_imports_in_tree(tree, importer, is_package)
                  + _doctest_imports(tree, importer, is_package, relative_path))


def layering_violations(source, relative_path):
    """["path:line imports name", ...] for imports against DESIGN §1."""
    package = relative_path.split("/")[0]
    allowed = ALLOWED_IMPORTS[package] | {package}
    violations = []
    for found in imports_of_source(source, relative_path):
        top = found.module.split(".")[0]
        if top in OUR_PACKAGES and top not in allowed:
            where = " (doctest)" if found.in_doctest else ""
            violations.append(f"{relative_path}:{found.line} imports {found.module}{where}")
    return violations


def python_files(package):
    """Paths of every .py file under `package`, relative to the repository root."""
    paths = []
    for directory, subdirectories, files in os.walk(os.path.join(ROOT, package)):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        paths += [os.path.relpath(os.path.join(directory, f), ROOT).replace(os.sep, "/")
                  for f in sorted(files) if f.endswith(".py")]
    return paths


# --- the repository -----------------------------------------------------------------------


@pytest.mark.parametrize("package", sorted(ALLOWED_IMPORTS))
def test_package_imports_only_the_packages_below_it(package):
    paths = python_files(package)
    assert f"{package}/__init__.py" in paths, f"{package}/ is not where it should be"
    violations = []
    for path in paths:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            violations += layering_violations(f.read(), path)
    allowed = ", ".join(sorted(ALLOWED_IMPORTS[package])) or "nothing of ours"
    assert not violations, (f"{package} may import {allowed} (DESIGN §1); found:\n"
                            + "\n".join(violations))


# --- the scanner itself -------------------------------------------------------------------

_SOURCE_WITH_EVERY_KIND_OF_IMPORT = textwrap.dedent('''\
    """Module docstring.

    >>> from nlpzoo.zoo import build_model
    >>> import nlpzoo.tools.train, numpy
    """
    import os
    import nlpzoo.layers.crf
    from nlpzoo.tasks import registry
    from . import sibling
    from ..zoo.presets import TASK_PRESETS


    class Thing:
        """A class.

        Examples:

        >>> x = (1 +
        ...      2)
        >>> import tests.conftest as c
        """

        def method(self):
            if True:
                from nlpzoo.zoo.builder import build_model
            return importlib.import_module("nlpzoo.tools.export")


    def function():
        """Nothing to see: 1 + 1 is 2."""
        __import__("zoo")
        import keras.src.layers
''')


def test_scanner_finds_imports_at_every_depth_and_in_doctests():
    found = imports_of_source(_SOURCE_WITH_EVERY_KIND_OF_IMPORT, "tasks/tagging/model.py")
    assert found == [
        Import(3, "zoo", True),
        Import(4, "numpy", True),
        Import(4, "nlpzoo.tools.train", True),
        Import(6, "os", False),
        Import(7, "nlpzoo.layers.crf", False),
        Import(8, "tasks", False),
        Import(9, "nlpzoo.tasks.tagging", False),
        Import(10, "tasks.zoo.presets", False),
        Import(20, "tests.conftest", True),
        Import(25, "nlpzoo.zoo.builder", False),
        Import(26, "nlpzoo.tools.export", False),
        Import(31, "zoo", False),
        Import(32, "keras.src.layers", False),
    ]


@pytest.mark.parametrize("path, expected", [
    ("layers/crf.py", ["3 imports zoo (doctest)", "4 imports tools.train (doctest)",
                       "8 imports tasks", "10 imports zoo.presets",
                       "20 imports tests.conftest (doctest)",
                       "25 imports zoo.builder", "26 imports tools.export", "31 imports zoo"]),
    ("tasks/modeling/serving.py", ["3 imports zoo (doctest)", "4 imports tools.train (doctest)",
                          "10 imports zoo.presets", "20 imports tests.conftest (doctest)",
                          "25 imports zoo.builder", "26 imports tools.export", "31 imports zoo"]),
    ("zoo/builder.py", ["4 imports tools.train (doctest)",
                        "20 imports tests.conftest (doctest)", "26 imports tools.export"]),
    ("tools/train.py", ["20 imports tests.conftest (doctest)"]),
])
def test_violations_follow_the_direction_of_each_package(path, expected):
    violations = layering_violations(_SOURCE_WITH_EVERY_KIND_OF_IMPORT, path)
    assert violations == [f"{path}:{line}" for line in expected]


@pytest.mark.parametrize("path, source, expected", [
    # `from .. import x` two levels up from a module of a sub-package.
    ("tasks/tagging/model.py", "from .. import layers_of_tasks\n", "tasks"),
    ("tasks/tagging/model.py", "from ...zoo import presets\n", "zoo"),
    # In a package's __init__.py, `.` is the package itself.
    ("tasks/tagging/__init__.py", "from .model import Tagger\n", "nlpzoo.tasks.tagging.model"),
    ("tasks/__init__.py", "from .registry import TASKS\n", "nlpzoo.tasks.registry"),
])
def test_relative_imports_resolve_against_the_importing_package(path, source, expected):
    [found] = imports_of_source(source, path)
    assert found.module == expected


def test_doctest_line_numbers_point_at_the_example():
    source = ('def f():\n    """Doc.\n\n    Example:\n\n'
              '    >>> 1\n    1\n    >>> import zoo\n    """\n')
    assert layering_violations(source, "layers/x.py") == ["layers/x.py:8 imports zoo (doctest)"]
