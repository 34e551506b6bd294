"""Imports run one way only (docs/architecture.md): layers ← tasks ← zoo ← tools.

Every module of the package `nlpzoo` is read with `ast`, not imported. A file
`tasks/text/tokenizer.py` of the repository is the module
`nlpzoo.tasks.text.tokenizer`. `import x` and `from x import y` count wherever
they stand (module level, inside a function, under `if TYPE_CHECKING:`),
relative imports are resolved against the module's own package,
`importlib.import_module("x")` and `__import__("x")` with a literal name count
too, and so does every `>>>` line of a docstring (the doctests run them, so an
example that imports `nlpzoo.zoo` makes a `tasks` module depend on `zoo`).

Three checks: the direction between the packages; the order inside `tasks/`
(shared subpackages, then the task interface, then the families, none of which
imports another); and no import circle between any two modules.
"""

import ast
import doctest
import functools
import os
import textwrap
from typing import NamedTuple

import pytest
from tests.helpers.paths import ROOT

TOP = "nlpzoo"

# What each package may import from this repository (besides itself). "nlpzoo" is
# the front door, nlpzoo/__init__.py. `tests` is ours too: no package may import it.
ALLOWED_IMPORTS = {
    "layers": set(),
    "tasks": {"layers"},
    "zoo": {"tasks", "layers"},
    "tools": {"zoo", "tasks", "layers", "nlpzoo"},
    "nlpzoo": {"zoo", "tasks", "layers"},
}
# Repository folders, once top-level packages of their own: no one imports them by
# those names any more (`import tasks`, `from zoo import ...`).
OLD_TOP_LEVEL_NAMES = {"layers", "tasks", "zoo", "tools"}

# The order inside tasks/: a module may import modules of a lower rank, and of its
# own group. Sideways (another group of the same rank) only where the rank says so.
FAMILIES = ("bi_encoder", "classification", "fill_mask", "pretraining", "probing",
            "question_answering",
            "sentence_embedding", "span_ner", "tagging")
TASKS_RANKS = [
    # (groups: sub-packages or top-level modules of tasks/, sideways imports allowed)
    (("io",), False),                    # files, errors, progress, locks
    (("text",), False),                  # lines, corpora, tokenizer, preprocessor, batching, masking
    (("words",), False),                 # word-level: CoNLL files, tags, windows, word pipeline
    (("training",), False),              # optimizers, callbacks, distribution, training state
    (("modeling",), False),              # encoder task model, losses, label outputs, serving
    (("retrieval",), False),             # corpus files, block top-k search, ranking metrics
    (("task", "registry"), True),        # the Task interface and the name → task map
    (FAMILIES, False),                   # task families: none imports another
    (("distillation",), False),          # adapts families (classification, tagging)
    # classification's data and outputs with fill-mask's masked-LM head
    (("prompt_classification",), False),
    (("builtin",), False),               # imports the built-in families so they register
]


class Import(NamedTuple):
    line: int
    name: str  # absolute dotted name; `from x import y` is "x.y"
    in_doctest: bool


def module_name(relative_path):
    """"tasks/tagging/model.py" → "nlpzoo.tasks.tagging.model"; "tasks/__init__.py" →
    "nlpzoo.tasks"; "nlpzoo/__init__.py" → "nlpzoo"."""
    parts = relative_path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[0] != TOP:
        parts = [TOP] + parts
    return ".".join(parts)


def _resolve(module, level, importer, is_package):
    """The absolute name `from <level dots><module> import ...` refers to inside `importer`."""
    if level == 0:
        return module
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _imports_in_tree(tree, importer, is_package, line_offset=0, in_doctest=False):
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module, node.level, importer, is_package)
            names = [base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names]
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


def package_of(name):
    """Our package a dotted name belongs to ("layers", …, "nlpzoo" for the front door),
    "tests", "old:<name>" for an old top-level name, or None when it is not ours."""
    parts = name.split(".")
    if parts[0] == TOP:
        return parts[1] if len(parts) > 1 and parts[1] in OLD_TOP_LEVEL_NAMES else TOP
    if parts[0] == "tests":
        return "tests"
    if parts[0] in OLD_TOP_LEVEL_NAMES:
        return "old:" + parts[0]
    return None


