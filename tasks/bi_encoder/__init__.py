"""Sentence-BERT bi-encoders: one shared encoder reads each text of a pair."""

from nlpzoo.tasks.modeling.correlation import average_ranks, pearson, spearman
from nlpzoo.tasks.bi_encoder.model import (
    BI_ENCODER_INPUTS,
    OBJECTIVES,
    PAIR_PREFIX,
    BiEncoder,
    bi_encoder_loss,
    bi_encoder_metrics,
    cosine_squared_error,
    pair_inputs,
    split_towers,
)
from nlpzoo.tasks.bi_encoder.pipeline import encode_pairs, make_dataset
from nlpzoo.tasks.bi_encoder.predictions import predict_pairs, prediction_records
from nlpzoo.tasks.bi_encoder.readers import FORMATS, read_pairs, score_of

__all__ = [
    "BI_ENCODER_INPUTS",
    "FORMATS",
    "OBJECTIVES",
    "PAIR_PREFIX",
    "BiEncoder",
    "average_ranks",
    "bi_encoder_loss",
    "bi_encoder_metrics",
    "cosine_squared_error",
    "encode_pairs",
    "make_dataset",
    "pair_inputs",
    "pearson",
    "predict_pairs",
    "prediction_records",
    "read_pairs",
    "score_of",
    "spearman",
    "split_towers",
]
