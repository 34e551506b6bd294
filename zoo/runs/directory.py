"""The layout of a model directory, and how it is created, resumed and read.

    model_dir/
      config.json          resolved configuration, written before training
      vocab.txt            the WordPiece vocabulary
      labels.json          label names in label-id order
      best_model.keras     the best model by the validation metric; it also carries
                           its vocabulary, labels and task options, so it can be
                           used on its own (`--model=best_model.keras`)
      best_model.keras.json  which metric, value and epoch
      metrics.json         final evaluation of the best model
      README.md            the model card (zoo/runs/model_card.py): task, labels, base
                           checkpoint, data files with line counts and SHA-256,
                           hyperparameters, validation (and, once tools/evaluate.py
                           --update_card ran, test) metrics with dates, the command
                           that reproduces the run, versions and limits
      ewc_fisher.npz       with --ewc only: the normalised diagonal Fisher EWC weighs its
                           penalty with (tasks/training/ewc.py), one array per encoder
                           weight path, estimated before training; a resumed run reads it
      logs/train, logs/validation   TensorBoard event files
      checkpoints/         training state for resuming (tasks/training/training_state.py:
                           training_state.json + state-<step>.weights.h5; pretrain:
                           Keras's BackupAndRestore files); removed when training ends
      encoder/             tools/pretrain.py only: the pretrained encoder checkpoint

Every file is written atomically (`tasks.io.atomic_files`): a save that fails
(disk full, permission denied) raises `FailedWrite`, removes its own partial
files and leaves the previous best model, its record and the checkpoints
byte for byte as they were.
"""

import collections
import os
import shutil
import sys
import zipfile

import keras

import nlpzoo.zoo  # noqa: F401  (registers our layers, metrics and schedules for loading)
from nlpzoo.layers import transformer_of
from nlpzoo.tasks.io.atomic_files import save_model_atomically, write_json_atomically
from nlpzoo.tasks.io.errors import RunDirectoryError
from nlpzoo.tasks.io.json_text import InvalidJson, parse_json
from nlpzoo.tasks.io.ownership import LOCK, NotOurDirectory, check_output, claim
from nlpzoo.tasks.io.run_lock import DirectoryInUse, hold_run_lock
from nlpzoo.tasks.registry import task_from_metadata
from nlpzoo.tasks.text.subword_tokenizer import tokenizer_config, tokenizer_from_assets
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, read_vocabulary, write_vocabulary
from nlpzoo.tasks.io.errors import UserError
from nlpzoo.zoo import ENCODER_PRESETS
from nlpzoo.zoo.checkpoints import (
    load_encoder,
    matching_encoder_preset,
    read_sentence_transformers_max_seq_length,
    load_tokenizer,
)

CONFIG = "config.json"
VOCAB = "vocab.txt"
LABELS = "labels.json"
BEST_MODEL = "best_model.keras"
METRICS = "metrics.json"
LOGS = "logs"
CHECKPOINTS = "checkpoints"
ENCODER = "encoder"  # tools/pretrain.py's encoder checkpoint
CARD = "README.md"  # the model card, zoo/runs/model_card.py
EWC_FISHER = "ewc_fisher.npz"  # zoo/runs/ewc_anchor.py
TOKENIZER = "tokenizer"  # a tokenizer that is not WordPiece (save_run_tokenizer)
TOKENIZER_CONFIG = "tokenizer_config.json"
_ARTEFACTS = (CONFIG, VOCAB, LABELS, BEST_MODEL, BEST_MODEL + ".json", METRICS, LOGS, CHECKPOINTS,
              ENCODER, CARD, EWC_FISHER, TOKENIZER)


def path(model_dir, name):
    return os.path.join(model_dir, name)


write_json = write_json_atomically


def read_json(file_path, expected=None):
    """The JSON content of a run directory's file (of the `expected` type, when given); a
    file that is not valid JSON, or holds another type, is a `RunDirectoryError` naming it."""
    with open(file_path, "rb") as f:  # a missing file: FileNotFoundError, as callers expect
        raw = f.read()
    try:
        content = parse_json(raw, file_path)
    except InvalidJson as error:
        raise RunDirectoryError(file_path, f"{error.problem}; was it written by nlpzoo?") from None
    if expected is not None and not isinstance(content, expected):
        raise RunDirectoryError(file_path, f"expected a JSON "
                                f"{'object' if expected is dict else 'list'}, found a "
                                f"{type(content).__name__}")
    return content


