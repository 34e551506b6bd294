"""`build_model` and `build_encoder`: presets plus validated overrides → Keras models."""

import dataclasses
import difflib

import keras

from layers import Encoder
from tasks.classification import (
    build_classifier,
    classification_loss,
    classification_metrics,
)
from tasks.optimization import create_optimizer
from tasks.encoder_task_model import MaskedAccuracy
from tasks.span_ner.model import SpanNER
from tasks.tagging.model import SequenceTagger
from zoo.hardware import resolve_jit_compile
from zoo.presets import ENCODER_PRESETS, TASK_PRESETS, EncoderPreset

ENCODER_INPUTS = Encoder.INPUTS
_ENCODER_FIELDS = tuple(
    f.name for f in dataclasses.fields(EncoderPreset) if f.name not in ("description",)
)
_HEAD_FIELDS = ("num_classes", "head_hidden_dim", "labels", "tag_scheme")
_SPAN_FIELDS = ("max_span_width", "span_combination", "span_pooling", "width_embedding_dim",
                "span_hidden_dim", "none_weight")
_TRAINING_FIELDS = ("warmup_steps", "total_steps", "weight_decay", "jit_compile")


def _closest_first(name, valid):
    """`valid` sorted with the names closest to `name` first."""
    close = difflib.get_close_matches(name, valid, n=len(valid), cutoff=0.0)
    return close


def _unknown(kind, name, valid):
    names = ", ".join(_closest_first(name, list(valid)))
    return ValueError(f"unknown {kind} {name!r}; valid names (closest first): {names}")


def list_presets(kind=None):
    """Preset names: "encoder", "task", or both (default), sorted."""
    if kind == "encoder":
        return sorted(ENCODER_PRESETS)
    if kind == "task":
        return sorted(TASK_PRESETS)
    if kind is not None:
        raise ValueError(f"kind must be 'encoder', 'task' or None, got {kind!r}")
    return sorted(ENCODER_PRESETS) + sorted(TASK_PRESETS)


def get_preset(name):
    """The `EncoderPreset` or `TaskPreset` called `name`."""
    if name in ENCODER_PRESETS:
        return ENCODER_PRESETS[name]
    if name in TASK_PRESETS:
        return TASK_PRESETS[name]
    raise _unknown("preset", name, list_presets())


def _check_number(name, value, kind, low=None, high=None, low_open=False, high_open=False):
    ok_type = isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        ok_type = ok_type or isinstance(value, float)
    if not ok_type:
        raise ValueError(f"{name} must be {'a number' if kind is float else 'an integer'}, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and (value >= high if high_open else value > high):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {value!r}")


def _validated_encoder_config(preset, overrides):
    config = dataclasses.asdict(preset)
    config.pop("description")
    config.update({k: v for k, v in overrides.items() if k in config})
    for name in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim",
                 "vocabulary_size", "max_sequence_length", "num_segments"):
        _check_number(name, config[name], int, low=1)
    for name in ("dropout", "attention_dropout"):
        _check_number(name, config[name], float, low=0.0, high=1.0, high_open=True)
    _check_number("learning_rate", config["learning_rate"], float, low=0.0, low_open=True)
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
        raise _unknown("encoder preset", preset, ENCODER_PRESETS)
    for name in overrides:
        if name not in _ENCODER_FIELDS:
            raise _unknown("encoder override", name, _ENCODER_FIELDS)
    config = _validated_encoder_config(ENCODER_PRESETS[preset], overrides)
    config.pop("learning_rate")
    return Encoder(**config, name="encoder")


