"""Multi-task fine-tuning: several tasks trained at once on one shared encoder.

    python tools/multitask.py --tasks=tasks.txt --init_checkpoint=<checkpoint dir> \
        --model_dir=runs/multi [--sampling=temperature --temperature=2] \
        [--target=trec --target_epochs=1]

`--tasks` lists one entry per line: a name, then that task's `tools/train.py`
flags (shell-quoted; `#` starts a comment):

    trec   --task=classification --train_data=trec.label --eval_data=dev.label
    conll  --task=tagging --head=crf --train_data=eng.train --eval_data=eng.testa --weight=2

Every entry gets its own head on the one encoder (of `--init_checkpoint`, or a
new one of `--preset`), with one vocabulary and one optimizer for all. An
epoch is as many batches as all the entries' training data holds; each batch
comes from one entry, drawn with probability ∝ weight · batches^(1/T)
(`tasks.training.task_sampling`; `--sampling=proportional` is T = 1). With `--target`,
the last `--target_epochs` epochs train that entry alone (its own number of
batches per epoch). After every epoch each entry is evaluated on its
validation data and its best model kept.

Writes into --model_dir: `<name>/` per entry, a tools/train.py model
directory of that task (config.json, vocab.txt, labels.json,
best_model.keras with its metadata, metrics.json, README.md), so that
tools/evaluate.py, predict.py and export.py take it as they are; `encoder/`,
the shared encoder after the last epoch, which `tools/train.py
--init_checkpoint=<model_dir>` fine-tunes further; `config.json` and
`metrics.json` (every entry's final validation metrics); TensorBoard logs,
`logs/<name>/train` (epoch_loss and the task's training metrics, and how many
batches came from the entry, and every `--log_every_steps` steps `loss/step`,
the mean loss of its batches since the last write), `logs/<name>/validation`
(its validation metrics) and `logs/train` (`learning_rate/step`).

A multi-task run does not resume (it saves no training state): `Ctrl-C`
stops after the current step with exit status 130, a failed save stops with
one line; each entry's best model so far stays, and the same command with
`--overwrite` starts again.
"""

import dataclasses
import json
import os
import re
import shlex
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.layers import transformer_of  # noqa: E402
from nlpzoo.tasks.io.atomic_files import FailedWrite  # noqa: E402
from nlpzoo.tasks.training.callbacks import BestModelCheckpoint  # noqa: E402
from nlpzoo.tasks.io.errors import DataFormatError  # noqa: E402
from nlpzoo.tasks.text.line_reader import read_lines  # noqa: E402
from nlpzoo.tasks.registry import get_task_class, task_names  # noqa: E402
from nlpzoo.tasks.training.shared_encoder_training import StepLog, shared_optimizer, train_step  # noqa: E402
from nlpzoo.tasks.training.task_sampling import draw_tasks, sampling_probabilities  # noqa: E402
from nlpzoo.tasks.text.tokenizer import build_vocabulary, read_vocabulary  # noqa: E402
from nlpzoo.tasks.training.training_state import stop_on_interrupt  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tasks.io.console import fit_verbosity  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_hardware_flags,
    define_packing_flag,
    define_task_module_flag,
    define_training_loop_flags,
    resolve_pack_length,
)
from nlpzoo.zoo.runs.model_card import training_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import training_stream  # noqa: E402
from nlpzoo.zoo import ENCODER_PRESETS, build_task_model  # noqa: E402
from nlpzoo.zoo.checkpoints import read_tokenizer_settings  # noqa: E402
from nlpzoo.zoo.checkpoints.native import save_encoder_checkpoint  # noqa: E402
from nlpzoo.zoo.hardware import resolve_jit_compile, resolve_mixed_precision  # noqa: E402

FLAGS = flags.FLAGS
define_task_module_flag()
flags.DEFINE_string("tasks", None, "The entries: one per line, a name then that task's "
                    "tools/train.py flags (--task, --train_data, --eval_data, --data_format, "
                    "the task's own options, --weight).")
flags.DEFINE_string("model_dir", None, "Output directory.")
flags.DEFINE_boolean("overwrite", False, "Replace what --model_dir holds.")
flags.DEFINE_string("preset", None, "Encoder preset: the shape of a new encoder and the "
                    "training defaults; by default --init_checkpoint's (else bert_tiny).")
