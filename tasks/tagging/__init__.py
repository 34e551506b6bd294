"""Sequence tagging (NER, chunking): readers, tag schemes and entity-level metrics.

The tag-scheme names are re-exported from their home, `tasks.words.tags`.
"""

from nlpzoo.tasks.tagging.metrics import entity_scores
from nlpzoo.tasks.words.conll import DataFormatError, TaggedSentence, label_list, read_column_file
from nlpzoo.tasks.words.tags import (
    SCHEMES,
    detect_scheme,
    iob1_to_iob2,
    spans_to_tags,
    split_tag,
    tags_to_spans,
)

__all__ = [
    "SCHEMES",
    "DataFormatError",
    "TaggedSentence",
    "detect_scheme",
    "entity_scores",
    "iob1_to_iob2",
    "label_list",
    "read_column_file",
    "spans_to_tags",
    "split_tag",
    "tags_to_spans",
]