def layering_violations(source, relative_path):
    """["path:line imports name", ...] for imports against the direction of the packages."""
    package = package_of(module_name(relative_path))
    allowed = ALLOWED_IMPORTS[package] | {package}
    violations = []
    for found in imports_of_source(source, relative_path):
        target = package_of(found.name)
        if target is None or target in allowed:
            continue
        where = " (doctest)" if found.in_doctest else ""
        why = f", an old top-level name (now {TOP}.{found.name})" if target.startswith("old:") else ""
        violations.append(f"{relative_path}:{found.line} imports {found.name}{where}{why}")
    return violations


def tasks_rank(module):
    """(rank, group) of a module of nlpzoo.tasks in TASKS_RANKS; None for nlpzoo.tasks
    itself; KeyError for a module no rank places."""
    parts = module.split(".")
    assert parts[:2] == [TOP, "tasks"], module
    if len(parts) == 2:
        return None
    for rank, (groups, _) in enumerate(TASKS_RANKS):
        if parts[2] in groups:
            return rank, parts[2]
    raise KeyError(f"{module}: tasks/{parts[2]} has no rank in TASKS_RANKS")


def tasks_order_violations(edges):
    """["importer imports imported", ...] for edges inside nlpzoo.tasks against TASKS_RANKS.

    `edges` is an iterable of (importer, imported) module names."""
    violations = []
    for importer, imported in edges:
        if not (importer.startswith(f"{TOP}.tasks.") and imported.startswith(f"{TOP}.tasks")):
            continue
        here, there = tasks_rank(importer), tasks_rank(imported)
        if there is None:
            continue
        (rank, group), (other_rank, other_group) = here, there
        sideways_ok = TASKS_RANKS[rank][1]
        if other_rank < rank or group == other_group or (other_rank == rank and sideways_ok):
            continue
        direction = "up" if other_rank > rank else "sideways"
        violations.append(f"{importer} imports {imported} ({direction}: {group} → {other_group})")
    return violations


def import_circles(graph):
    """Strongly connected components of more than one module (or a module importing
    itself) of `graph` ({module: set of modules it imports}), each sorted, sorted."""
    index, low, on_stack, stack, circles = {}, {}, set(), [], []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def python_files(package):
    """Paths of every .py file under `package`, relative to the repository root."""
    paths = []
    for directory, subdirectories, files in os.walk(os.path.join(ROOT, package)):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        paths += [os.path.relpath(os.path.join(directory, f), ROOT).replace(os.sep, "/")
                  for f in sorted(files) if f.endswith(".py")]
    return paths


def _read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def _all_paths():
    return [path for package in sorted(ALLOWED_IMPORTS) for path in python_files(package)]


@functools.lru_cache(maxsize=None)
def _imports_of_file(path):
    """`imports_of_source` of one file, parsed once for every test of the session."""
    return tuple(imports_of_source(_read(path), path))


def module_graph(include_doctests):
    """{module: set of our modules it imports}: each imported name is the longest of
    our module names it starts with (`from m import f` is an edge to m)."""
    sources = {module_name(path): path for path in _all_paths()}
    graph = {}
    for module, path in sources.items():
        targets = set()
        for found in _imports_of_file(path):
            if found.in_doctest and not include_doctests:
                continue
            parts = found.name.split(".")
            for end in range(len(parts), 0, -1):
                candidate = ".".join(parts[:end])
                if candidate in sources:
                    if candidate != module:
                        targets.add(candidate)
                    break
        graph[module] = targets
    return graph


# --- the repository -----------------------------------------------------------------------


@pytest.mark.parametrize("package", sorted(ALLOWED_IMPORTS))
def test_package_imports_only_the_packages_below_it(package):
    paths = python_files(package)
    assert f"{package}/__init__.py" in paths, f"{package}/ is not where it should be"
    violations = []
    for path in paths:
        violations += layering_violations(_read(path), path)
    allowed = ", ".join(sorted(ALLOWED_IMPORTS[package])) or "nothing of ours"
    assert not violations, (f"{package} may import {allowed} (docs/architecture.md); found:\n"
                            + "\n".join(violations))


