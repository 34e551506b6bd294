"""`build_model` and `build_encoder`: presets plus validated overrides → Keras models."""

from nlpzoo.layers import LAYER_MIXES, rebuild_encoder, transformer_of
from nlpzoo.tasks.training.gradual_unfreezing import freeze_below_top_layers
from nlpzoo.tasks.training.l2sp import attach_l2sp
from nlpzoo.tasks.training.optimization import SCHEDULES, create_optimizer
from nlpzoo.tasks.registry import get_task
from nlpzoo.zoo.checkpoints import (
    PRETRAINED_CHECKPOINTS,
    is_handle,
    load_encoder,
    load_pretraining_heads,
    load_tokenizer,
    matching_encoder_preset,
)
from nlpzoo.zoo.encoders import build_encoder, check_number, unknown_name, validated_encoder_config
from nlpzoo.zoo.hardware import resolve_jit_compile
from nlpzoo.zoo.presets import ENCODER_FIELDS as _ENCODER_FIELDS
from nlpzoo.zoo.presets import ENCODER_PRESETS, TASK_PRESETS

_TRAINING_FIELDS = ("learning_rate", "warmup_steps", "total_steps", "weight_decay",
                    "jit_compile", "head_learning_rate", "layer_lr_decay", "schedule",
                    "clip_norm", "gradient_accumulation_steps")
# How the pretrained encoder is adapted (tools/train.py flags of the same names).
_ADAPTATION_FIELDS = ("freeze_encoder", "trainable_layers", "layer_mix", "adapter_size",
                      "lora_rank", "l2sp")
# How the encoder runs, not what it computes (`TransformerEncoder.pack_length`).
_EXECUTION_FIELDS = ("pack_length",)
# What turns raw text into the model's inputs (the model's preprocessor, `_attach_metadata`).
_PREPROCESSING_FIELDS = ("vocabulary", "tokenizer", "lowercase", "max_seq_length")


def list_presets(kind=None, pretrained=False):
    """Preset names: "encoder", "task", or both (default), sorted.

    `pretrained=True` lists the well-known pretrained checkpoints instead, as
    `{handle: encoder preset of its architecture}`
    (`zoo.checkpoints.handles.PRETRAINED_CHECKPOINTS`); a handle loads with
    `build_model(handle, task=...)` or `--init_checkpoint=<handle>`.

    >>> list_presets(pretrained=True)["hf://FacebookAI/roberta-base"]
    'roberta_base'
    """
    if pretrained:
        return dict(PRETRAINED_CHECKPOINTS)
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
    raise unknown_name("preset", name, list_presets())


def check_adaptation(overrides):
    """The adaptation fields of `overrides`, checked (a `ValueError` says what conflicts).

    Examples:
    >>> check_adaptation({"adapter_size": 16, "learning_rate": 1e-3})
    {'adapter_size': 16}
    """
    adaptation = {name: overrides[name] for name in _ADAPTATION_FIELDS if name in overrides}
    for name in ("adapter_size", "lora_rank"):
        if name in adaptation:
            check_number(name, adaptation[name], int, low=0)
    if adaptation.get("layer_mix", "last") not in LAYER_MIXES:
        raise ValueError(f"layer_mix must be one of {', '.join(LAYER_MIXES)}, "
                         f"got {adaptation['layer_mix']!r}")
    l2sp = adaptation.get("l2sp", 0.0)
    check_number("l2sp", l2sp, float, low=0.0)
    if adaptation.get("trainable_layers") is not None:
        check_number("trainable_layers", adaptation["trainable_layers"], int, low=1)
    parameter_efficient = adaptation.get("adapter_size") or adaptation.get("lora_rank")
    if adaptation.get("trainable_layers") is not None and (
            adaptation.get("freeze_encoder") or parameter_efficient):
        raise ValueError("trainable_layers trains the top blocks of the encoder; it cannot be "
                         "combined with freeze_encoder, adapter_size or lora_rank, which "
                         "freeze them")
    if adaptation.get("freeze_encoder") and (parameter_efficient or l2sp):
        raise ValueError("freeze_encoder trains the head only; it cannot be combined with "
                         "adapter_size, lora_rank or l2sp, which train (part of) the encoder")
    if parameter_efficient and l2sp:
        raise ValueError("l2sp pulls the encoder's weights towards their start; with adapters "
                         "or LoRA those weights are frozen already")
    return adaptation