flags.DEFINE_string("init_checkpoint", None, "A checkpoint directory whose encoder all "
                    "entries share (any format tools/train.py reads).")
flags.DEFINE_string("vocab", None, "vocab.txt; by default --init_checkpoint's, or one learned "
                    "from every entry's training text.")
flags.DEFINE_integer("vocab_size", 8000, "Size of a learned vocabulary.", lower_bound=100)
flags.DEFINE_boolean("lowercase", True, "Lower-case and strip accents before WordPiece.")
flags.DEFINE_integer("epochs", None, "Epochs in all (the target's included); the preset's "
                     "default when omitted.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Examples per batch.", lower_bound=1)
flags.DEFINE_float("learning_rate", None, "Peak learning rate; the preset's default when "
                   "omitted.", lower_bound=0.0)
flags.DEFINE_float("head_learning_rate", None, "Peak learning rate of the heads on a "
                   "pretrained encoder; the preset's default when omitted.", lower_bound=0.0)
flags.DEFINE_float("warmup_fraction", None, "Fraction of steps of linear warm-up; the "
                   "preset's default when omitted.", lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float("dropout", None, "Dropout rate; the preset's default when omitted.",
                   lower_bound=0.0, upper_bound=0.99)
flags.DEFINE_integer("max_seq_length", None, "Longest packed sequence; the preset's default "
                     "(at most the encoder's positions) when omitted.", lower_bound=8)
flags.DEFINE_enum("sampling", "proportional", ["proportional", "temperature"], "How an "
                  "entry is drawn for each batch: in proportion to weight x batches, or to "
                  "weight x batches^(1/--temperature).")
flags.DEFINE_float("temperature", 2.0, "T of --sampling=temperature.", lower_bound=1e-3)
flags.DEFINE_string("target", None, "An entry name: the last --target_epochs epochs train it "
                    "alone.")
flags.DEFINE_integer("target_epochs", 1, "Epochs of --target alone, at the end.",
                     lower_bound=1)
flags.DEFINE_integer("seed", 42, "Random seed.")
flags.DEFINE_boolean("tune_decoding", True, "After training, let each entry's task tune its "
                     "decoding on its --eval_data (span NER: the F1-best threshold), as "
                     "tools/train.py does, before the final evaluation.")
define_training_loop_flags(resumable=False)
define_hardware_flags()
define_packing_flag()
flags.mark_flags_as_required(["tasks", "model_dir"])


_ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_RESERVED_NAMES = (md.ENCODER, md.LOGS, md.CHECKPOINTS)


@dataclasses.dataclass
class Entry:
    """One line of --tasks: its task, data and weight, then what training builds."""

    name: str
    task: object
    head_options: dict
    train_data: str
    eval_data: str
    data_format: str
    weight: float
    where: str  # "file:line", for errors


def _entry_flags():
    values = flags.FlagValues()
    flags.DEFINE_string("task", "classification", "The task.", flag_values=values)
    flags.DEFINE_string("train_data", None, "Training data.", flag_values=values)
    flags.DEFINE_string("eval_data", None, "Validation data.", flag_values=values)
    flags.DEFINE_string("data_format", None, "Data format.", flag_values=values)
    flags.DEFINE_float("weight", 1.0, "Sampling weight.", lower_bound=0.0, flag_values=values)
    for name in task_names():
        get_task_class(name).define_flags(values)
    return values


def read_entries(path):
    """The `Entry`s of a --tasks file; errors name the file and line."""
    try:  # read_lines: streamed, with the line limit; errors name the file and line
        lines = list(read_lines(path))
    except DataFormatError as error:
        raise UserError(f"--tasks={error}")
    entries = []
    for number, line in lines:
        where = f"{path}:{number}"
        try:
            words = shlex.split(line, comments=True)
        except ValueError as error:
            raise UserError(f"{where}: {error}")
        if not words:
            continue
        name, arguments = words[0], words[1:]
        # The name is a directory of --model_dir: no "..", no "/", nothing the run writes.
        if not _ENTRY_NAME.fullmatch(name) or name in _RESERVED_NAMES:
            raise UserError(f"{where}: a line starts with the entry's name (letters, digits, "
                            f"'_' and '-'; not a flag, not {', '.join(_RESERVED_NAMES)}), "
                            f"got {name!r}")
        if name in {entry.name for entry in entries}:
            raise UserError(f"{where}: entry {name!r} appears twice")
        values = _entry_flags()
        try:
            values(["entry", *arguments])
        except flags.Error as error:
            raise UserError(f"{where}: {error}")
        for required in ("train_data", "eval_data"):
            if not values[required].value:
                raise UserError(f"{where}: entry {name!r} needs --{required}")
            if not os.path.exists(values[required].value):
                raise UserError(f"{where}: --{required}={values[required].value}: no such file")
        try:
            task_class = get_task_class(values.task)
            if not task_class.trainable:
                raise ValueError("this task is not trained")
            task_options, head_options = task_class.options_from_flags(values)
            task = task_class(**task_options)
        except ValueError as error:
            raise UserError(f"{where}: --task={values.task}: {error}")
        entries.append(Entry(name, task, head_options, values.train_data, values.eval_data,
                             values.data_format, values.weight, where))
    if not entries:
        raise UserError(f"--tasks={path}: no entry (one per line: a name, then its flags)")
    return entries


def _encoder():
    """(--init_checkpoint's encoder or None, encoder preset name) from --init_checkpoint and
    --preset."""
    if FLAGS.init_checkpoint:  # a run directory stands for its encoder/
        FLAGS.init_checkpoint = md.encoder_checkpoint(FLAGS.init_checkpoint)
    return md.encoder_and_preset(FLAGS.init_checkpoint, FLAGS.preset, FLAGS.dropout)


def _vocabulary(entries):
    """(tokens, lowercase) shared by every entry."""
    if FLAGS.vocab:
        return read_vocabulary(FLAGS.vocab), FLAGS.lowercase
    if FLAGS.init_checkpoint:
        try:
            return read_tokenizer_settings(FLAGS.init_checkpoint)
        except (ValueError, OSError) as error:
            raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: {error}")
    texts = [text for entry in entries for text in entry.task.texts(entry.train_examples)]
    try:
        return build_vocabulary(texts, FLAGS.vocab_size, FLAGS.lowercase), FLAGS.lowercase
    except ValueError as error:
        raise UserError(f"--vocab_size={FLAGS.vocab_size}: {error}")


def _epoch_plan(entries, epochs, probabilities):
    """For each epoch, the entry index of each batch."""
    target = next((i for i, e in enumerate(entries) if e.name == FLAGS.target), None)
    plan = []
    for epoch in range(epochs):
        if target is not None and epoch >= epochs - FLAGS.target_epochs:
            plan.append(np.full(entries[target].batches, target))
        else:
            total = sum(entry.batches for entry in entries)
            plan.append(draw_tasks(probabilities, total, FLAGS.seed, epoch))
    return plan


def _write_scalars(writer, values, step):
    with writer.as_default(step=step):
        for name, value in values.items():
            tf.summary.scalar(name, float(value))
    writer.flush()


def main(argv):
    entries = read_entries(FLAGS.tasks)
    if FLAGS.target is not None and FLAGS.target not in {entry.name for entry in entries}:
        raise UserError(f"--target={FLAGS.target} is not an entry of {FLAGS.tasks} "
                        f"({', '.join(entry.name for entry in entries)})")
    policy = resolve_mixed_precision(FLAGS.mixed_precision)
    jit_compile = resolve_jit_compile(FLAGS.jit_compile)
    try:
        pack_length = resolve_pack_length(FLAGS.pack_length, jit_compile)
    except ValueError as error:
        raise UserError(str(error))
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(FLAGS.seed)

    for entry in entries:
        if entry.data_format and entry.data_format not in entry.task.formats:
            raise UserError(f"{entry.where}: --data_format={entry.data_format} is not one of "
                            f"{', '.join(entry.task.formats)} for --task={entry.task.name}")
        entry.train_examples = entry.task.read(entry.train_data, entry.data_format)
        entry.raw_eval_examples = entry.task.read(entry.eval_data, entry.data_format)
        entry.task = entry.task.adapt(entry.train_examples)
        entry.labels = entry.task.label_names(entry.train_examples)
    encoder, encoder_preset = _encoder()
    defaults = ENCODER_PRESETS[encoder_preset].fine_tuning
    positions = (transformer_of(encoder).max_sequence_length if encoder is not None
                 else ENCODER_PRESETS[encoder_preset].max_sequence_length)
    if FLAGS.max_seq_length is not None and FLAGS.max_seq_length > positions:
        raise UserError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the encoder's "
                        f"{positions} positions")
    max_seq_length = FLAGS.max_seq_length or min(defaults.max_seq_length, positions)
    epochs = FLAGS.epochs or defaults.epochs
    if FLAGS.target is not None and FLAGS.target_epochs >= epochs:
        raise UserError(f"--target_epochs={FLAGS.target_epochs} leaves no multi-task epoch "
                        f"of --epochs={epochs}")
    learning_rate = FLAGS.learning_rate or defaults.learning_rate
    # Heads start from scratch; on a pretrained encoder they learn at their own rate.
    head_learning_rate = FLAGS.head_learning_rate or (
        defaults.head_learning_rate if encoder is not None else learning_rate)
    warmup_fraction = (defaults.warmup_fraction if FLAGS.warmup_fraction is None
                       else FLAGS.warmup_fraction)

    # Nothing is written (or removed) before the data and flags have passed every check.
    if md.inspect(FLAGS.model_dir, FLAGS.overwrite) == "resume":
        raise UserError(f"--model_dir={FLAGS.model_dir} holds an unfinished multi-task run; "
                        "multi-task runs do not resume: pass --overwrite to start again")
    tokens, lowercase = _vocabulary(entries)
    if encoder is not None and transformer_of(encoder).vocabulary_size != len(tokens):
        raise UserError(f"the vocabulary has {len(tokens)} tokens but --init_checkpoint "
                        f"has {transformer_of(encoder).vocabulary_size} token embeddings")
    for entry in entries:
        entry.task = entry.task.for_text_casing(lowercase)
        entry.preprocessor = entry.task.make_preprocessor(tokens, lowercase, max_seq_length)
        entry.eval_examples = entry.task.prediction_examples(entry.raw_eval_examples,
                                                             entry.preprocessor)
        try:
            entry.eval_dataset = entry.task.make_dataset(
                entry.eval_examples, entry.preprocessor, entry.labels, training=False,
                batch_size=FLAGS.batch_size)
            first = entry.task.make_dataset(entry.train_examples, entry.preprocessor,
                                            entry.labels, training=True,
                                            batch_size=FLAGS.batch_size, seed=(FLAGS.seed, 0))
        except ValueError as error:
            raise UserError(f"{entry.where}: {error}")
        entry.batches = int(first.reduce(0, lambda count, _: count + 1))
    temperature = FLAGS.temperature if FLAGS.sampling == "temperature" else 1.0
    try:
        probabilities = sampling_probabilities([entry.batches for entry in entries],
                                               [entry.weight for entry in entries],
                                               temperature)
    except ValueError as error:
        raise UserError(f"--tasks={FLAGS.tasks}: {error}")
    plan = _epoch_plan(entries, epochs, probabilities)
    total_steps = sum(len(batches) for batches in plan)

    md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    for entry in entries:
        entry.model_dir = os.path.join(FLAGS.model_dir, entry.name)
        md.prepare(entry.model_dir, overwrite=True)
    common = {
        "preset": encoder_preset, "vocabulary_size": len(tokens), "lowercase": lowercase,
        "init_checkpoint": FLAGS.init_checkpoint and os.path.abspath(FLAGS.init_checkpoint),
        "epochs": epochs, "batch_size": FLAGS.batch_size, "learning_rate": learning_rate,
        "head_learning_rate": head_learning_rate, "warmup_fraction": warmup_fraction,
        "dropout": FLAGS.dropout, "max_seq_length": max_seq_length, "seed": FLAGS.seed,
        "mixed_precision": policy, "jit_compile": jit_compile, "pack_length": pack_length,
        "total_steps": total_steps,
    }
    config = dict(common, tasks=os.path.abspath(FLAGS.tasks), sampling=FLAGS.sampling,
                  temperature=temperature, target=FLAGS.target,
                  target_epochs=FLAGS.target_epochs if FLAGS.target else 0,
                  entries={entry.name: {"task": entry.task.name,
                                        "weight": entry.weight,
                                        "batches_per_pass": entry.batches,
                                        "probability": float(p)}
                           for entry, p in zip(entries, probabilities)})
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))

    # One encoder under every head, one optimizer (the first model's) for everything.
    overrides = dict(vocabulary_size=len(tokens), learning_rate=learning_rate,
                     head_learning_rate=head_learning_rate, total_steps=total_steps,
                     warmup_steps=int(warmup_fraction * total_steps), jit_compile=jit_compile,
                     pack_length=pack_length)
    if FLAGS.dropout is not None:
        overrides["dropout"] = FLAGS.dropout
    for entry in entries:
        try:
            entry.model = build_task_model(entry.task, encoder_preset, encoder=encoder,
                                           **overrides, **entry.head_options,
                                           **entry.task.model_head_options(entry.labels))
        except ValueError as error:
            raise UserError(f"{entry.where}: {error}")
        encoder = entry.model.encoder
        task_options = entry.task.options_dict()
        entry.model.attach_metadata(preprocessor=entry.preprocessor, task=entry.task.name,
                                    labels=entry.labels, task_options=task_options,
                                    preset=encoder_preset, data_format=entry.data_format,
                                    task_module=type(entry.task).__module__)
        monitor, mode = entry.task.monitor(len(entry.labels))
        entry.checkpoint = BestModelCheckpoint(md.path(entry.model_dir, md.BEST_MODEL),
                                               monitor, mode)
        entry.checkpoint.set_model(entry.model)
        entry.config = dict(
            common, task=entry.task.name, task_options=task_options,
            tag_scheme=task_options.get("tag_scheme"),
            train_data=os.path.abspath(entry.train_data),
            eval_data=os.path.abspath(entry.eval_data), data_format=entry.data_format,
            vocab=FLAGS.vocab, labels=entry.labels, monitor=monitor,
            train_examples=len(entry.train_examples),
            eval_examples=len(entry.raw_eval_examples), multitask=config["tasks"],
            trainable_parameters=sum(int(np.prod(v.shape))
                                     for v in entry.model.trainable_variables),
            total_parameters=sum(int(np.prod(v.shape)) for v in entry.model.weights))
        md.write_json(entry.config, md.path(entry.model_dir, md.CONFIG))
        md.save_vocabulary(entry.model_dir, tokens)
        md.write_json(entry.labels, md.path(entry.model_dir, md.LABELS))
    # One optimizer for everything: the zoo's AdamW of the first model, with its schedule
    # over all steps and its head rate.
    optimizer = shared_optimizer([entry.model for entry in entries])
    for entry in entries:
        # Keras builds a model's loss and metrics from a first batch; done here, outside
        # the traced step, which is traced once per padded shape at most.
        entry.model._symbolic_build(data_batch=next(iter(first_batch(entry))))  # noqa: SLF001
        entry.loss_mean = keras.metrics.Mean(name="loss")
        entry.step = tf.function(train_step(entry.model, optimizer, entry.loss_mean),
                                 reduce_retracing=True, jit_compile=jit_compile)
    logs = md.path(FLAGS.model_dir, md.LOGS)
    writers = {(entry.name, part): tf.summary.create_file_writer(
        os.path.join(logs, entry.name, part)) for entry in entries
        for part in ("train", "validation")}
    # Each entry's batches: its passes in their fixed orders, one after the other.
    streams = {entry.name: iter(training_stream(
        lambda index, entry=entry: pass_of(entry, index), epochs + 1, skip=0))
        for entry in entries}
    verbose = fit_verbosity() == 1
    step_log = StepLog(logs, entries, optimizer, FLAGS.log_every_steps)
    stop = types.SimpleNamespace(stop_requested=False)
    start, done = time.monotonic(), 0
    try:
        with stop_on_interrupt(stop, "stopping after this step; Ctrl-C again to stop at once"):
            # Printed once Ctrl-C is handled (a test waits for it).
            print(f"multi-task training of {', '.join(e.name for e in entries)} on "
                  f"{encoder_preset} ({policy}): {total_steps} steps in {epochs} epochs; "
                  "batches drawn with "
                  + ", ".join(f"p({e.name})={p:.3f}" for e, p in zip(entries, probabilities))
                  + (f"; the last {FLAGS.target_epochs} epoch(s) {FLAGS.target} alone"
                     if FLAGS.target else ""), flush=True)
            for epoch, batches in enumerate(plan):
                for entry in entries:
                    entry.model.reset_metrics()
                    entry.loss_mean.reset_state()
                step_log.epoch_begins()
                for count, index in enumerate(batches, 1):
                    entry = entries[index]
                    entry.step(next(streams[entry.name]))
                    done += 1
                    step_log.after_step(done, epoch_ends=count == len(batches))
                    if stop.stop_requested:
                        _stopped(done, total_steps)
                    if verbose and (count % 10 == 0 or count == len(batches)):
                        print(f"\repoch {epoch + 1}/{epochs}: step {count}/{len(batches)}",
                              end="", flush=True)
                for entry in entries:  # before any best model is saved from broken weights
                    loss = float(entry.loss_mean.result())
                    if not np.isfinite(loss):
                        raise UserError(f"the training loss of {entry.name} became {loss} in "
                                        f"epoch {epoch + 1}: multi-task training stopped "
                                        f"({_NO_RESUME}); a lower --learning_rate may help")
                line = [f"epoch {epoch + 1}/{epochs} ({time.monotonic() - start:.0f} s)"]
                for number, entry in enumerate(entries):
                    line.append(_end_epoch(entry, epoch, int(np.sum(batches == number)),
                                           writers))
                print(("\n" if verbose else "") + "; ".join(line), flush=True)
                if stop.stop_requested:
                    _stopped(done, total_steps)
    except FailedWrite as error:
        raise UserError(f"{error}; multi-task training stopped ({_NO_RESUME})")
    step_log.close()

    save_encoder_checkpoint(encoder, md.path(FLAGS.model_dir, md.ENCODER), tokens,
                            lowercase, overwrite=True)
    results = {}
    for entry in entries:
        best = keras.saving.load_model(md.path(entry.model_dir, md.BEST_MODEL))
        if FLAGS.tune_decoding:  # as tools/train.py does: span NER picks its threshold
            changes = entry.task.tune_decoding(best, entry.eval_dataset, entry.eval_examples,
                                               entry.labels)
            if changes:
                entry.task = entry.task.with_options(**changes)
                md.update_task_options(changes, entry.eval_data, best, entry.model_dir)
                print(f"{entry.name}: decoding tuned on {entry.eval_data}: "
                      f"{json.dumps(changes)}", flush=True)
        results[entry.name] = entry.task.evaluate(best, entry.eval_dataset,
                                                  entry.eval_examples, entry.labels)
        md.write_json(results[entry.name], md.path(entry.model_dir, md.METRICS))
        write_model_card(entry.model_dir, training_card(entry.model_dir, sys.argv))
    md.write_json(results, md.path(FLAGS.model_dir, md.METRICS))
    print(json.dumps(results, sort_keys=True))
    print(f"shared encoder: {os.path.abspath(md.path(FLAGS.model_dir, md.ENCODER))} "
          "(tools/train.py --init_checkpoint=...)")
    print(f"TensorBoard: tensorboard --logdir {os.path.abspath(logs)}")


