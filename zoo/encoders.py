"""`build_encoder`: an encoder preset plus validated overrides → a new encoder.

Below both `zoo.builder` (task models) and `zoo.checkpoints` (which rebuild a
checkpoint's encoder with it), so that each may use it without importing the other.
"""

import difflib

from nlpzoo.layers import Encoder
from nlpzoo.zoo.presets import ENCODER_FIELDS as _ENCODER_FIELDS
from nlpzoo.zoo.presets import ENCODER_PRESETS

ENCODER_INPUTS = Encoder.INPUTS


def closest_first(name, valid):
    """`valid` sorted with the names closest to `name` first."""
    close = difflib.get_close_matches(name, valid, n=len(valid), cutoff=0.0)
    return close


def unknown_name(kind, name, valid):
    """The `ValueError` for an unknown name, listing the valid ones closest first.

    >>> print(unknown_name("preset", "bert_tyni", ["bert_base", "bert_tiny"]))
    unknown preset 'bert_tyni'; valid names (closest first): bert_tiny, bert_base
    """
    names = ", ".join(closest_first(name, list(valid)))
    return ValueError(f"unknown {kind} {name!r}; valid names (closest first): {names}")


def check_number(name, value, kind, low=None, high=None, low_open=False, high_open=False):
    """Refuses `value` unless it is an int (or, `kind` float, a number) within the bounds.

    >>> check_number("dropout", 1.0, float, low=0.0, high=1.0, high_open=True)
    Traceback (most recent call last):
    ...
    ValueError: dropout must be < 1.0, got 1.0
    """
    ok_type = isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        ok_type = ok_type or isinstance(value, float)
    if not ok_type:
        raise ValueError(f"{name} must be {'a number' if kind is float else 'an integer'}, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and (value >= high if high_open else value > high):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {value!r}")


def validated_encoder_config(preset, overrides):
    """`preset`'s encoder arguments with `overrides` applied, each checked (`ValueError`)."""
    config = preset.encoder_arguments()
    config.update({k: v for k, v in overrides.items() if k in config})
    for name in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim",
                 "vocabulary_size", "max_sequence_length"):
        check_number(name, config[name], int, low=1)
    for name in ("num_segments", "position_offset"):  # 0: no segment table (DistilBERT)
        check_number(name, config[name], int, low=0)
    for name in ("dropout", "attention_dropout"):
        check_number(name, config[name], float, low=0.0, high=1.0, high_open=True)
    if config["hidden_dim"] % config["num_heads"]:
        raise ValueError(
            f"hidden_dim={config['hidden_dim']} is not divisible by num_heads={config['num_heads']}"
        )
    return config


def build_encoder(preset="bert_tiny", **overrides):
    """A functional encoder model for an encoder preset (random weights).

    Inputs `token_ids`, `segment_ids`, `padding_mask` (int32 [batch, time]);
    outputs a dict with `sequence_output`, `pooled_output` and `hidden_states`
    (the embeddings output, then every block's output).

    Examples:
    >>> encoder = build_encoder("bert_tiny", vocabulary_size=1000)
    >>> sorted(encoder.output)
    ['hidden_states', 'pooled_output', 'sequence_output']
    """
    if preset not in ENCODER_PRESETS:
        raise unknown_name("encoder preset", preset, ENCODER_PRESETS)
    for name in overrides:
        if name not in _ENCODER_FIELDS:
            raise unknown_name("encoder override", name, _ENCODER_FIELDS)
    config = validated_encoder_config(ENCODER_PRESETS[preset], overrides)
    return Encoder(**config, name="encoder")
