"""Runs the `>>>` examples of our modules, imported by their installed names (`nlpzoo.*`).

pytest's `--doctest-modules` would import `layers/encoder.py` as `layers.encoder`
(the folder's name in the repository), a second copy beside `nlpzoo.layers.encoder`
with its own classes; this imports each module once, by the name users import.

>>> [name for name in module_names("nlpzoo.tasks.io")][:2]
['nlpzoo.tasks.io', 'nlpzoo.tasks.io.atomic_files']
"""

import doctest
import importlib
import io
import pkgutil

OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def module_names(package):
    """`package` and every module below it, sorted."""
    found = [package]
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        found.append(info.name)
    return sorted(found)


def run_docstring_examples(module_name):
    """Runs every example of one module; a failure's report names the example and the output."""
    module = importlib.import_module(module_name)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, module_name):
        runner.run(test, out=report.write)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{module_name}: {results.failed} example(s) failed\n{report.getvalue()}"
    return results.attempted
