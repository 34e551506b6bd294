"""Reusable Keras 3 layers for transformer encoders and their heads.

Nothing in this package knows about a particular task or data format; `tasks/`
and `zoo/` assemble these layers into models. `keras_internals` (not exported
here) is the project's one module that touches private Keras API.
"""

from nlpzoo.layers.adapter import Adapter
from nlpzoo.layers.classification_head import ClassificationHead
from nlpzoo.layers.cosine_similarity import CosineSimilarity, cosine_similarity
from nlpzoo.layers.crf import CRF
from nlpzoo.layers.disentangled_attention import (
    DisentangledSelfAttention,
    RelativePositionEmbeddings,
)
from nlpzoo.layers.embeddings import TextEmbeddings
from nlpzoo.layers.encoder import Encoder, encoder_config, rebuild_encoder, transformer_of
from nlpzoo.layers.layer_mix import LAYER_MIXES, LayerMix
from nlpzoo.layers.lora_dense import LoraDense
from nlpzoo.layers.masked_lm_head import MaskedLMHead, encoder_head_settings
from nlpzoo.layers.next_sentence_head import NextSentenceHead
from nlpzoo.layers.pair_features import PAIR_TERMS, PairFeatures
from nlpzoo.layers.pattern_rows import PatternRows, pattern_rows
from nlpzoo.layers.position_gather import PositionGather, gather_positions
from nlpzoo.layers.prediction_transform import PredictionTransform, token_transform
from nlpzoo.layers.self_attention import MultiHeadSelfAttention
from nlpzoo.layers.sequence_pooling import POOLINGS, SequencePooling
from nlpzoo.layers.span_boundary_head import SpanBoundaryHead
from nlpzoo.layers.span_classifier import SpanClassifier
from nlpzoo.layers.span_endpoint_head import SpanEndpointHead
from nlpzoo.layers.span_grid import SpanGrid
from nlpzoo.layers.span_representation import SpanRepresentation
from nlpzoo.layers.subword_pooling import SUBWORD_POOLINGS, SubwordPooling
from nlpzoo.layers.tied_vocabulary_decoder import TiedVocabularyDecoder
from nlpzoo.layers.transformer_block import TransformerEncoderBlock
from nlpzoo.layers.verbalizer_scores import VerbalizerScores
from nlpzoo.layers.transformer_encoder import (
    TransformerEncoder,
    architecture_defaults,
    distinct_block_count,
)

__all__ = [
    "Adapter",
    "CRF",
    "ClassificationHead",
    "CosineSimilarity",
    "DisentangledSelfAttention",
    "Encoder",
    "LAYER_MIXES",
    "LayerMix",
    "LoraDense",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "NextSentenceHead",
    "PAIR_TERMS",
    "PairFeatures",
    "PatternRows",
    "POOLINGS",
    "PositionGather",
    "PredictionTransform",
    "RelativePositionEmbeddings",
    "SequencePooling",
    "SpanBoundaryHead",
    "SpanClassifier",
    "SpanEndpointHead",
    "SpanGrid",
    "SpanRepresentation",
    "SUBWORD_POOLINGS",
    "SubwordPooling",
    "TextEmbeddings",
    "encoder_head_settings",
    "TiedVocabularyDecoder",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "VerbalizerScores",
    "architecture_defaults",
    "distinct_block_count",
    "cosine_similarity",
    "encoder_config",
    "gather_positions",
    "pattern_rows",
    "token_transform",
    "rebuild_encoder",
    "transformer_of",
]
