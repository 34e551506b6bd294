"""Run setup of the training binaries, written once: their shared flags and how they resolve.

tools/train.py, distill.py, multitask.py and pretrain.py define the flags they
share here (`define_fine_tuning_flags`, or its parts for pretraining) and
resolve them here: the starting encoder and preset, the vocabulary, the
sequence length, the learning rates and the hardware settings (packing
included). A binary's `main` then only wires these steps together.

Examples:
>>> from absl import flags as absl_flags
>>> values = absl_flags.FlagValues()
>>> define_fine_tuning_flags(values)
>>> _ = values(["train", "--model_dir=runs/x", "--train_data=a", "--eval_data=b"])
>>> values.batch_size, values.init_checkpoint, values.checkpoint_every_steps
(32, None, 500)
"""

import dataclasses
import functools
import logging
import os

from absl import flags

from nlpzoo.tools.cli.errors import UserError
from nlpzoo.tools.cli.flags import (
    define_hardware_flags,
    define_packing_flag,
    define_progress_flag,
    define_training_loop_flags,
    resolve_pack_length,
    vocabulary_progress,
)


# --- the flags ---------------------------------------------------------------------------------

def define_run_flags(flag_values=flags.FLAGS):
    """`--model_dir`, `--overwrite`, `--batch_size`, `--seed`: what every training run has.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_run_flags(values)
    >>> sorted(values)
    ['base_model_id', 'batch_size', 'license', 'model_dir', 'overwrite', 'seed']
    """
    flags.DEFINE_string("model_dir", None, "Output directory.", flag_values=flag_values)
    flags.DEFINE_boolean("overwrite", False, "Replace a finished run in --model_dir.",
                         flag_values=flag_values)
    flags.DEFINE_integer("batch_size", 32, "Examples (or sequences) per batch: the global "
                         "batch, split over the replicas of --distribution_strategy.",
                         lower_bound=1, flag_values=flag_values)
    flags.DEFINE_integer("seed", 42, "Random seed.", flag_values=flag_values)
    define_model_card_flags(flag_values)


def define_model_card_flags(flag_values=flags.FLAGS):
    """`--base_model_id`, `--license`: what a run's model card (README.md) says of it.

    Read by `zoo.runs.model_card.card_flag`.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_model_card_flags(values)
    >>> _ = values(["train", "--license=apache-2.0"])
    >>> values.base_model_id, values.license
    (None, 'apache-2.0')
    """
    flags.DEFINE_string("base_model_id", None, "The model card's base_model: the starting "
                        "checkpoint's id (e.g. sentence-transformers/all-MiniLM-L6-v2); by "
                        "default the --init_checkpoint folder's name.", flag_values=flag_values)
    flags.DEFINE_string("license", None, "The model card's license (e.g. apache-2.0, mit); "
                        "left out of the card when not given.", flag_values=flag_values)


def define_encoder_flags(flag_values=flags.FLAGS, preset_default=None):
    """`--preset`, `--init_checkpoint`, `--dropout`: the encoder training starts from.

    Read with `load_starting_encoder` and `resolve_preset`.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_encoder_flags(values, preset_default="bert_mini")
    >>> _ = values(["pretrain"])
    >>> values.preset, values.init_checkpoint, values.dropout
    ('bert_mini', None, None)
    """
    flags.DEFINE_string("preset", preset_default, "Encoder preset (bert_tiny, ...; "
                        "tools/train.py also takes a task preset such as "
                        "bert_tiny_classifier): the encoder's shape and the training "
                        "defaults. By default the preset of --init_checkpoint's shape (else "
                        f"the nearest), or {preset_default or 'bert_tiny'} without one.",
                        flag_values=flag_values)
    flags.DEFINE_string("init_checkpoint", None, "A checkpoint directory whose encoder weights "
                        "start training: Hugging Face BERT (config.json, model.safetensors, "
                        "vocab.txt), a KerasHub BertBackbone preset (save_to_preset), or ours "
                        "(encoder.keras; a tools/pretrain.py run directory stands for its "
                        "encoder/).", flag_values=flag_values)
    flags.DEFINE_float("dropout", None, "The encoder's dropout rate, after each sublayer and "
                       "on the attention probabilities; the preset's rates when omitted.",
                       lower_bound=0.0, upper_bound=0.99, flag_values=flag_values)