def test_only_keras_internals_imports_private_keras_api():
    """Private Keras API has one home (`layers/keras_internals.py`, checked against the
    installed Keras by tests/layers/test_keras_internals.py); tests and benchmarks too."""
    found = []
    for package in [*sorted(ALLOWED_IMPORTS), "tests", "benchmarks", "examples"]:
        for path in python_files(package):
            source = _read(path)
            if path in ("layers/keras_internals.py", "tests/test_layering.py") or (
                    "keras.src" not in source):  # parse only the files that may import it
                continue
            found += [f"{path}:{imported.line} imports {imported.name}"
                      for imported in imports_of_source(source, path)
                      if imported.name == "keras.src" or imported.name.startswith("keras.src.")]
    assert not found, ("private Keras API belongs in nlpzoo.layers.keras_internals:\n"
                       + "\n".join(found))


def test_every_module_of_tasks_has_a_rank():
    unplaced = []
    for path in python_files("tasks"):
        try:
            tasks_rank(module_name(path))
        except KeyError as error:
            unplaced.append(str(error))
    assert not unplaced, "\n".join(unplaced)


def test_imports_inside_tasks_go_down_the_ranks():
    graph = module_graph(include_doctests=True)
    edges = [(importer, imported) for importer in sorted(graph) for imported in sorted(graph[importer])]
    violations = tasks_order_violations(edges)
    assert not violations, ("inside tasks/ imports go down TASKS_RANKS (docs/architecture.md); "
                            "found:\n" + "\n".join(violations))


def test_no_module_imports_itself_through_others():
    circles = import_circles(module_graph(include_doctests=False))
    assert not circles, "import circles:\n" + "\n".join(" ↔ ".join(c) for c in circles)


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
        __import__("nlpzoo.zoo")
        import keras.src.layers