def _adapted_encoder(encoder, adaptation):
    """`encoder` with the adaptation fields applied (new layers keep its output unchanged)."""
    changes = {name: adaptation[name] for name in ("adapter_size", "lora_rank", "layer_mix")
               if name in adaptation}
    transformer = transformer_of(encoder)
    current = dict(adapter_size=transformer.adapter_size, lora_rank=transformer.lora_rank,
                   layer_mix=getattr(encoder, "layer_mix", "last"))
    if any(current[name] != value for name, value in changes.items()):
        encoder = rebuild_encoder(encoder, **changes)
    if adaptation.get("freeze_encoder"):
        # Feature extraction: only the head trains; the flag is saved with the model.
        # A scalar mix is the head's way of reading the encoder: it still learns.
        encoder.trainable = False
        if getattr(encoder, "layer_mix", "last") == "scalar_mix":
            encoder.get_layer("layer_mix").trainable = True
    if adaptation.get("trainable_layers") is not None:
        freeze_below_top_layers(encoder, adaptation["trainable_layers"])
    if adaptation.get("l2sp"):
        attach_l2sp(transformer_of(encoder).trainable_weights, adaptation["l2sp"])
    return encoder


def build_model(preset, encoder=None, compile=True, **overrides):
    """A compiled model for a task preset.

    Args:
        preset: a task preset name, e.g. "bert_tiny_classifier" or
            "bert_base_crf_tagger" or "bert_base_span_ner".
        encoder: an existing encoder model to put the head on (pretrained
            weights); by default a new, randomly initialised one.
        compile: compile with the task's optimizer, loss and metrics.
        **overrides: encoder fields (`num_layers`, `hidden_dim`, `dropout`,
            `max_sequence_length`, `vocabulary_size`, ...), the task's head
            fields (`Task.head_options`: `num_classes` and `labels` for every
            task; `head_hidden_dim` for classifiers; `head` and `tag_scheme`
            for taggers, where the scheme constrains a CRF and defaults to
            "IOB2" when `labels` are given; for span NER `max_span_width`,
            `span_combination`, `span_pooling`, `width_embedding_dim`,
            `span_hidden_dim`, `none_weight`, and `num_classes` counts NONE)
            training fields (`learning_rate`, `warmup_steps`, `total_steps`,
            `weight_decay`, `jit_compile`; `clip_norm`, the global gradient norm
            the optimizer clips to, 1.0 by default and 0 for none;
            `gradient_accumulation_steps=n` to apply the mean gradient of n
            batches once every n batches, as one n-times larger batch would
            (steps then count updates: `create_optimizer`); `schedule`, one of
            `tasks.training.optimization.SCHEDULES`; `head_learning_rate` and
            `layer_lr_decay` for per-part rates; `learning_rate` defaults to
            the encoder preset's `fine_tuning.learning_rate`, and with a
            pretrained `encoder` `head_learning_rate` to its
            `fine_tuning.head_learning_rate`) and adaptation fields
            (`freeze_encoder` to train the head only; `trainable_layers=k` to
            train the top k blocks, the pooler and the head, with the embeddings
            and the blocks below frozen; `layer_mix`, one of
            `layers.LAYER_MIXES`, for what the head reads; `adapter_size` and
            `lora_rank` for Houlsby adapters and LoRA, which train only
            themselves, the LayerNorms (adapters) and the head; `l2sp=α` for
            a penalty α‖θ − θ₀‖² pulling the encoder's weights towards the
            ones it starts from), and `pack_length` > 0 to pack short
            examples into rows of that many tokens (same outputs, less
            padding; needs `jit_compile` off: see
            `layers.TransformerEncoder.pack_length`). Gradual unfreezing changes what trains
            during `fit`: it is a callback,
            `tasks.training.gradual_unfreezing.GradualUnfreezing`. Preprocessing
            fields give the model a preprocessor, so that `fit`, `evaluate` and
            `predict` take raw text (`EncoderTaskModel`): `vocabulary` (the
            WordPiece tokens in id order; it sets `vocabulary_size`) or
            `tokenizer` (a `WordPieceTokenizer`), `lowercase` (default True;
            a tokenizer's own) and `max_seq_length` (default: the encoder
            preset's `fine_tuning.max_seq_length`, at most the encoder's
            `max_sequence_length`). Every model carries its task, options and
            labels (`labels`, else "0".."n-1"). Without `total_steps` a
            compiled model resolves its schedule when `fit` starts (warm-up
            over the preset's `fine_tuning.warmup_fraction` of the steps, or
            `warmup_steps`). Unknown names or bad values raise `ValueError`.

    A pretrained checkpoint's handle (`hf://<org>/<name>`, `kaggle://…`; see
    `list_presets(pretrained=True)`) or local directory may stand for the
    preset, with the task named: `build_model("hf://FacebookAI/roberta-base",
    task="tagging", labels=[...])` is `load_pretrained(handle, "tagging", ...)`,
    the checkpoint's encoder and tokenizer under a new head.

    Examples:
    >>> model = build_model("bert_tiny_classifier", num_classes=6, vocabulary_size=1000)
    >>> model.output_shape
    (None, 6)
    """
    if preset not in TASK_PRESETS and preset not in ENCODER_PRESETS and (
            "task" in overrides or is_handle(preset)):
        if "task" not in overrides:
            raise ValueError(f"{preset}: a checkpoint has no task; name one, e.g. "
                             f"build_model({preset!r}, task='classification', num_classes=2)")
        if encoder is not None or not compile:
            raise ValueError("a checkpoint brings its own encoder and is compiled: give "
                             "build_model no encoder and compile=True")
        return load_pretrained(preset, overrides.pop("task"), **overrides)
    if preset not in TASK_PRESETS:
        if preset in ENCODER_PRESETS:
            raise ValueError(
                f"{preset!r} is an encoder preset; use build_encoder({preset!r}), "
                f"build_task_model(task, {preset!r}) or a task preset such as "
                f"{preset + '_classifier'!r}"
            )
        raise unknown_name("task preset", preset, TASK_PRESETS)
    task_preset = TASK_PRESETS[preset]
    task = get_task(task_preset.task, **task_preset.task_options)
    defaults = dict(task_preset.head_options)
    if overrides.get("labels") is not None and "num_classes" not in overrides:
        defaults.pop("num_classes", None)  # the labels say how many
    return build_task_model(task, task_preset.encoder, encoder=encoder, compile=compile,
                            **{**defaults, **overrides})