def _written_by_earlier_version(model_dir):
    """A run directory of a version that wrote no ownership marker: nothing but our
    artefacts, and a config.json that is ours (a JSON object with our keys)."""
    if not set(os.listdir(model_dir)) <= set(_ARTEFACTS) | {LOCK}:
        return False
    try:
        config = read_json(path(model_dir, CONFIG), dict)
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "vocabulary_size" in config and "preset" in config


def inspect(model_dir, overwrite=False):
    """What training into `model_dir` will do, without touching it: "new", "resume" or
    "overwrite"; refusals are `UserError`s.

    Only a directory that is new, empty or ours (`tasks.io.ownership`: our
    marker, or a run of an earlier version) is written into. A run counts as
    finished only once it has written its final `metrics.json`: a directory
    of ours with a `config.json` and no `metrics.json` is an interrupted run
    (killed in its first epoch, later, or during the final evaluation), which
    the same command resumes. A finished one is left alone unless
    `overwrite`, which replaces it only when it holds nothing but our files.
    The working directory, its parents, the home directory and `/` are
    always refused.
    """
    try:
        state = check_output(model_dir, "--model_dir", overwrite=overwrite,
                             own_names=_ARTEFACTS, adopt=_written_by_earlier_version)
    except NotOurDirectory as error:
        raise UserError(str(error))
    if state == "new":
        return "new"
    entries = set(os.listdir(model_dir))
    if CONFIG not in entries:
        return "new"  # ours, killed before it wrote its configuration
    if overwrite:
        return "overwrite"
    if METRICS not in entries:
        return "resume"
    raise UserError(
        f"--model_dir={model_dir} already holds a trained model; pass --overwrite "
        "to replace it or choose another directory"
    )


def prepare(model_dir, overwrite=False, tool=None):
    """Creates `model_dir` for training (see `inspect`); returns True when resuming a run.

    The directory is marked as ours first, then locked for the rest of the
    process (`tasks.io.run_lock`: a second run on it is refused at once),
    and only then, with `overwrite`, are the files of the previous run removed.
    """
    state = inspect(model_dir, overwrite)
    try:
        claim(model_dir, tool or os.path.basename(sys.argv[0]))
        hold_run_lock(model_dir, "--model_dir")
    except DirectoryInUse as error:
        raise UserError(str(error))
    except OSError as error:
        raise UserError(f"--model_dir={model_dir}: cannot create it "
                        f"({error.strerror or error})")
    if state == "overwrite":
        for name in _ARTEFACTS:
            target = path(model_dir, name)
            if os.path.isdir(target):
                shutil.rmtree(target)
            elif os.path.exists(target):
                os.remove(target)
    return state == "resume"


def check_resumable(model_dir, config, keys, defaults=None):
    """Refuses to resume when the settings that shape the model changed. `defaults`: the
    value a key had in runs written before it was recorded (their config.json lacks it)."""
    saved = read_json(path(model_dir, CONFIG), dict)
    defaults = defaults or {}
    changed = [k for k in keys if saved.get(k, defaults.get(k)) != config.get(k)]
    if changed:
        details = ", ".join(f"{k}: {saved.get(k, defaults.get(k))!r} → {config.get(k)!r}"
                            for k in changed)
        raise UserError(
            f"--model_dir={model_dir} holds an interrupted run with other settings "
            f"({details}); pass --overwrite to start again"
        )


def save_vocabulary(model_dir, tokens):
    write_vocabulary(tokens, path(model_dir, VOCAB))


def save_run_tokenizer(model_dir, tokenizer):
    """Writes a run's tokenizer: WordPiece as `vocab.txt` (casing in config.json), any
    other kind as its config and assets in `tokenizer/` (`load_run_tokenizer` reads both)."""
    if isinstance(tokenizer, WordPieceTokenizer):
        save_vocabulary(model_dir, tokenizer.vocabulary)
        return
    directory = path(model_dir, TOKENIZER)
    os.makedirs(directory, exist_ok=True)
    tokenizer.save_assets(directory)
    write_json(tokenizer_config(tokenizer), os.path.join(directory, TOKENIZER_CONFIG))