''')


def test_scanner_finds_imports_at_every_depth_and_in_doctests():
    found = imports_of_source(_SOURCE_WITH_EVERY_KIND_OF_IMPORT, "layers/crf.py")
    assert found == [
        Import(3, "nlpzoo.zoo.build_model", True),
        Import(4, "nlpzoo.tools.train", True),
        Import(4, "numpy", True),
        Import(6, "os", False),
        Import(7, "nlpzoo.layers.crf", False),
        Import(8, "nlpzoo.tasks.registry", False),
        Import(9, "nlpzoo.layers.sibling", False),
        Import(10, "nlpzoo.zoo.presets.TASK_PRESETS", False),
        Import(20, "tests.conftest", True),
        Import(25, "nlpzoo.zoo.builder.build_model", False),
        Import(26, "nlpzoo.tools.export", False),
        Import(31, "nlpzoo.zoo", False),
        Import(32, "keras.src.layers", False),
    ]


@pytest.mark.parametrize("path, expected", [
    ("layers/crf.py", ["3 imports nlpzoo.zoo.build_model (doctest)",
                       "4 imports nlpzoo.tools.train (doctest)",
                       "8 imports nlpzoo.tasks.registry",
                       "10 imports nlpzoo.zoo.presets.TASK_PRESETS",
                       "20 imports tests.conftest (doctest)",
                       "25 imports nlpzoo.zoo.builder.build_model",
                       "26 imports nlpzoo.tools.export", "31 imports nlpzoo.zoo"]),
    # `..zoo` two levels up from tasks/modeling/ is nlpzoo.tasks.zoo: inside tasks.
    ("tasks/modeling/serving.py", ["3 imports nlpzoo.zoo.build_model (doctest)",
                                   "4 imports nlpzoo.tools.train (doctest)",
                                   "20 imports tests.conftest (doctest)",
                                   "25 imports nlpzoo.zoo.builder.build_model",
                                   "26 imports nlpzoo.tools.export", "31 imports nlpzoo.zoo"]),
    ("zoo/builder.py", ["4 imports nlpzoo.tools.train (doctest)",
                        "20 imports tests.conftest (doctest)", "26 imports nlpzoo.tools.export"]),
    ("tools/train.py", ["20 imports tests.conftest (doctest)"]),
])
def test_violations_follow_the_direction_of_each_package(path, expected):
    violations = layering_violations(_SOURCE_WITH_EVERY_KIND_OF_IMPORT, path)
    assert violations == [f"{path}:{line}" for line in expected]


@pytest.mark.parametrize("source, expected", [
    ("import tasks.registry\n", "1 imports tasks.registry, an old top-level name "
                                "(now nlpzoo.tasks.registry)"),
    ("from zoo import build_model\n", "1 imports zoo.build_model, an old top-level name "
                                      "(now nlpzoo.zoo.build_model)"),
    ('"""\n>>> import layers.crf\n"""\n', "2 imports layers.crf (doctest), an old top-level "
                                         "name (now nlpzoo.layers.crf)"),
    ('importlib.import_module("tools.train")\n', "1 imports tools.train, an old top-level "
                                                 "name (now nlpzoo.tools.train)"),
])
def test_old_top_level_names_are_refused_everywhere(source, expected):
    assert layering_violations(source, "tools/predict.py") == [f"tools/predict.py:{expected}"]


def test_the_front_door_is_for_tools_only():
    source = "import nlpzoo\nfrom nlpzoo import build_model\n"
    assert layering_violations(source, "tools/predict.py") == []
    assert layering_violations(source, "zoo/builder.py") == [
        "zoo/builder.py:1 imports nlpzoo", "zoo/builder.py:2 imports nlpzoo.build_model"]


@pytest.mark.parametrize("path, source, expected", [
    # `from .. import x` two levels up from a module of a sub-package.
    ("tasks/tagging/model.py", "from .. import registry\n", "nlpzoo.tasks.registry"),
    ("tasks/tagging/model.py", "from ...zoo import presets\n", "nlpzoo.zoo.presets"),
    # In a package's __init__.py, `.` is the package itself.
    ("tasks/tagging/__init__.py", "from .model import Tagger\n", "nlpzoo.tasks.tagging.model.Tagger"),
    ("tasks/__init__.py", "from .registry import TASKS\n", "nlpzoo.tasks.registry.TASKS"),
    ("nlpzoo/__init__.py", "from .zoo import builder\n", "nlpzoo.zoo.builder"),
])
def test_relative_imports_resolve_against_the_importing_package(path, source, expected):
    [found] = imports_of_source(source, path)
    assert found.name == expected


def test_doctest_line_numbers_point_at_the_example():
    source = ('def f():\n    """Doc.\n\n    Example:\n\n'
              '    >>> 1\n    1\n    >>> import nlpzoo.zoo\n    """\n')
    assert layering_violations(source, "layers/x.py") == [
        "layers/x.py:8 imports nlpzoo.zoo (doctest)"]


@pytest.mark.parametrize("importer, imported, expected", [
    # Down the ranks, and inside one group: fine.
    ("nlpzoo.tasks.tagging.model", "nlpzoo.tasks.words.conll", None),
    ("nlpzoo.tasks.tagging.model", "nlpzoo.tasks.tagging.metrics", None),
    ("nlpzoo.tasks.words.pipeline", "nlpzoo.tasks.text.batching", None),
    ("nlpzoo.tasks.registry", "nlpzoo.tasks.task", None),  # sideways, allowed in that rank
    ("nlpzoo.tasks.builtin", "nlpzoo.tasks.span_ner.task", None),
    ("nlpzoo.tasks.distillation.families", "nlpzoo.tasks.tagging.task", None),
    # A family importing another family, up or down the ranks: refused.
    ("nlpzoo.tasks.span_ner.readers", "nlpzoo.tasks.tagging.readers",
     "sideways: span_ner → tagging"),
    ("nlpzoo.tasks.bi_encoder.model", "nlpzoo.tasks.classification",
     "sideways: bi_encoder → classification"),
    ("nlpzoo.tasks.registry", "nlpzoo.tasks.classification.task", "up: registry → classification"),
    ("nlpzoo.tasks.text.tokenizer", "nlpzoo.tasks.words.pipeline", "up: text → words"),
    ("nlpzoo.tasks.modeling.auxiliary_mlm", "nlpzoo.tasks.pretraining.packing",
     "up: modeling → pretraining"),
    ("nlpzoo.tasks.tagging.task", "nlpzoo.tasks.distillation", "up: tagging → distillation"),
    ("nlpzoo.tasks.classification.task", "nlpzoo.tasks.builtin", "up: classification → builtin"),
])
def test_tasks_order_refuses_imports_up_and_across_families(importer, imported, expected):
    violations = tasks_order_violations([(importer, imported)])
    assert violations == ([] if expected is None else [f"{importer} imports {imported} ({expected})"])


def test_a_module_no_rank_places_is_reported():
    with pytest.raises(KeyError, match="tasks/newthing has no rank"):
        tasks_order_violations([("nlpzoo.tasks.newthing.x", "nlpzoo.tasks.io.errors")])


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"a"}}, [["a"]]),
    # Two circles, joined by a one-way import: two components.
    ({"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
])
def test_import_circles_are_the_strongly_connected_components(graph, expected):
    assert import_circles(graph) == expected