def build_task_model(task, encoder_preset, encoder=None, compile=True, **overrides):
    """A compiled model for a task on an encoder preset: any registered task, no task preset.

    Args:
        task: a `tasks.task.Task`, or the name of a registered one.
        encoder_preset: an encoder preset name ("bert_tiny", ...): the shape
            of a new encoder and the training defaults (`fine_tuning`).
        encoder: an existing encoder model to put the head on (pretrained
            weights); by default a new, randomly initialised one.
        compile: compile with the task's optimizer, loss and metrics.
        **overrides: as for `build_model`; the head fields are the task's
            `head_options`.

    Examples:
    >>> tagger = build_task_model("tagging", "bert_tiny", labels=["O", "B-PER", "I-PER"],
    ...                           vocabulary_size=1000)
    >>> tagger.output_shape
    (None, None, 3)
    """
    if isinstance(task, str):
        task = get_task(task)
    if encoder_preset not in ENCODER_PRESETS:
        raise unknown_name("encoder preset", encoder_preset, ENCODER_PRESETS)
    valid = (_ENCODER_FIELDS + tuple(task.head_options) + _TRAINING_FIELDS
             + _ADAPTATION_FIELDS + _EXECUTION_FIELDS + _PREPROCESSING_FIELDS)
    for name in overrides:
        if name not in valid:
            raise unknown_name("override", name, valid)
    preprocessing = {name: overrides.pop(name) for name in _PREPROCESSING_FIELDS
                     if name in overrides}
    vocabulary = _vocabulary_of(preprocessing)
    if vocabulary is not None and encoder is None:
        overrides.setdefault("vocabulary_size", len(getattr(vocabulary, "vocabulary", vocabulary)))
    adaptation = check_adaptation(overrides)
    encoder_config = validated_encoder_config(ENCODER_PRESETS[encoder_preset], overrides)
    head = {name: value for name, value in overrides.items() if name in task.head_options}
    labels = head.get("labels")
    if "num_classes" in head:
        check_number("num_classes", head["num_classes"], int, low=2)
        if labels is not None and head["num_classes"] != len(labels):
            raise ValueError(f"num_classes={head['num_classes']} but {len(labels)} labels "
                             "were given")
    pretrained = encoder is not None
    if not pretrained:
        encoder_overrides = {k: v for k, v in overrides.items() if k in _ENCODER_FIELDS}
        encoder = build_encoder(encoder_preset, **encoder_overrides)
    encoder = _adapted_encoder(encoder, adaptation)
    jit_compile = resolve_jit_compile(overrides.get("jit_compile", "auto"))
    if "pack_length" in overrides:
        check_number("pack_length", overrides["pack_length"], int, low=0)
        if overrides["pack_length"] and compile and jit_compile:
            raise ValueError(
                "pack_length needs jit_compile off: the number of packed rows depends on "
                "the data, and XLA compiles static shapes only")
        transformer_of(encoder).pack_length = overrides["pack_length"]
    model = task.build_model(encoder, dropout=encoder_config["dropout"], **head)
    _attach_metadata(model, task, encoder_preset, head, vocabulary, preprocessing)
    if compile:
        total_steps = overrides.get("total_steps")
        warmup_steps = overrides.get("warmup_steps", 0)
        if total_steps is not None:
            check_number("total_steps", total_steps, int, low=1)
            check_number("warmup_steps", warmup_steps, int, low=0, high=total_steps)
        weight_decay = overrides.get("weight_decay", 0.01)
        check_number("weight_decay", weight_decay, float, low=0.0)
        clip_norm = overrides.get("clip_norm", 1.0)
        check_number("clip_norm", clip_norm, float, low=0.0)
        accumulation = overrides.get("gradient_accumulation_steps", 1)
        check_number("gradient_accumulation_steps", accumulation, int, low=1)
        defaults = ENCODER_PRESETS[encoder_preset].fine_tuning
        learning_rate = overrides.get("learning_rate", defaults.learning_rate)
        check_number("learning_rate", learning_rate, float, low=0.0, low_open=True)
        # A fresh head on a pretrained encoder learns at its own, larger rate; when
        # everything starts from random weights, or the head is pretrained too (a task's
        # `pretrained_heads`: prompt classification's MLM head), everything learns at one rate.
        fresh_head = pretrained and not task.pretrained_heads
        head_learning_rate = overrides.get(
            "head_learning_rate", defaults.head_learning_rate if fresh_head else None)
        if head_learning_rate is not None:
            check_number("head_learning_rate", head_learning_rate, float, low=0.0,
                          low_open=True)
        layer_lr_decay = overrides.get("layer_lr_decay", 1.0)
        check_number("layer_lr_decay", layer_lr_decay, float, low=0.0, high=1.0, low_open=True)
        schedule = overrides.get("schedule", "linear")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
        if total_steps is None and schedule != "constant":
            # The steps are known when `fit` starts (`EncoderTaskModel.fit`): the schedule then.
            model.deferred_schedule = {
                "schedule": schedule, "learning_rate": learning_rate,
                "warmup_fraction": defaults.warmup_fraction,
                "warmup_steps": overrides.get("warmup_steps")}
        model.compile(
            optimizer=create_optimizer(
                learning_rate, total_steps, warmup_steps, weight_decay,
                head_learning_rate=head_learning_rate, layer_lr_decay=layer_lr_decay,
                num_layers=transformer_of(encoder).num_layers, schedule=schedule,
                clip_norm=clip_norm, gradient_accumulation_steps=accumulation,
            ),
            loss=task.loss(),
            metrics=task.metrics(model),
            jit_compile=jit_compile,
        )
    return model