def has_run_tokenizer(model_dir):
    """Whether `save_run_tokenizer` wrote into `model_dir`."""
    return (os.path.exists(path(model_dir, VOCAB))
            or os.path.exists(os.path.join(path(model_dir, TOKENIZER), TOKENIZER_CONFIG)))


def load_run_tokenizer(model_dir, lowercase=True):
    """The tokenizer `save_run_tokenizer` wrote (`lowercase`: a WordPiece run's casing)."""
    directory = path(model_dir, TOKENIZER)
    if os.path.exists(os.path.join(directory, TOKENIZER_CONFIG)):
        return tokenizer_from_assets(read_json(os.path.join(directory, TOKENIZER_CONFIG)),
                                     directory)
    return WordPieceTokenizer(load_vocabulary(model_dir), lowercase=lowercase)


def encoder_checkpoint(path):
    """`path`, or its `encoder/` when it is a tools/pretrain.py model directory."""
    if os.path.isdir(path) and os.path.isdir(os.path.join(path, ENCODER)):
        return os.path.join(path, ENCODER)
    return path


def encoder_and_preset(init_checkpoint=None, preset=None, dropout=None):
    """(the --init_checkpoint encoder or None, encoder preset name) for a training binary.

    `init_checkpoint` is any checkpoint `load_encoder` reads (a run
    directory with an `encoder/` stands for it); the preset defaults to the
    one of the checkpoint's shape (else the nearest), or bert_tiny without a
    checkpoint, and must be an encoder preset. Errors are `UserError`s that
    name the flag.
    """
    encoder = None
    if init_checkpoint:
        init_checkpoint = encoder_checkpoint(init_checkpoint)
        options = {"dropout": dropout} if dropout is not None else {}
        try:
            encoder = load_encoder(init_checkpoint, **options)
        except (ValueError, OSError) as error:
            raise UserError(f"--init_checkpoint={init_checkpoint}: {error}")
    if preset is None:
        preset = matching_encoder_preset(transformer_of(encoder)) if encoder else "bert_tiny"
    if preset not in ENCODER_PRESETS:
        raise UserError(f"--preset={preset} is not an encoder preset; one of "
                        f"{', '.join(sorted(ENCODER_PRESETS))}")
    return encoder, preset


def load_vocabulary(model_dir):
    return read_vocabulary(path(model_dir, VOCAB))


TrainedModel = collections.namedtuple(
    "TrainedModel", ["model", "task", "preprocessor", "labels", "config"])