def define_vocabulary_flags(flag_values=flags.FLAGS):
    """`--vocab`, `--vocab_size`, `--lowercase`: the WordPiece vocabulary (`resolve_tokenizer`).

    Examples:
    >>> values = flags.FlagValues()
    >>> define_vocabulary_flags(values)
    >>> _ = values(["train"])
    >>> values.vocab, values.vocab_size, values.lowercase
    (None, 8000, True)
    """
    flags.DEFINE_string("vocab", None, "vocab.txt to use; by default --init_checkpoint's, or "
                        "one learned from the training text.", flag_values=flag_values)
    flags.DEFINE_integer("vocab_size", 8000, "Size of a vocabulary learned from the training "
                         "text.", lower_bound=100, flag_values=flag_values)
    flags.DEFINE_boolean("lowercase", True, "Lower-case and strip accents before WordPiece "
                         "(--init_checkpoint: the checkpoint's).", flag_values=flag_values)


def define_schedule_flags(flag_values=flags.FLAGS, *, learning_rate=None,
                          warmup_fraction=None, max_seq_length=None):
    """`--epochs`, `--learning_rate`, `--warmup_fraction`, `--clip_norm`, `--max_seq_length`,
    `--gradient_accumulation_steps` (`check_gradient_accumulation`).

    Their defaults are None (the preset's fine-tuning defaults, `resolve_schedule`)
    unless given (pretraining has its own).

    Examples:
    >>> values = flags.FlagValues()
    >>> define_schedule_flags(values, learning_rate=1e-4, warmup_fraction=0.1,
    ...                       max_seq_length=128)
    >>> _ = values(["pretrain"])
    >>> values.epochs, values.learning_rate, values.warmup_fraction, values.max_seq_length
    (None, 0.0001, 0.1, 128)
    >>> values.clip_norm, values.gradient_accumulation_steps
    (1.0, 1)
    """
    preset_default = "the preset's default when omitted"
    flags.DEFINE_integer("epochs", None, "Training epochs (at most, with early stopping; "
                         "pretraining: passes over the packed corpus, unless --max_steps); "
                         f"{preset_default}.", lower_bound=1, flag_values=flag_values)
    flags.DEFINE_float("learning_rate", learning_rate, "Peak learning rate"
                       + ("." if learning_rate else f"; {preset_default}."),
                       lower_bound=0.0, flag_values=flag_values)
    flags.DEFINE_float("warmup_fraction", warmup_fraction, "Fraction of steps of linear "
                       "warm-up before the schedule's decay"
                       + ("." if warmup_fraction is not None else f"; {preset_default}."),
                       lower_bound=0.0, upper_bound=1.0, flag_values=flag_values)
    flags.DEFINE_float("clip_norm", 1.0, "The global norm the gradients are clipped to before "
                       "each update (BERT's 1.0; 0: no clipping).", lower_bound=0.0,
                       flag_values=flag_values)
    flags.DEFINE_integer("gradient_accumulation_steps", 1, "Apply the mean gradient of this "
                         "many batches once, every this many batches: the updates of a "
                         "--batch_size this many times larger, in less memory; steps (total, "
                         "warm-up, checkpoints, logging) then count updates (1: off).",
                         lower_bound=1, flag_values=flag_values)
    default = ("; the task's default (question answering: 384), else the preset's, at most "
               "the encoder's positions, when omitted.")
    flags.DEFINE_integer("max_seq_length", max_seq_length, "Longest packed sequence, in "
                         "wordpieces" + ("." if max_seq_length else default),
                         lower_bound=8, flag_values=flag_values)


