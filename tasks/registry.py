"""Task names → `Task` classes: the only place that maps a name to a task.

The registry imports no task family: the built-in ones register when
`nlpzoo.tasks.builtin` is imported (`nlpzoo.zoo` does that), a task of your
own with the `register_task` decorator (and, for the binaries, in a module
they import with `--task_module=your.module`).

Examples:
>>> import dataclasses
>>> from nlpzoo.tasks.task import Task
>>> @register_task
... class EchoTask(Task):
...     name = "echo_example"
...     @dataclasses.dataclass(frozen=True)
...     class Options:
...         width: int = 2
>>> get_task("echo_example", width=4).options.width
4
>>> "echo_example" in task_names()
True
"""

import difflib
import importlib

_TASKS = {}


def register_task(task_class):
    """Class decorator: makes `task_class` available under `task_class.name`.

    Registering the same class twice is harmless; another class under a taken
    name is an error.
    """
    name = task_class.name
    if not name or not isinstance(name, str):
        raise ValueError(f"{task_class.__name__} needs a `name` to be registered")
    existing = _TASKS.get(name)
    if existing is not None and existing is not task_class:
        raise ValueError(f"task name {name!r} is taken by {existing.__module__}."
                         f"{existing.__name__}")
    _TASKS[name] = task_class
    return task_class


def task_names():
    """The registered task names, sorted."""
    return sorted(_TASKS)


def get_task_class(name):
    """The `Task` subclass registered as `name`; unknown names list the valid ones."""
    if name not in _TASKS:
        close = difflib.get_close_matches(str(name), task_names(), n=len(_TASKS), cutoff=0.0)
        raise ValueError(f"unknown task {name!r}; valid names (closest first): "
                         f"{', '.join(close)}")
    return _TASKS[name]


def get_task(name, **options):
    """An instance of the task registered as `name`, with its options."""
    return get_task_class(name)(**options)


def task_from_metadata(metadata):
    """The task of a trained model, from its metadata (`task`, `task_options`, ...).

    A task registered by a module that is not imported yet is named with that
    module (`task_module` in the metadata), so the error says what to import.
    """
    name, module = metadata["task"], metadata.get("task_module")
    if name not in _TASKS and module:
        raise ValueError(f"the model's task {name!r} is registered by the module {module!r}: "
                         f"import it first (binaries: --task_module={module})")
    return get_task_class(name).from_metadata(metadata)


def import_task_modules(modules):
    """Imports modules that register tasks of their own (`--task_module`)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(f"cannot import task module {module!r}: {error}") from None



def _install_resolver():
    # Task models find their Task from their metadata through this lookup; the model layer
    # sits below the registry and may not import it (see `install_task_resolver`).
    from nlpzoo.tasks.modeling.encoder_task_model import install_task_resolver

    install_task_resolver(task_from_metadata)


_install_resolver()