def load_trained(model_dir=None, model_path=None):
    """A trained run, loaded: a `TrainedModel` (model, task, preprocessor, labels, config).

    Give either `model_dir` (a directory written by tools/train.py; its
    best_model.keras is used) or `model_path` (a `.keras` file on its own).

    A model saved with its inference metadata (tools/train.py attaches it, see
    `EncoderTaskModel.attach_metadata`) carries its preprocessor (vocabulary,
    lower-casing, max_seq_length), labels and task options; those are what is
    used, whatever lies beside it, and `config` is the directory's config.json
    (if any) updated with them. Models saved before that need the directory's
    config.json, vocab.txt and labels.json. The task is the registered one
    named in the metadata, with its options (`task_from_metadata`). Either
    way the model comes back carrying its task, labels and preprocessor, so
    that `model.predict(["raw text", ...])` works (`EncoderTaskModel`).

    Returns:
        A `TrainedModel`: `model` (the Keras model), `task` (its `Task`),
        `preprocessor` (turns text into the model's inputs), `labels` (label
        names in label-id order) and `config` (the run's settings, a dict).

    Raises:
        RunDirectoryError: the run is missing, unfinished or unreadable (a
            `ValueError`; its `path` is the run, its `problem` what is wrong).
        ValueError: neither or both of `model_dir` and `model_path` given.

    Examples:
    >>> load_trained("no/such/run")
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.RunDirectoryError: no/such/run: no such directory
    """
    if (model_dir is None) == (model_path is None):
        raise ValueError("give exactly one of model_dir and model_path")
    run = model_dir if model_dir is not None else model_path
    if model_path is not None:
        if not os.path.isfile(model_path):
            raise RunDirectoryError(model_path, "no such file")
    else:
        if not os.path.isdir(model_dir):
            raise RunDirectoryError(model_dir, "no such directory")
        model_path = path(model_dir, BEST_MODEL)
        if not os.path.exists(model_path):
            raise RunDirectoryError(model_dir, f"not a trained run: no {BEST_MODEL} "
                                    "(was training finished?)")
    try:
        model = keras.saving.load_model(model_path)
    except (ValueError, TypeError, KeyError, OSError, zipfile.BadZipFile) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise RunDirectoryError(run, f"cannot load {model_path}: {first_line}")
    metadata = getattr(model, "task_metadata", None)
    if getattr(model, "preprocessor", None) is None:
        metadata = None  # a model that knows its task but no vocabulary: the run's files say
    if metadata is not None:
        config = {}
        if model_dir is not None and os.path.exists(path(model_dir, CONFIG)):
            config = read_json(path(model_dir, CONFIG), dict)
        preprocessor = model.preprocessor
        config.update(metadata)
        config.update(lowercase=preprocessor.lowercase,
                      max_seq_length=preprocessor.max_seq_length)
        labels = list(metadata["labels"])
    else:
        if model_dir is None:
            raise RunDirectoryError(run, "holds no vocabulary and labels (it was saved before "
                                    "models kept them); load the directory it was trained "
                                    "in instead")
        for name in (CONFIG, VOCAB, LABELS):
            if not os.path.exists(path(model_dir, name)):
                raise RunDirectoryError(model_dir, f"not a trained run: no {name} "
                                        "(was training finished?)")
        config = read_json(path(model_dir, CONFIG), dict)
        preprocessor = None
        labels = read_json(path(model_dir, LABELS), expected=list)
    try:
        task = task_from_metadata(config)
    except ValueError as error:
        raise RunDirectoryError(run, str(error))
    if preprocessor is None:
        preprocessor = task.make_preprocessor(load_vocabulary(model_dir), config["lowercase"],
                                              config["max_seq_length"])
        if hasattr(model, "attach_metadata"):
            # Saved before models kept it: now `fit`, `evaluate` and `predict` take raw text.
            model.attach_metadata(task=task.name, labels=labels,
                                  preprocessor=task.preprocessor_of(preprocessor),
                                  task_options=task.options_dict())
    if hasattr(model, "attach_metadata"):
        model._task = task
    return TrainedModel(model, task, task.preprocessor_of(preprocessor), labels, config)


def model_list(value):
    """The models a `--model_dir` or `--model` value names: comma-separated, or one path
    that exists as written (commas and all).

    >>> model_list("runs/seed42,runs/seed43"), model_list("runs/one")
    (['runs/seed42', 'runs/seed43'], ['runs/one'])
    """
    if os.path.exists(value):
        return [value]
    return [part for part in value.split(",") if part]


def load_models(model_dir=None, model_path=None):
    """`load_trained` for the `--model_dir` or `--model` value of one model; for
    several, comma-separated, their ensemble (`load_ensemble`)."""
    if (model_dir is None) == (model_path is None):
        raise ValueError("give exactly one of model_dir and model_path")
    value = model_dir if model_dir is not None else model_path
    paths = model_list(value)
    if len(paths) == 1:  # exactly as before ensembles existed
        return load_trained(model_dir, model_path)
    return load_ensemble(paths)


