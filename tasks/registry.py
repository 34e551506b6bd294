"""Task names → task objects, for the binaries."""

from tasks.classification.task import ClassificationTask

_TASKS = {"classification": ClassificationTask}


def task_names():
    return sorted(_TASKS)


def get_task(name):
    """The task object for `name` ("classification", ...)."""
    if name not in _TASKS:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(task_names())}")
    return _TASKS[name]()
