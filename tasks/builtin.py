"""Registers the built-in task families: importing this module makes their names known.

The registry (`nlpzoo.tasks.registry`) imports no family; this module imports
each one, and every family registers itself with `register_task`. `nlpzoo.zoo`
imports it, so `build_model` and the binaries know every built-in task.

>>> from nlpzoo.tasks import builtin
>>> from nlpzoo.tasks.registry import task_names
>>> {"bi_encoder", "classification", "sentence_embedding", "span_ner", "tagging"} <= set(task_names())
True
"""

from nlpzoo.tasks.bi_encoder.task import BiEncoderTask
from nlpzoo.tasks.classification.task import ClassificationTask
from nlpzoo.tasks.fill_mask.task import FillMaskTask
from nlpzoo.tasks.prompt_classification.task import PromptClassificationTask
from nlpzoo.tasks.question_answering.task import QuestionAnsweringTask
from nlpzoo.tasks.sentence_embedding.task import SentenceEmbeddingTask
from nlpzoo.tasks.span_ner.task import SpanNERTask
from nlpzoo.tasks.tagging.task import TaggingTask

BUILTIN_TASKS = (ClassificationTask, TaggingTask, SpanNERTask, SentenceEmbeddingTask,
                 BiEncoderTask, QuestionAnsweringTask, FillMaskTask,
                 PromptClassificationTask)
