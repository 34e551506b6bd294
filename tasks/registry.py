"""Task names → task objects, for the binaries."""

from tasks.classification.task import ClassificationTask
from tasks.span_ner.task import SpanNERTask
from tasks.tagging.task import TaggingTask

_TASKS = {
    "classification": ClassificationTask,
    "span_ner": SpanNERTask,
    "tagging": TaggingTask,
}


def task_names():
    return sorted(_TASKS)


def get_task(name, **options):
    """The task object for `name` ("classification", "tagging", "span_ner"), with its options."""
    if name not in _TASKS:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(task_names())}")
    return _TASKS[name](**options)