def define_fine_tuning_flags(flag_values=flags.FLAGS, *, labelled_data=True,
                             head_learning_rate=True, early_stopping=True, tune_decoding=True,
                             resumable=True):
    """Every flag the fine-tuning binaries (train, distill, multitask) share.

    The keyword arguments leave out what a binary does not have: the data
    flags (`--train_data`, `--eval_data`, `--data_format`; multitask reads them
    from its --tasks file), `--head_learning_rate`, `--early_stopping_patience`,
    `--tune_decoding`, and `--checkpoint_every_steps` (`resumable`).

    Examples:
    >>> values = flags.FlagValues()
    >>> define_fine_tuning_flags(values, labelled_data=False, early_stopping=False)
    >>> "train_data" in values, "head_learning_rate" in values, "pack_length" in values
    (False, True, True)
    """
    define_run_flags(flag_values)
    define_encoder_flags(flag_values)
    define_vocabulary_flags(flag_values)
    if labelled_data:
        flags.DEFINE_string("train_data", None, "Training data file.", flag_values=flag_values)
        flags.DEFINE_string("eval_data", None, "Validation data file (picks the best model); "
                            "tools/train.py: or --validation_split.", flag_values=flag_values)
        flags.DEFINE_string("data_format", None, "Data format (classification: trec, trec_fine, "
                            "mrpc, csv, tsv, jsonl; tagging: conll; ... see "
                            "docs/own_data.md); inferred from the file when omitted.",
                            flag_values=flag_values)
    define_schedule_flags(flag_values)
    if head_learning_rate:
        flags.DEFINE_float("head_learning_rate", None, "Peak learning rate of what starts from "
                           "scratch (the task head, CRF transitions, span scorer) on a "
                           "pretrained encoder; the preset's default when omitted (without "
                           "--init_checkpoint everything starts from scratch and learns at "
                           "--learning_rate).", lower_bound=0.0, flag_values=flag_values)
    if early_stopping:
        flags.DEFINE_integer("early_stopping_patience", None, "Stop when the validation metric "
                             "that picks the best model has not improved for this many "
                             "epochs; the best epoch's model is the one kept and evaluated.",
                             lower_bound=1, flag_values=flag_values)
    if tune_decoding:
        flags.DEFINE_boolean("tune_decoding", True, "After training, let the task tune its "
                             "decoding on its validation data (span NER: the F1-best "
                             "threshold, as tools/calibrate.py does; multi-label "
                             "classification: each label's F1-best threshold) before the "
                             "final evaluation.", flag_values=flag_values)
    define_hardware_flags(flag_values)
    define_packing_flag(flag_values)
    define_training_loop_flags(flag_values, resumable=resumable)
    define_progress_flag(flag_values)


# --- resolving them ----------------------------------------------------------------------------

def normalize_init_checkpoint(flag_values=flags.FLAGS):
    """`--init_checkpoint` with a tools/pretrain.py run directory standing for its encoder/.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_encoder_flags(values)
    >>> _ = values(["train"])
    >>> normalize_init_checkpoint(values) is None
    True
    """
    from nlpzoo.zoo.runs.directory import encoder_checkpoint

    if flag_values.init_checkpoint:
        flag_values.init_checkpoint = encoder_checkpoint(flag_values.init_checkpoint)
    return flag_values.init_checkpoint


def checkpoint_reference(init_checkpoint):
    """What a run's config.json records of `--init_checkpoint`: a handle as it is
    (`hf://…`), a local path made absolute; None without one.

    >>> checkpoint_reference("hf://google-bert/bert-base-cased"), checkpoint_reference(None)
    ('hf://google-bert/bert-base-cased', None)
    """
    from nlpzoo.zoo.checkpoints.handles import is_handle

    if not init_checkpoint or is_handle(init_checkpoint):
        return init_checkpoint or None
    return os.path.abspath(init_checkpoint)


