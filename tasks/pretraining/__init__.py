"""Pretraining: masked LM (token / whole-word), SpanBERT span masking, NSP and SOP pairs.

The masking functions are TensorFlow-only and meant for `tf.data.Dataset.map`
(see `tasks.text.masking` for seeding and determinism); the heads live
in `layers.masked_lm_head`, `layers.span_boundary_head` and
`layers.next_sentence_head`.
"""

from nlpzoo.tasks.text.masking import (
    KEEP,
    MASK,
    RANDOM,
    make_nsp_pairs,
    mlm_mask,
    span_length_probabilities,
    span_mask,
    unigram_distribution,
    word_start_flags,
    zip_with_seeds,
)
from nlpzoo.tasks.pretraining.sentence_order import make_sop_pairs

__all__ = [
    "KEEP",
    "MASK",
    "RANDOM",
    "make_nsp_pairs",
    "make_sop_pairs",
    "mlm_mask",
    "span_length_probabilities",
    "span_mask",
    "unigram_distribution",
    "word_start_flags",
    "zip_with_seeds",
]