_NO_RESUME = ("each entry's best model so far is kept; multi-task runs do not resume: "
              "--overwrite starts again")


def _stopped(step, total_steps):
    """Exits 130 (the shell's code for Ctrl-C) after a requested stop."""
    print(f"interrupted at step {step} of {total_steps}: {_NO_RESUME}", file=sys.stderr,
          flush=True)
    sys.exit(130)


def _end_epoch(entry, epoch, drawn, writers):
    """Logs an entry's epoch (its `drawn` batches' loss and metrics, then its validation),
    keeps its best model; the epoch line's part about it."""
    train = {}
    if drawn:
        train = {f"epoch_{name}": value for name, value in
                 entry.model.get_metrics_result().items()}
        train["epoch_loss"] = entry.loss_mean.result()
    _write_scalars(writers[entry.name, "train"], {**train, "epoch_batches": drawn}, epoch)
    metrics = entry.task.evaluate(entry.model, entry.eval_dataset, entry.eval_examples,
                                  entry.labels)
    logged = {f"val_{name}": value for name, value in metrics.items()
              if isinstance(value, (int, float)) and name != "examples"}
    _write_scalars(writers[entry.name, "validation"],
                   {f"epoch_{name[4:]}": value for name, value in logged.items()}, epoch)
    entry.checkpoint.on_epoch_end(epoch, logged)
    return (f"{entry.name}: {drawn} batches, {entry.checkpoint.monitor} "
            f"{logged[entry.checkpoint.monitor]:.4f}")


def pass_of(entry, index):
    """Pass `index` over an entry's training data, in its own order fixed by (seed, pass)."""
    return entry.task.make_dataset(entry.train_examples, entry.preprocessor, entry.labels,
                                   training=True, batch_size=FLAGS.batch_size,
                                   seed=(FLAGS.seed, index))


def first_batch(entry):
    return pass_of(entry, 0).take(1)


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
