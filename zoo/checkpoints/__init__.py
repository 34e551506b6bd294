"""Importing pretrained weights into our encoders.

>>> from zoo.checkpoints import load_hf_encoder, load_hf_tokenizer
"""

from zoo.checkpoints.huggingface import (
    load_hf_encoder,
    load_hf_tokenizer,
    load_hf_weights,
    read_hf_config,
    read_hf_lowercase,
    read_hf_weights,
)

__all__ = [
    "load_hf_encoder",
    "load_hf_tokenizer",
    "load_hf_weights",
    "read_hf_config",
    "read_hf_lowercase",
    "read_hf_weights",
]