def load_ensemble(paths):
    """A `TrainedModel` whose model stands for the average of several (`Task.ensemble`).

    Each path is a model directory or a `.keras` file (any file).

    The models must be of one task with the same labels, vocabulary,
    lower-casing, `max_seq_length` and task options (decoding choices such as
    span NER's threshold excepted: `Task.ensemble_free_options`); the first
    model's task options, preprocessor and config are used. One model gives
    `load_trained`'s result unchanged.

    Raises:
        UserError: one line naming the model that does not fit and why.
    """
    sources = [(f"--model={p}", {"model_path": p}) if os.path.isfile(p)
               else (f"--model_dir={p}", {"model_dir": p}) for p in paths]
    if not sources:
        raise ValueError("no model given")
    members = [load_trained(**arguments) for _, arguments in sources]
    first = members[0]
    if len(members) == 1:
        return first
    for (where, _), member in zip(sources[1:], members[1:]):
        reason = _ensemble_conflict(first, member)
        if reason:
            raise UserError(f"{where} cannot join an ensemble with {sources[0][0]}: {reason}")
    try:
        model = first.task.ensemble([member.model for member in members])
    except ValueError as error:
        raise UserError(f"{sources[0][0]}: {error}")
    return first._replace(model=model)


def _ensemble_conflict(first, other):
    """Why `other` (a `TrainedModel`) cannot be averaged with `first`; None if it can."""
    reason = first.task.ensemble_conflict(other.task)
    if reason:
        return reason
    if list(first.labels) != list(other.labels):
        return f"labels {', '.join(first.labels)} here, {', '.join(other.labels)} there"
    mine, theirs = first.preprocessor, other.preprocessor
    if list(mine.vocabulary) != list(theirs.vocabulary):
        return (f"another vocabulary ({len(mine.vocabulary):,} tokens here, "
                f"{len(theirs.vocabulary):,} there)")
    for setting in ("lowercase", "max_seq_length"):
        if getattr(mine, setting) != getattr(theirs, setting):
            return f"{setting} {getattr(mine, setting)} here, {getattr(theirs, setting)} there"
    return None


def update_task_options(changes, tuned_on, model, model_dir=None, model_path=None):
    """Writes task option `changes` (e.g. a decoding threshold) into a trained model.

    The model's own copy of the task options (what loading prefers) is
    changed and the model saved again atomically, to `model_path` or the
    directory's best model; the directory's config.json follows. `tuned_on`
    (the data the options were picked on) is recorded as `calibrated_on`.
    """
    if getattr(model, "task_metadata", None) is not None:
        model.task_metadata["task_options"].update(changes)
        model.task_metadata["calibrated_on"] = os.path.abspath(tuned_on)
        save_model_atomically(model, model_path or path(model_dir, BEST_MODEL))
    if model_dir:
        config = read_json(path(model_dir, CONFIG), dict)
        config["task_options"].update(changes)
        config["calibrated_on"] = os.path.abspath(tuned_on)
        write_json(config, path(model_dir, CONFIG))


EncoderSource = collections.namedtuple(
    "EncoderSource", ["encoder", "tokenizer", "lowercase", "max_seq_length", "what",
                      "checkpoint"], defaults=[None])


def is_pretraining_run(path):
    """Whether `path` is a tools/pretrain.py model directory (an `encoder/`, no best model)."""
    return (os.path.isdir(os.path.join(path, ENCODER))
            and not os.path.exists(os.path.join(path, BEST_MODEL)))