def load_starting_encoder(flag_values=flags.FLAGS):
    """The `--init_checkpoint` encoder (with `--dropout`), or None without one.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_encoder_flags(values)
    >>> _ = values(["train", "--init_checkpoint=/no/such/checkpoint"])
    >>> try:
    ...     load_starting_encoder(values)
    ... except UserError as error:
    ...     print(str(error).split(":")[0])
    --init_checkpoint=/no/such/checkpoint
    """
    from nlpzoo.zoo.checkpoints import load_encoder

    if not normalize_init_checkpoint(flag_values):
        return None
    options = dropout_overrides(flag_values.dropout)
    try:
        return load_encoder(flag_values.init_checkpoint, **options)
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={flag_values.init_checkpoint}: {error}")


def resolve_preset(preset, encoder, task=None, head_options=None):
    """(encoder preset, task preset or None, head options) from `--preset`.

    A task preset (only with a `task`) gives its encoder and head; an encoder
    preset takes the task's head options from its flags and, when the zoo has
    one, the name of the matching task preset. Without `--preset`, the
    encoder preset of the starting encoder's shape (else the nearest) gives
    the defaults, or bert_tiny without one.

    Examples:
    >>> resolve_preset(None, None)
    ('bert_tiny', None, {})
    >>> from nlpzoo.tasks.registry import get_task
    >>> resolve_preset("bert_tiny_crf_tagger", None, get_task("tagging"))
    ('bert_tiny', 'bert_tiny_crf_tagger', {'head': 'crf'})
    >>> try:
    ...     resolve_preset("bert_tiny_classifier", None)
    ... except UserError as error:
    ...     print(str(error).split(";")[0])
    --preset=bert_tiny_classifier is not an encoder preset
    """
    from nlpzoo.layers import transformer_of
    from nlpzoo.zoo import ENCODER_PRESETS, TASK_PRESETS, get_preset
    from nlpzoo.zoo.checkpoints import matching_encoder_preset

    head_options = dict(head_options or {})
    if preset is None:
        preset = matching_encoder_preset(transformer_of(encoder)) if encoder else "bert_tiny"
    if task is not None and preset in TASK_PRESETS:
        task_preset = TASK_PRESETS[preset]
        if task_preset.task != task.name:
            raise UserError(f"--preset={preset} is a {task_preset.task} preset, "
                            f"not one for --task={task.name}")
        # Its num_classes is for a model built without data: the training labels decide.
        options = {name: value for name, value in task_preset.head_options.items()
                   if name != "num_classes"}
        return task_preset.encoder, preset, {**head_options, **options}
    if preset in ENCODER_PRESETS:
        matching = task.preset_for(preset, head_options) if task is not None else None
        return preset, matching if matching in TASK_PRESETS else None, head_options
    if task is not None:
        try:
            get_preset(preset)
        except ValueError as error:
            raise UserError(f"--preset: {error}")
    raise UserError(f"--preset={preset} is not an encoder preset; one of "
                    f"{', '.join(sorted(ENCODER_PRESETS))}")


@functools.lru_cache(maxsize=None)
def checkpoint_tokenizer(init_checkpoint):
    """The tokenizer (a `SubwordTokenizer`) of an `--init_checkpoint`, in any checkpoint format.

    Examples:
    >>> try:
    ...     checkpoint_tokenizer("/no/such/checkpoint")
    ... except UserError as error:
    ...     print(str(error).split(":")[0])
    --init_checkpoint=/no/such/checkpoint
    """
    from nlpzoo.zoo.checkpoints import load_tokenizer

    try:
        return load_tokenizer(init_checkpoint)
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={init_checkpoint}: {error}")