def _vocabulary_of(preprocessing):
    """The WordPiece tokens given as `vocabulary`, or the `SubwordTokenizer` given as
    `tokenizer` (of any kind), as `Task.make_preprocessor` takes them; None if neither."""
    vocabulary, tokenizer = preprocessing.get("vocabulary"), preprocessing.get("tokenizer")
    if vocabulary is not None and tokenizer is not None:
        raise ValueError("give vocabulary or tokenizer, not both")
    if tokenizer is not None:
        preprocessing.setdefault("lowercase", tokenizer.lowercase)
        return tokenizer
    return None if vocabulary is None else [str(token) for token in vocabulary]


def _attach_metadata(model, task, encoder_preset, head, vocabulary, preprocessing):
    """Gives `model` its task, options, labels and (with a vocabulary) its preprocessor."""
    if not hasattr(model, "attach_metadata"):
        return
    labels = head.get("labels")
    if labels is None:
        num_classes = head.get("num_classes")
        if num_classes is None and isinstance(model.output_shape, tuple):
            num_classes = model.output_shape[-1]  # the head's default
        labels = task.default_labels(int(num_classes)) if num_classes else []
    preprocessor = None
    if vocabulary is not None:
        default_length = ENCODER_PRESETS[encoder_preset].fine_tuning.max_seq_length
        longest = transformer_of(model.encoder).max_sequence_length
        max_seq_length = preprocessing.get("max_seq_length", min(default_length, longest))
        check_number("max_seq_length", max_seq_length, int, low=3, high=longest)
        preprocessor = task.make_preprocessor(vocabulary, preprocessing.get("lowercase", True),
                                              max_seq_length)
    model.attach_metadata(task=task.name, labels=labels, preprocessor=preprocessor,
                          task_options=task.options_dict(), task_module=type(task).__module__)
    model._task = task  # known here: no registry look-up needed


