"""Our own encoder checkpoint directory: what pretraining writes, fine-tuning reads.

A native checkpoint directory holds

    encoder.keras          the functional encoder (`zoo.build_encoder`), saved by Keras
    vocab.txt              its WordPiece vocabulary, one token per line (id = line)
    tokenizer_config.json  {"do_lower_case": true|false}, as in Hugging Face checkpoints

`save_encoder_checkpoint` writes the three files into a temporary sibling
directory and renames it into place, so a reader never sees half a checkpoint.
`load_native_encoder` rebuilds the encoder from the saved configuration under
the current dtype policy (with any overrides, e.g. `dropout=0.0`) and copies
every weight.

Examples:
>>> import os, tempfile
>>> from zoo import build_encoder
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
>>> encoder = build_encoder("bert_tiny", vocabulary_size=len(vocabulary), num_layers=1)
>>> directory = os.path.join(tempfile.mkdtemp(), "checkpoint")
>>> save_encoder_checkpoint(encoder, directory, vocabulary, lowercase=True)
>>> sorted(os.listdir(directory))
['encoder.keras', 'tokenizer_config.json', 'vocab.txt']
>>> loaded = load_native_encoder(directory, dropout=0.0)
>>> loaded.transformer.dropout, loaded.count_params() == encoder.count_params()
(0.0, True)
"""

import json
import logging
import os
import shutil
import tempfile

import numpy as np

from layers import transformer_of

logger = logging.getLogger(__name__)

ENCODER_FILE = "encoder.keras"
VOCABULARY_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
TRANSFORMER_LAYER = "transformer"
# Base preset for `build_encoder`: every field that shapes the encoder comes from
# the saved configuration.
_BASE_PRESET = "bert_base"
# TransformerEncoder config keys that are not `build_encoder` fields.
_NOT_ENCODER_FIELDS = ("name", "trainable", "dtype", "initializer_range")


def is_native_checkpoint(path):
    """Whether `path` is a directory holding `encoder.keras`."""
    return os.path.isfile(os.path.join(os.fspath(path), ENCODER_FILE))


def _functional_encoder(encoder):
    """`encoder` as a functional model with a "transformer" layer."""
    from layers import TransformerEncoder
    from zoo.builder import ENCODER_INPUTS

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


def _check_vocabulary(vocabulary, transformer):
    from tasks.tokenizer import PAD, UNK, CLS, SEP

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


def write_directory_atomically(directory, write, overwrite=False):
    """Calls `write(temporary_dir)` and renames the result to `directory`.

    The temporary directory is a hidden sibling of `directory` (same file
    system, so the rename is atomic). An existing non-empty `directory` is
    refused unless `overwrite`, in which case it is replaced only once the new
    contents are complete.
    """
    directory = os.path.abspath(os.fspath(directory))
    exists = os.path.lexists(directory)
    if exists and not os.path.isdir(directory):
        raise ValueError(f"{directory} exists and is not a directory")
    if exists and os.listdir(directory) and not overwrite:
        raise ValueError(f"{directory} exists and is not empty; choose a new directory or "
                         "pass overwrite=True to replace it")
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.tmp-", dir=parent)
    try:
        write(temporary)
        if exists:
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.old-", dir=parent)
            os.rename(directory, os.path.join(old, "previous"))
            os.rename(temporary, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(temporary, directory)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def save_encoder_checkpoint(encoder, directory, vocabulary, lowercase, overwrite=False):
    """Writes `encoder` with its tokenizer settings as a native checkpoint directory.

    Args:
        encoder: a functional encoder from `zoo.build_encoder` (or its
            `TransformerEncoder` layer), e.g. the encoder of a pretraining model.
        directory: the checkpoint directory to create.
        vocabulary: the WordPiece tokens (a list; id = position), as many as
            the encoder's `vocabulary_size`.
        lowercase: whether the tokenizer lower-cases and strips accents.
        overwrite: replace an existing non-empty `directory`.

    Raises:
        ValueError: `directory` exists and is not empty (without `overwrite`),
            or the vocabulary does not fit the encoder.
    """
    encoder = _functional_encoder(encoder)
    tokens = _check_vocabulary(vocabulary, transformer_of(encoder))

    def write(temporary):
        encoder.save(os.path.join(temporary, ENCODER_FILE))
        with open(os.path.join(temporary, VOCABULARY_FILE), "w", encoding="utf-8") as f:
            f.write("".join(f"{token}\n" for token in tokens))
        with open(os.path.join(temporary, TOKENIZER_CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump({"do_lower_case": bool(lowercase)}, f, indent=2)
            f.write("\n")

    write_directory_atomically(directory, write, overwrite=overwrite)


def encoder_fields(transformer):
    """`build_encoder` fields that rebuild `transformer` (a TransformerEncoder)."""
    config = transformer.get_config()
    return {key: value for key, value in config.items() if key not in _NOT_ENCODER_FIELDS}


def copy_encoder_weights(source, target, origin="the checkpoint"):
    """Copies every weight of TransformerEncoder `source` into `target`.

    Both must have the same structure; a position table may be cut to a
    shorter `max_sequence_length`. Raises `ValueError` naming the weights that
    are missing, left over or of the wrong shape (nothing is assigned then).
    """
    source_weights = {variable.path.split("/", 1)[-1]: variable for variable in source.weights}
    target_weights = {variable.path.split("/", 1)[-1]: variable for variable in target.weights}
    missing = sorted(set(target_weights) - set(source_weights))
    if missing:
        raise ValueError(f"{origin} lacks {len(missing)} weight(s) the encoder needs: "
                         f"{', '.join(missing)}")
    extra = sorted(set(source_weights) - set(target_weights))
    if extra:
        raise ValueError(f"{origin} has {len(extra)} weight(s) the encoder has no place for "
                         f"(an override contradicts it?): {', '.join(extra)}")
    assignments, wrong = [], []
    for name, variable in target_weights.items():
        value = np.asarray(source_weights[name].numpy())
        expected = tuple(variable.shape)
        if (name.endswith("position_embedding/embeddings") and value.ndim == 2
                and value.shape[1] == expected[1] and value.shape[0] > expected[0]):
            value = value[: expected[0]]
        if tuple(value.shape) != expected:
            wrong.append(f"{name}: {origin} has shape {tuple(value.shape)}, "
                         f"the encoder expects {expected}")
            continue
        assignments.append((variable, value))
    if wrong:
        raise ValueError(f"{len(wrong)} weight(s) have the wrong shape (an override "
                         f"contradicts {origin}?): {'; '.join(wrong)}")
    for variable, value in assignments:
        variable.assign(value.astype(variable.dtype, copy=False))


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

    from zoo.builder import build_encoder

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
    config = encoder_fields(transformer)
    config.update(overrides)
    encoder = build_encoder(_BASE_PRESET, **config)
    copy_encoder_weights(transformer, encoder.transformer, origin=file)
    return encoder


def read_native_lowercase(path):
    """`do_lower_case` from a native checkpoint's tokenizer_config.json."""
    from zoo.checkpoints.huggingface import read_hf_lowercase

    return read_hf_lowercase(path)