def load_encoder_source(init_checkpoint=None, model_dir=None, model_path=None,
                        max_seq_length=None):
    """An encoder with its tokenizer settings, from a checkpoint or a trained model.

    Give exactly one of:
        init_checkpoint: a checkpoint directory in any format `zoo.load_encoder`
            reads (a tools/pretrain.py run directory stands for its `encoder/`);
        model_dir: a tools/train.py model directory (the encoder of its
            best model), or a tools/pretrain.py one (its `encoder/` checkpoint);
        model_path: a `.keras` file written by tools/train.py (a model
            directory is taken as `model_dir`).

    `max_seq_length`: the longest packed sequence; by default a trained
    model's own, or a checkpoint's sentence-transformers `max_seq_length`,
    else its number of positions. Larger than the encoder's positions is an
    error.

    Returns:
        An `EncoderSource`: `encoder`, `tokenizer` (a `SubwordTokenizer`),
        `lowercase`, `max_seq_length`, `what` (for messages) and
        `checkpoint`: the checkpoint directory the encoder was read from
        (None for a trained model's).

    Raises:
        UserError: naming the flag (`--init_checkpoint=...`, `--model=...`).
    """
    if sum(source is not None for source in (init_checkpoint, model_dir, model_path)) != 1:
        raise ValueError("give exactly one of init_checkpoint, model_dir and model_path")
    checkpoint = None
    if model_dir is not None and is_pretraining_run(model_dir):
        init_checkpoint, where = model_dir, f"--model_dir={model_dir}"
    elif init_checkpoint is not None:
        where = f"--init_checkpoint={init_checkpoint}"
    if init_checkpoint is not None:
        path = checkpoint = encoder_checkpoint(init_checkpoint)
        try:
            encoder = load_encoder(path)
            tokenizer = load_tokenizer(path)
            default_length = read_sentence_transformers_max_seq_length(path)
        except (ValueError, OSError) as error:
            raise UserError(f"{where}: {error}")
        what = path
    else:
        where = f"--model_dir={model_dir}" if model_dir is not None else f"--model={model_path}"
        path = model_dir if model_dir is not None else model_path
        trained = load_trained(model_dir=path) if os.path.isdir(path) else load_trained(
            model_path=path)
        try:
            encoder = trained.model.get_layer("encoder")
        except ValueError:
            raise UserError(f"{where}: the model has no layer named 'encoder'")
        tokenizer = trained.preprocessor.tokenizer()
        default_length = trained.preprocessor.max_seq_length
        what = f"the encoder of {path}"
    transformer = transformer_of(encoder)
    if tokenizer.vocabulary_size > transformer.vocabulary_size:  # ids past the embedding table
        raise UserError(f"{where}: the vocabulary has {tokenizer.vocabulary_size} tokens but "
                        f"the encoder only {transformer.vocabulary_size} token embeddings")
    positions = transformer.max_sequence_length
    max_seq_length = max_seq_length or default_length or positions
    if max_seq_length > positions:
        raise UserError(f"--max_seq_length={max_seq_length} exceeds the {positions} positions "
                        f"of {where}")
    return EncoderSource(encoder, tokenizer, tokenizer.lowercase, int(max_seq_length), what,
                         checkpoint)


def build_untrained_model(task, init_checkpoint=None, model_dir=None, model_path=None,
                          max_seq_length=None, **head_options):
    """A `TrainedModel` of a task that needs no training, built on an encoder as it is.

    The encoder (with its vocabulary and lower-casing) comes from
    `load_encoder_source`; the model from `task.build_model(encoder,
    **head_options)`. A task with `pretrained_heads` (fill_mask) takes them
    from the checkpoint and refuses one without them, or a trained model's
    encoder. The model carries its preprocessor and task, so it predicts on
    raw text like a trained one.

    Args:
        task: a `Task` whose `trainable` is False.
        init_checkpoint, model_dir, model_path, max_seq_length: as for
            `load_encoder_source` (a tools/pretrain.py run directory may be
            given as `init_checkpoint` or `model_dir`).
        **head_options: the task's head options (`pooling`, ...).

    Raises:
        UserError: one line naming the flag (`--init_checkpoint=...`).
    """
    from nlpzoo.zoo.checkpoints import load_pretraining_heads

    source = load_encoder_source(init_checkpoint, model_dir, model_path, max_seq_length)
    try:
        model = task.build_model(source.encoder, **head_options)
        if task.pretrained_heads:
            if source.checkpoint is None:
                raise ValueError(f"{source.what}: a {task.name} model takes its heads from a "
                                 "pretrained checkpoint (--init_checkpoint, or a "
                                 "tools/pretrain.py --model_dir), not from a fine-tuned model")
            load_pretraining_heads(model, source.checkpoint, required=task.pretrained_heads)
    except ValueError as error:
        raise UserError(str(error))
    preprocessor = task.make_preprocessor(source.tokenizer, source.lowercase,
                                          source.max_seq_length)
    labels = task.label_names([])
    if hasattr(model, "attach_metadata"):
        model.attach_metadata(task=task.name, labels=labels, preprocessor=preprocessor,
                              task_options=task.options_dict())
        model._task = task
    config = {"task": task.name, "task_options": task.options_dict(),
              "lowercase": source.lowercase, "max_seq_length": source.max_seq_length,
              "init_checkpoint": source.checkpoint and os.path.abspath(source.checkpoint),
              "encoder_source": source.what}
    return TrainedModel(model, task, preprocessor, labels, config)
