"""Reusable Keras 3 layers for transformer encoders and their heads.

Nothing in this package knows about a particular task or data format; `tasks/`
and `zoo/` assemble these layers into models.
"""

from layers.classification_head import ClassificationHead
from layers.crf import CRF
from layers.embeddings import TextEmbeddings
from layers.self_attention import MultiHeadSelfAttention
from layers.tag_constraints import allowed_transitions
from layers.transformer_block import TransformerEncoderBlock
from layers.transformer_encoder import TransformerEncoder

__all__ = [
    "CRF",
    "ClassificationHead",
    "MultiHeadSelfAttention",
    "TextEmbeddings",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "allowed_transitions",
]
