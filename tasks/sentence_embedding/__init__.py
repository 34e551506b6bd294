"""Sentence embeddings: one vector per text from an encoder, as sentence-transformers makes them."""

from nlpzoo.tasks.sentence_embedding.model import (
    EXTRACTION_MIXES,
    SentenceEmbedder,
    build_embedding_model,
    parse_layer,
)
from nlpzoo.tasks.text.sentences import FORMATS, Sentence, read_sentences
from nlpzoo.tasks.sentence_embedding.similarity import cosine_similarities, top_k

__all__ = [
    "EXTRACTION_MIXES",
    "FORMATS",
    "Sentence",
    "SentenceEmbedder",
    "build_embedding_model",
    "cosine_similarities",
    "parse_layer",
    "read_sentences",
    "top_k",
]