def resolve_tokenizer(flag_values, texts, resuming, learned_from="the training text"):
    """The run's `SubwordTokenizer`: WordPiece over `--vocab`, else `--init_checkpoint`'s
    (of any kind), else a resumed run's own, else WordPiece over a `--vocab_size`
    vocabulary learned from `texts()` (a function: the text is read only when needed).

    Examples:
    >>> values = flags.FlagValues()
    >>> define_run_flags(values); define_encoder_flags(values); define_vocabulary_flags(values)
    >>> _ = values(["train", "--vocab_size=100"])
    >>> tokenizer = resolve_tokenizer(values, lambda: ["a b c"] * 3, resuming=False)
    >>> "[MASK]" in tokenizer.vocabulary, tokenizer.lowercase
    (True, True)
    """
    from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, build_vocabulary, read_vocabulary
    from nlpzoo.zoo.runs import directory as md

    if flag_values.vocab:
        try:
            return WordPieceTokenizer(read_vocabulary(flag_values.vocab), flag_values.lowercase)
        except ValueError as error:
            raise UserError(f"--vocab: {error}")
    if flag_values.init_checkpoint:
        return checkpoint_tokenizer(flag_values.init_checkpoint)
    # A resumed run keeps the vocabulary it learned (learning it again could differ).
    if resuming and md.has_run_tokenizer(flag_values.model_dir):
        return md.load_run_tokenizer(flag_values.model_dir, flag_values.lowercase)
    logging.info("learning a %d-token WordPiece vocabulary from %s", flag_values.vocab_size,
                 learned_from)
    progress = "progress" in flag_values and flag_values.progress
    try:
        with vocabulary_progress(progress):
            tokens = build_vocabulary(texts(), flag_values.vocab_size, flag_values.lowercase)
    except ValueError as error:  # e.g. below the minimum size for the text's characters
        raise UserError(f"--vocab_size={flag_values.vocab_size}: {error}")
    return WordPieceTokenizer(tokens, flag_values.lowercase)


def check_vocabulary_fits(encoder, tokenizer):
    """Refuses a tokenizer with ids past the starting encoder's token embeddings (a
    larger table is fine: DeBERTa-v3's has 128,100 rows for 128,001 tokens).

    Examples:
    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    >>> check_vocabulary_fits(None, tokenizer)  # a new encoder takes any size
    """
    from nlpzoo.layers import transformer_of

    size = tokenizer.vocabulary_size
    if encoder is not None and transformer_of(encoder).vocabulary_size < size:
        raise UserError(f"the vocabulary has {size} tokens but --init_checkpoint "
                        f"has {transformer_of(encoder).vocabulary_size} token embeddings")


def resolve_max_seq_length(requested, encoder, encoder_preset, default):
    """`--max_seq_length`, else `default`, within the encoder's positions.

    Examples:
    >>> resolve_max_seq_length(None, None, "bert_tiny", default=128)
    128
    >>> resolve_max_seq_length(4096, None, "bert_tiny", default=128)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: --max_seq_length=4096 exceeds the 512 positions of bert_tiny
    """
    from nlpzoo.layers import transformer_of
    from nlpzoo.zoo import ENCODER_PRESETS

    if encoder is not None:
        positions, source = transformer_of(encoder).max_sequence_length, "--init_checkpoint"
    else:
        positions, source = ENCODER_PRESETS[encoder_preset].max_sequence_length, encoder_preset
    if requested is None:
        return min(default, positions)
    if requested > positions:
        raise UserError(f"--max_seq_length={requested} exceeds the {positions} positions "
                        f"of {source}")
    return requested


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Epochs, learning rates and gradient clipping of a fine-tuning run, flags over the
    preset's defaults."""

    epochs: int
    learning_rate: float
    head_learning_rate: float  # None: what starts from scratch learns at learning_rate
    warmup_fraction: float
    clip_norm: float = 1.0  # the global gradient norm clipped to; 0: none
    gradient_accumulation_steps: int = 1  # batches per update; 1: none


