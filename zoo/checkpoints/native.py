"""Our own encoder checkpoint directory: what pretraining writes, fine-tuning reads.

A native checkpoint directory holds

    encoder.keras          the functional encoder (`zoo.build_encoder`), saved by Keras
    vocab.txt              its WordPiece vocabulary, one token per line (id = line)
    tokenizer_config.json  {"do_lower_case": true|false}, as in Hugging Face checkpoints
                           (another kind of tokenizer: its Hugging Face files instead,
                           `hf_tokenizers.hf_tokenizer_files`: vocab.json + merges.txt,
                           or tokenizer.json, with their tokenizer_config.json)
    pretraining_heads.npz  optional (tools/pretrain.py writes it): the MLM (and NSP)
                           head, under Hugging Face's tensor names and layouts
                           (`zoo.checkpoints.pretraining_heads`)

`save_encoder_checkpoint` writes the three files into a temporary sibling
directory and renames it into place, so a reader never sees half a checkpoint.
`load_native_encoder` rebuilds the encoder from the saved configuration under
the current dtype policy (with any overrides, e.g. `dropout=0.0`) and copies
every weight.

Examples:
>>> import os, tempfile
>>> from nlpzoo.zoo import build_encoder
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
>>> encoder = build_encoder("bert_tiny", vocabulary_size=len(vocabulary), num_layers=1)
>>> directory = os.path.join(tempfile.mkdtemp(), "checkpoint")
>>> save_encoder_checkpoint(encoder, directory, vocabulary, lowercase=True)
>>> sorted(os.listdir(directory))
['.nlpzoo', 'encoder.keras', 'tokenizer_config.json', 'vocab.txt']
>>> loaded = load_native_encoder(directory, dropout=0.0)
>>> loaded.transformer.dropout, loaded.count_params() == encoder.count_params()
(0.0, True)
"""

import logging
import os

import numpy as np

from nlpzoo.tasks.io.atomic_files import (
    write_directory_atomically,
    write_json_atomically,
    write_text_atomically,
)
from nlpzoo.zoo.checkpoints.common import (
    PlannedWeight,
    WeightSource,
    assign_weights,
    load_checkpoint_encoder,
)

from nlpzoo.layers import transformer_of

logger = logging.getLogger(__name__)

ENCODER_FILE = "encoder.keras"
VOCABULARY_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
# Pretraining heads, under Hugging Face's tensor names and layouts (`zoo.checkpoints.heads`).
HEADS_FILE = "pretraining_heads.npz"
TRANSFORMER_LAYER = "transformer"
# TransformerEncoder config keys that are not `build_encoder` fields.
# (Adapters and LoRA are fine-tuning additions, not part of a pretrained encoder:
# `save_encoder_checkpoint` refuses them.)
_NOT_ENCODER_FIELDS = ("name", "trainable", "dtype", "initializer_range", "adapter_size",
                       "lora_rank", "pack_length")


def is_native_checkpoint(path):
    """Whether `path` is a directory holding `encoder.keras`."""
    return os.path.isfile(os.path.join(os.fspath(path), ENCODER_FILE))


def as_functional_encoder(encoder):
    """`encoder` as a functional model with a "transformer" layer."""
    from nlpzoo.layers import TransformerEncoder
    from nlpzoo.zoo.encoders import ENCODER_INPUTS

    import keras

    if isinstance(encoder, TransformerEncoder):
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in ENCODER_INPUTS}
        return keras.Model(inputs, encoder(**inputs), name="encoder")
    try:
        transformer = transformer_of(encoder)
    except (AttributeError, ValueError):
        raise ValueError(
            f"expected a zoo encoder (zoo.build_encoder) with a TransformerEncoder layer named "
            f"{TRANSFORMER_LAYER!r}, got {type(encoder).__name__}"
        ) from None
    if not isinstance(transformer, TransformerEncoder):
        raise ValueError(f"the encoder's {TRANSFORMER_LAYER!r} layer is a "
                         f"{type(transformer).__name__}, not a TransformerEncoder")
    return encoder


def check_vocabulary(vocabulary, transformer):
    """The tokens of `vocabulary`, checked to fit `transformer` (a ValueError says why not)."""
    from nlpzoo.tasks.text.tokenizer import PAD, UNK, CLS, SEP

    tokens = list(vocabulary)
    missing = [token for token in (PAD, UNK, CLS, SEP) if token not in tokens]
    if missing:
        raise ValueError(f"the vocabulary lacks the special tokens {missing}")
    if len(tokens) != transformer.vocabulary_size:
        raise ValueError(f"the vocabulary has {len(tokens)} tokens but the encoder has "
                         f"vocabulary_size={transformer.vocabulary_size}")
    bad = [token for token in tokens if not token or any(c in token for c in "\r\n")]
    if bad:
        raise ValueError(f"vocabulary tokens must be non-empty single lines, got {bad[:3]!r}")
    return tokens