def load_pretrained(path, task, **options):
    """A compiled task model whose encoder starts from a checkpoint directory.

    The encoder comes from `load_encoder(path)`; the head comes from the task
    (`zoo.build_task_model`) and the training defaults (learning rate, ...)
    from the encoder preset with the checkpoint's shape (e.g.
    "minilm_l6_h384" for all-MiniLM-L6-v2), else the nearest one. The
    tokenizer to feed it is `load_tokenizer(path)`.

    Args:
        path: a native, KerasHub or Hugging Face checkpoint directory, or a
            handle (`hf://<org>/<name>`, `kaggle://…`: `list_presets(pretrained=True)`).
        task: a registered task name ("classification", "tagging",
            "span_ner", ... see `tasks.registry.task_names()`) or a `Task`.
        **options: the task's options (e.g. `paired_input=True` for a pair
            classifier) and `build_model` overrides: the task's head fields
            (`num_classes`, `labels`; `head="softmax"` or `"crf"` and
            `tag_scheme` for tagging; span fields), training fields
            (`learning_rate`, `total_steps`, `warmup_steps`, `weight_decay`,
            `jit_compile`, `schedule`, `head_learning_rate`, `layer_lr_decay`),
            adaptation fields (`freeze_encoder`, `layer_mix`, `adapter_size`,
            `lora_rank`, `l2sp`; see `zoo.build_model`), encoder fields, which are applied to the
            loaded encoder (`dropout`, `attention_dropout`,
            `max_sequence_length`), and `max_seq_length` (the preprocessor's).

    A task with `pretrained_heads` (fill_mask: BERT's masked-LM head) takes
    them from the checkpoint too, and refuses one that lacks them.

    The model carries the checkpoint's tokenizer as its preprocessor (and its
    task and labels), so `fit`, `evaluate` and `predict` take raw text and
    its `.keras` file is all that is needed to use it.

    Returns:
        The compiled Keras model (a `Classifier`, `SequenceTagger`, `SpanNER`, ...).

    Examples:
    >>> import os, tempfile
    >>> from nlpzoo.zoo.checkpoints import save_encoder_checkpoint
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "is", "open", "##s"]
    >>> directory = os.path.join(tempfile.mkdtemp(), "checkpoint")
    >>> save_encoder_checkpoint(build_encoder("bert_tiny", vocabulary_size=len(vocabulary)),
    ...                         directory, vocabulary, lowercase=True)
    >>> tagger = load_pretrained(directory, "tagging", head="crf", labels=["O", "B-LOC", "I-LOC"])
    >>> tagger.label_names, list(tagger.preprocessor.vocabulary) == vocabulary
    (['O', 'B-LOC', 'I-LOC'], True)

    Raises:
        ValueError: an unknown task, a bad option, or a checkpoint that
            cannot be loaded (see `load_encoder`).
    """
    from nlpzoo.tasks.registry import get_task_class

    task_class = get_task_class(task) if isinstance(task, str) else type(task)
    option_names = set(task_class.option_names())
    task_options = {name: value for name, value in options.items() if name in option_names}
    if isinstance(task, str):
        task = task_class(**task_options)
    elif task_options:
        task = task.with_options(**task_options)
    encoder_overrides = {name: value for name, value in options.items()
                         if name in _ENCODER_FIELDS}
    encoder = load_encoder(path, **encoder_overrides)
    transformer = transformer_of(encoder)
    overrides = dict(vocabulary_size=transformer.vocabulary_size,
                     max_sequence_length=transformer.max_sequence_length,
                     dropout=transformer.dropout)
    overrides.update({name: value for name, value in options.items()
                      if name not in option_names})
    if "vocabulary" not in overrides and "tokenizer" not in overrides:
        # The checkpoint's tokenizer becomes the model's preprocessor: it reads raw text.
        overrides["tokenizer"] = load_tokenizer(path)
    model = build_task_model(task, matching_encoder_preset(transformer), encoder=encoder,
                             **overrides)
    if task.pretrained_heads:  # heads the task takes over from the checkpoint (fill-mask's MLM)
        load_pretraining_heads(model, path, required=task.pretrained_heads)
    return model