def resolve_schedule(flag_values, defaults, pretrained):
    """The `Schedule` from the flags and the preset's `FineTuningDefaults`.

    The head's own rate defaults to the preset's only on a pretrained encoder:
    without one everything starts from scratch and learns at `learning_rate`.

    Examples:
    >>> import types
    >>> defaults = types.SimpleNamespace(epochs=3, learning_rate=5e-5,
    ...                                  head_learning_rate=1e-3, warmup_fraction=0.1)
    >>> values = types.SimpleNamespace(epochs=None, learning_rate=None,
    ...                                head_learning_rate=None, warmup_fraction=0.0)
    >>> resolve_schedule(values, defaults, pretrained=True)
    Schedule(epochs=3, learning_rate=5e-05, head_learning_rate=0.001, warmup_fraction=0.0, clip_norm=1.0, gradient_accumulation_steps=1)
    >>> resolve_schedule(values, defaults, pretrained=False).head_learning_rate is None
    True
    """
    head_learning_rate = getattr(flag_values, "head_learning_rate", None)
    if head_learning_rate is None and pretrained:
        head_learning_rate = defaults.head_learning_rate
    warmup_fraction = flag_values.warmup_fraction
    if warmup_fraction is None:
        warmup_fraction = defaults.warmup_fraction
    return Schedule(epochs=flag_values.epochs or defaults.epochs,
                    learning_rate=flag_values.learning_rate or defaults.learning_rate,
                    head_learning_rate=head_learning_rate, warmup_fraction=warmup_fraction,
                    clip_norm=getattr(flag_values, "clip_norm", 1.0),
                    gradient_accumulation_steps=getattr(flag_values,
                                                        "gradient_accumulation_steps", 1))


def check_gradient_accumulation(flag_values, strategy=None, binary=None):
    """Refuses `--gradient_accumulation_steps` > 1 where it is not supported, in one line:
    in `binary` (a training binary that does not support it), or with several replicas.

    Under several replicas Keras's accumulators are mirrored variables that each
    replica adds its own gradients to, and the saved state holds one replica's:
    not tested, so refused.

    Examples:
    >>> import types
    >>> check_gradient_accumulation(types.SimpleNamespace(gradient_accumulation_steps=1),
    ...                             binary="tools/pretrain.py")
    >>> check_gradient_accumulation(types.SimpleNamespace(gradient_accumulation_steps=4),
    ...                             binary="tools/pretrain.py")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: --gradient_accumulation_steps=4: tools/pretrain.py does not accumulate gradients (tools/train.py does); use a smaller --batch_size or 1
    """
    steps = getattr(flag_values, "gradient_accumulation_steps", 1) or 1
    if steps == 1:
        return
    if binary is not None:
        raise UserError(f"--gradient_accumulation_steps={steps}: {binary} does not accumulate "
                        "gradients (tools/train.py does); use a smaller --batch_size or 1")
    replicas = strategy.num_replicas_in_sync if strategy is not None else 1
    if replicas > 1:
        raise UserError(f"--gradient_accumulation_steps={steps} is not supported with "
                        f"{replicas} replicas (--distribution_strategy): use one device, or a "
                        "larger global --batch_size instead")


def updates_per_epoch(batches, accumulation_steps):
    """The optimizer steps (updates) of an epoch of `batches` batches: whole updates only.

    A last update short of `accumulation_steps` batches would carry into the
    next epoch: the batches past the last whole update start the next epoch
    instead (the training stream is endless, nothing is dropped).

    Examples:
    >>> updates_per_epoch(10, 1), updates_per_epoch(10, 4)
    (10, 2)
    >>> updates_per_epoch(3, 4)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.UserError: --gradient_accumulation_steps=4 exceeds the 3 batches of an epoch
    """
    if batches < accumulation_steps:
        raise UserError(f"--gradient_accumulation_steps={accumulation_steps} exceeds the "
                        f"{batches} batches of an epoch")
    return batches // accumulation_steps