def build_model(preset, encoder=None, compile=True, **overrides):
    """A compiled model for a task preset.

    Args:
        preset: a task preset name, e.g. "bert_tiny_classifier" or
            "bert_base_crf_tagger" or "bert_base_span_ner".
        encoder: an existing encoder model to put the head on (pretrained
            weights); by default a new, randomly initialised one.
        compile: compile with the task's optimizer, loss and metrics.
        **overrides: encoder fields (`num_layers`, `hidden_dim`, `dropout`,
            `max_sequence_length`, `vocabulary_size`, ...), head fields
            (`num_classes`, `head_hidden_dim`; for taggers `labels`, the tag
            names, and `tag_scheme`, which constrains a CRF and defaults to
            "IOB2" when `labels` are given; for span NER `max_span_width`,
            `span_combination`, `span_pooling`, `width_embedding_dim`,
            `span_hidden_dim`, `none_weight`; `num_classes` counts NONE) and
            training fields
            (`learning_rate`, `warmup_steps`, `total_steps`, `weight_decay`,
            `jit_compile`). Unknown names or bad values raise `ValueError`.

    Examples:
    >>> model = build_model("bert_tiny_classifier", num_classes=6, vocabulary_size=1000)
    >>> model.output_shape
    (None, 6)
    """
    if preset not in TASK_PRESETS:
        if preset in ENCODER_PRESETS:
            raise ValueError(
                f"{preset!r} is an encoder preset; use build_encoder({preset!r}) or a task "
                f"preset such as {preset + '_classifier'!r}"
            )
        raise _unknown("task preset", preset, TASK_PRESETS)
    task = TASK_PRESETS[preset]
    valid = _ENCODER_FIELDS + _HEAD_FIELDS + _SPAN_FIELDS + _TRAINING_FIELDS
    for name in overrides:
        if name not in valid:
            raise _unknown("override", name, valid)
    encoder_config = _validated_encoder_config(ENCODER_PRESETS[task.encoder], overrides)
    num_classes = overrides.get("num_classes", task.num_classes)
    _check_number("num_classes", num_classes, int, low=2)
    if encoder is None:
        encoder_overrides = {k: v for k, v in overrides.items()
                             if k in _ENCODER_FIELDS and k != "learning_rate"}
        encoder = build_encoder(task.encoder, **encoder_overrides)
    labels = overrides.get("labels")
    if labels is not None:
        if overrides.get("num_classes", len(labels)) != len(labels):
            raise ValueError(f"num_classes={num_classes} but {len(labels)} labels were given")
        num_classes = len(labels)
    if task.task == "classification":
        model = build_classifier(
            encoder,
            num_classes,
            dropout=encoder_config["dropout"],
            head_hidden_dim=overrides.get("head_hidden_dim"),
        )
        loss, metrics = classification_loss(), classification_metrics(num_classes)
    elif task.task == "span_ner":
        model = SpanNER(
            encoder,
            num_classes,
            max_span_width=overrides.get("max_span_width", 10),
            combination=overrides.get("span_combination", "x,y"),
            pooling=overrides.get("span_pooling", "attention"),
            width_embedding_dim=overrides.get("width_embedding_dim", 32),
            hidden_dim=overrides.get("span_hidden_dim", 256),
            dropout=encoder_config["dropout"],
            none_weight=overrides.get("none_weight", 1.0),
            name="span_ner",
        )
        loss, metrics = None, [MaskedAccuracy(name="span_accuracy")]  # the model computes its own loss
    else:
        tag_scheme = overrides.get("tag_scheme")
        if task.head == "crf" and labels is not None and tag_scheme is None:
            tag_scheme = "IOB2"
        model = SequenceTagger(
            encoder,
            num_classes,
            head=task.head,
            dropout=encoder_config["dropout"],
            labels=labels,
            tag_scheme=tag_scheme if task.head == "crf" else None,
            name="tagger",
        )
        loss, metrics = None, [MaskedAccuracy(name="token_accuracy")]  # the tagger computes its own loss
    if compile:
        total_steps = overrides.get("total_steps")
        warmup_steps = overrides.get("warmup_steps", 0)
        if total_steps is not None:
            _check_number("total_steps", total_steps, int, low=1)
            _check_number("warmup_steps", warmup_steps, int, low=0, high=total_steps)
        weight_decay = overrides.get("weight_decay", 0.01)
        _check_number("weight_decay", weight_decay, float, low=0.0)
        model.compile(
            optimizer=create_optimizer(
                encoder_config["learning_rate"], total_steps, warmup_steps, weight_decay
            ),
            loss=loss,
            metrics=metrics,
            jit_compile=resolve_jit_compile(overrides.get("jit_compile", "auto")),
        )
    return model
