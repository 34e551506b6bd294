"""Pretrained encoder checkpoints: load from (and write to) local directories.

`load_encoder` and `load_tokenizer` (and `zoo.load_pretrained`) read any of three
formats, told apart by their files (`checkpoint_format`): our own native
directory (`save_encoder_checkpoint`), a KerasHub preset of a BERT-family
backbone (`export_keras_hub_preset` writes one, of the encoder's family) and a
Hugging Face directory (`export_hf_checkpoint` writes one). `export_hf_task_model` writes a
fine-tuned task model with its head (`BertForSequenceClassification`, ...).

>>> from nlpzoo.zoo.checkpoints import checkpoint_format
>>> checkpoint_format("/no/such/checkpoint")
Traceback (most recent call last):
...
FileNotFoundError: /no/such/checkpoint: no such checkpoint directory
"""

from nlpzoo.zoo.checkpoints.formats import (
    checkpoint_format,
    load_encoder,
    load_tokenizer,
    matching_encoder_preset,
    read_tokenizer_settings,
)
from nlpzoo.zoo.checkpoints.huggingface import (
    export_hf_checkpoint,
    hf_tensors,
    load_hf_encoder,
    load_hf_weights,
    read_hf_config,
    read_hf_lowercase,
    read_hf_weights,
    read_sentence_transformers_max_seq_length,
)
from nlpzoo.zoo.checkpoints.handles import PRETRAINED_CHECKPOINTS, is_handle, resolve_handle
from nlpzoo.zoo.checkpoints.hf_tokenizers import load_hf_tokenizer
from nlpzoo.zoo.checkpoints.keras_hub import (
    export_keras_hub_preset,
    load_keras_hub_encoder,
    load_keras_hub_tokenizer,
    read_keras_hub_config,
)
from nlpzoo.zoo.checkpoints.native import load_native_encoder, save_encoder_checkpoint
from nlpzoo.zoo.checkpoints.heads import head_tensors, load_pretraining_heads
from nlpzoo.zoo.checkpoints.hf_task_heads import (
    HEAD_ROWS,
    export_hf_task_model,
    head_kind,
)
from nlpzoo.zoo.checkpoints.pretraining_heads import load_hf_pretraining_heads, load_pretrainer

__all__ = [
    "PRETRAINED_CHECKPOINTS",
    "is_handle",
    "resolve_handle",
    "HEAD_ROWS",
    "checkpoint_format",
    "export_hf_checkpoint",
    "export_hf_task_model",
    "export_keras_hub_preset",
    "head_tensors",
    "head_kind",
    "hf_tensors",
    "load_encoder",
    "load_hf_encoder",
    "load_hf_pretraining_heads",
    "load_hf_tokenizer",
    "load_hf_weights",
    "load_keras_hub_encoder",
    "load_keras_hub_tokenizer",
    "load_native_encoder",
    "load_pretrainer",
    "load_pretraining_heads",
    "load_tokenizer",
    "read_hf_config",
    "read_hf_lowercase",
    "read_hf_weights",
    "read_keras_hub_config",
    "matching_encoder_preset",
    "read_sentence_transformers_max_seq_length",
    "read_tokenizer_settings",
    "save_encoder_checkpoint",
]