def save_encoder_checkpoint(encoder, directory, vocabulary, lowercase, overwrite=False,
                            heads=None):
    """Writes `encoder` with its tokenizer settings as a native checkpoint directory.

    Args:
        encoder: a functional encoder from `zoo.build_encoder` (or its
            `TransformerEncoder` layer), e.g. the encoder of a pretraining model.
        directory: the checkpoint directory to create.
        vocabulary: the WordPiece tokens (a list; id = position), as many as
            the encoder's `vocabulary_size`; or a `SubwordTokenizer` of any
            kind (a byte-level BPE or SentencePiece one is written as its
            Hugging Face files, which `load_tokenizer` reads back).
        lowercase: whether the tokenizer lower-cases and strips accents
            (a `SubwordTokenizer` says so itself).
        overwrite: replace an existing non-empty `directory`.
        heads: the tensors of pretraining heads trained with the encoder, to
            keep beside it in `HEADS_FILE` (`zoo.checkpoints.heads.head_tensors`
            of a `Pretrainer`: what a fill-mask model reads); None for none.

    Raises:
        ValueError: `directory` exists and is not empty (without `overwrite`),
            the vocabulary does not fit the encoder, or the encoder has
            adapters or LoRA updates.
    """
    encoder = as_functional_encoder(encoder)
    transformer = transformer_of(encoder)
    if transformer.adapter_size or transformer.lora_rank:
        raise ValueError("the encoder has adapters or LoRA updates (adapter_size="
                         f"{transformer.adapter_size}, lora_rank={transformer.lora_rank}); "
                         "an encoder checkpoint holds a plain BERT-family encoder")
    tokenizer_files = None
    if hasattr(vocabulary, "kind") and hasattr(vocabulary, "vocabulary"):  # a SubwordTokenizer
        if vocabulary.kind == "wordpiece":
            vocabulary, lowercase = vocabulary.vocabulary, vocabulary.lowercase
        else:
            from nlpzoo.zoo.checkpoints.hf_tokenizers import hf_tokenizer_files

            if vocabulary.vocabulary_size != transformer.vocabulary_size:
                raise ValueError(f"the tokenizer has {vocabulary.vocabulary_size} tokens but "
                                 f"the encoder has vocabulary_size="
                                 f"{transformer.vocabulary_size}")
            tokenizer_files = hf_tokenizer_files(
                vocabulary, transformer.max_sequence_length - transformer.position_offset)
    tokens = None if tokenizer_files is not None else check_vocabulary(vocabulary, transformer)

    def write(temporary):
        encoder.save(os.path.join(temporary, ENCODER_FILE))
        if tokenizer_files is not None:
            from nlpzoo.zoo.checkpoints.hf_tokenizers import write_hf_tokenizer_files

            write_hf_tokenizer_files(tokenizer_files, temporary)
        else:
            write_text_atomically(os.path.join(temporary, VOCABULARY_FILE),
                                  (f"{token}\n" for token in tokens))
            write_json_atomically({"do_lower_case": bool(lowercase)},
                                  os.path.join(temporary, TOKENIZER_CONFIG_FILE))
        if heads:
            with open(os.path.join(temporary, HEADS_FILE), "wb") as f:
                np.savez(f, **heads)

    write_directory_atomically(directory, write, overwrite=overwrite)


def read_native_heads(path):
    """The pretraining-head tensors a native checkpoint keeps (`HEADS_FILE`), {} when none."""
    file = os.path.join(os.fspath(path), HEADS_FILE)
    if not os.path.isfile(file):
        return {}
    with np.load(file, allow_pickle=False) as stored:
        return {name: stored[name] for name in stored.files}


def encoder_fields(transformer):
    """`build_encoder` fields that rebuild `transformer` (a TransformerEncoder)."""
    config = transformer.get_config()
    return {key: value for key, value in config.items() if key not in _NOT_ENCODER_FIELDS}


def _relative_path(variable):
    """The variable's path inside its TransformerEncoder ("block_0/attention/...")."""
    return variable.path.split("/", 1)[-1]


def copy_encoder_weights(source, target, origin=ENCODER_FILE):
    """Copies every weight of TransformerEncoder `source` into `target`.

    Both must have the same structure; a position table may be cut to a
    shorter `max_sequence_length`. Raises `ValueError` naming the weights that
    are missing, left over or of the wrong shape (nothing is assigned then);
    `origin` (the file `source` was read from) starts the message.
    """
    plan = []
    for variable in target.weights:
        name = _relative_path(variable)
        plan.append(PlannedWeight(variable, (name,), tuple(variable.shape),
                                  position_table=name.endswith("position_embedding/embeddings")))
    tensors = {_relative_path(variable): variable for variable in source.weights}
    # Same architecture on both sides: a weight left over means an override
    # (num_layers, ...) contradicts the checkpoint.
    assign_weights(plan, tensors, WeightSource(os.fspath(origin)), refuse_unused=True)


def load_native_encoder(path, **overrides):
    """The encoder of a native checkpoint directory, as a zoo encoder.

    Args:
        path: a directory written by `save_encoder_checkpoint`.
        **overrides: `build_encoder` fields that replace the saved ones, e.g.
            `dropout=0.0` or `max_sequence_length=128` (at most the saved
            one). The encoder is rebuilt from the saved configuration with the
            overrides and every weight is copied; shape-changing overrides fail
            with the weights they contradict.

    Returns:
        A `keras.Model` named "encoder" (inputs token_ids, segment_ids,
        padding_mask; outputs sequence_output, pooled_output, hidden_states),
        built under the current dtype policy.
    """
    import keras

    directory = os.fspath(path)
    file = os.path.join(directory, ENCODER_FILE)
    if not os.path.isfile(file):
        raise FileNotFoundError(f"{directory}: no {ENCODER_FILE} (is this a checkpoint "
                                "written by save_encoder_checkpoint?)")
    saved = keras.saving.load_model(file, compile=False)
    try:
        transformer = transformer_of(saved)
    except ValueError:
        raise ValueError(f"{file}: not a zoo encoder (no layer named {TRANSFORMER_LAYER!r})")
    return load_checkpoint_encoder(
        directory, overrides,
        read_config=lambda _: encoder_fields(transformer),
        read_weights=lambda _: transformer,
        load_weights=lambda encoder, _, source: copy_encoder_weights(
            source, encoder.transformer, origin=file))