def fine_tuning_settings(encoder, encoder_preset, flag_values=flags.FLAGS, task=None):
    """(max_seq_length, `Schedule`) of a fine-tuning run: its flags over the preset's defaults
    (over `task.default_max_seq_length` first, for a task that has its own, as question
    answering's 384).

    Examples:
    >>> import types
    >>> values = types.SimpleNamespace(max_seq_length=None, epochs=None, learning_rate=None,
    ...                                head_learning_rate=None, warmup_fraction=None)
    >>> length, schedule = fine_tuning_settings(None, "bert_tiny", values)
    >>> length, schedule.learning_rate, schedule.head_learning_rate  # bert_tiny's, from scratch
    (256, 0.0003, None)
    """
    from nlpzoo.zoo import ENCODER_PRESETS

    defaults = ENCODER_PRESETS[encoder_preset].fine_tuning
    default_length = getattr(task, "default_max_seq_length", None) or defaults.max_seq_length
    max_seq_length = resolve_max_seq_length(flag_values.max_seq_length, encoder,
                                            encoder_preset, default_length)
    return max_seq_length, resolve_schedule(flag_values, defaults, pretrained=encoder is not None)

@dataclasses.dataclass(frozen=True)
class Hardware:
    """The dtype policy, XLA and packing a run trains with."""

    policy: str
    jit_compile: bool
    pack_length: int  # None for a binary without --pack_length


def apply_hardware_flags(flag_values=flags.FLAGS, strategy=None):
    """Resolves `--mixed_precision`, `--jit_compile` and `--pack_length`, sets Keras's dtype
    policy and `--seed`; the `Hardware`.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_run_flags(values); define_hardware_flags(values); define_packing_flag(values)
    >>> _ = values(["train", "--mixed_precision=float32", "--jit_compile=false"])
    >>> apply_hardware_flags(values)
    Hardware(policy='float32', jit_compile=False, pack_length=1)
    """
    import keras

    from nlpzoo.tasks.training import distribution
    from nlpzoo.zoo.hardware import resolve_jit_compile, resolve_mixed_precision

    policy = resolve_mixed_precision(flag_values.mixed_precision)
    jit_compile = resolve_jit_compile(flag_values.jit_compile)
    if strategy is not None:
        distribution.check_jit_compile(strategy, jit_compile)
    pack_length = None
    if "pack_length" in flag_values:
        try:
            pack_length = resolve_pack_length(flag_values.pack_length, jit_compile)
        except ValueError as error:
            raise UserError(str(error))
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(flag_values.seed)
    return Hardware(policy, jit_compile, pack_length)


def model_overrides(vocabulary_size, schedule, total_steps, hardware, dropout=None, /, **more):
    """The `zoo.build_task_model` overrides that the run's settings give.

    Examples:
    >>> schedule = Schedule(1, 1e-3, None, 0.1)
    >>> sorted(model_overrides(100, schedule, 50, Hardware("float32", False, 1)))
    ['clip_norm', 'gradient_accumulation_steps', 'jit_compile', 'learning_rate', 'pack_length', 'total_steps', 'vocabulary_size', 'warmup_steps']
    """
    overrides = dict(more, vocabulary_size=vocabulary_size, learning_rate=schedule.learning_rate,
                     clip_norm=schedule.clip_norm, total_steps=total_steps,
                     gradient_accumulation_steps=schedule.gradient_accumulation_steps,
                     warmup_steps=int(schedule.warmup_fraction * total_steps),
                     jit_compile=hardware.jit_compile, pack_length=hardware.pack_length)
    if schedule.head_learning_rate is not None:
        overrides["head_learning_rate"] = schedule.head_learning_rate
    overrides.update(dropout_overrides(dropout))
    return overrides


def dropout_overrides(dropout):
    """The encoder overrides of `--dropout`: every dropout rate of the model, after each
    sublayer and on the attention probabilities (a preset's `attention_dropout` is its own
    field, and `--dropout=0` must leave nothing random in a training step); none when
    the flag is omitted.

    Examples:
    >>> dropout_overrides(0.0), dropout_overrides(None)
    ({'dropout': 0.0, 'attention_dropout': 0.0}, {})
    """
    return {} if dropout is None else {"dropout": dropout, "attention_dropout": dropout}
