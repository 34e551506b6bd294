"""Span-based NER (flat and nested): readers, decoding, threshold calibration and metrics.

Pure Python and NumPy; the Keras span models live elsewhere. Spans are `(start, end, label)`
over word positions with an inclusive `end`.
"""

from nlpzoo.tasks.span_ner.decoding import (
    Calibration,
    calibrate_threshold,
    decode_flat,
    decode_nested,
    spans_overlap,
)
from nlpzoo.tasks.span_ner.metrics import span_scores
from nlpzoo.tasks.span_ner.readers import (
    NONE_LABEL,
    DataFormatError,
    SpanSentence,
    from_tagged_sentences,
    read_span_file,
    read_span_jsonl,
    span_label_names,
)

__all__ = [
    "NONE_LABEL",
    "Calibration",
    "DataFormatError",
    "SpanSentence",
    "calibrate_threshold",
    "decode_flat",
    "decode_nested",
    "from_tagged_sentences",
    "read_span_file",
    "read_span_jsonl",
    "span_label_names",
    "span_scores",
    "spans_overlap",
]
