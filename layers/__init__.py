"""Reusable Keras 3 layers for transformer encoders and their heads.

Nothing in this package knows about a particular task or data format; `tasks/`
and `zoo/` assemble these layers into models.
"""

from layers.adapter import Adapter
from layers.classification_head import ClassificationHead
from layers.cosine_similarity import CosineSimilarity, cosine_similarity
from layers.crf import CRF
from layers.embeddings import TextEmbeddings
from layers.encoder import Encoder, encoder_config, rebuild_encoder, transformer_of
from layers.layer_mix import LAYER_MIXES, LayerMix
from layers.lora_dense import LoraDense
from layers.masked_lm_head import MaskedLMHead
from layers.next_sentence_head import NextSentenceHead
from layers.pair_features import PAIR_TERMS, PairFeatures
from layers.position_gather import PositionGather, gather_positions
from layers.self_attention import MultiHeadSelfAttention
from layers.sequence_pooling import POOLINGS, SequencePooling
from layers.span_boundary_head import SpanBoundaryHead
from layers.span_classifier import SpanClassifier
from layers.span_grid import SpanGrid
from layers.span_representation import SpanRepresentation
from layers.tied_vocabulary_decoder import TiedVocabularyDecoder
from layers.transformer_block import TransformerEncoderBlock
from layers.transformer_encoder import TransformerEncoder

__all__ = [
    "Adapter",
    "CRF",
    "ClassificationHead",
    "CosineSimilarity",
    "Encoder",
    "LAYER_MIXES",
    "LayerMix",
    "LoraDense",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "NextSentenceHead",
    "PAIR_TERMS",
    "PairFeatures",
    "POOLINGS",
    "PositionGather",
    "SequencePooling",
    "SpanBoundaryHead",
    "SpanClassifier",
    "SpanGrid",
    "SpanRepresentation",
    "TextEmbeddings",
    "TiedVocabularyDecoder",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "cosine_similarity",
    "encoder_config",
    "gather_positions",
    "rebuild_encoder",
    "transformer_of",
]
