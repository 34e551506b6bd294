r"""Multi-task fine-tuning: several tasks trained at once on one shared encoder.

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

An interrupted run (killed, or stopped with `Ctrl-C`) resumes from its last
saved step when started again with the same flags, as tools/train.py does
(`zoo.runs.training_loop.train_entries_resumably`): the training state (every
entry's model, the shared optimizer, the dropout states) is saved every
--checkpoint_every_steps steps and at every epoch's end.
"""

import dataclasses
import json
import os
import re
import shlex
import shutil
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.layers.keras_internals import build_from_batch  # noqa: E402
from nlpzoo.tasks.training.callbacks import BestModelCheckpoint  # noqa: E402
from nlpzoo.tasks.io.errors import DataFormatError  # noqa: E402
from nlpzoo.tasks.text.line_reader import read_lines  # noqa: E402
from nlpzoo.tasks.registry import get_task_class, task_names  # noqa: E402
from nlpzoo.tasks.training import distribution  # noqa: E402
from nlpzoo.tasks.training.shared_encoder_training import (  # noqa: E402
    distributed_step,
    shared_optimizer,
    train_step,
)
from nlpzoo.tasks.training.task_sampling import draw_tasks, sampling_probabilities  # noqa: E402
from nlpzoo.tasks.training.training_state import TrainingState  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tasks.io.console import fit_verbosity  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, check_paths, run  # noqa: E402
from nlpzoo.tools.cli.flags import define_task_module_flag  # noqa: E402
from nlpzoo.tools.cli import run_setup  # noqa: E402
from nlpzoo.zoo.runs.model_card import training_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import train_entries_resumably, training_stream  # noqa: E402
from nlpzoo.zoo import build_task_model  # noqa: E402
from nlpzoo.zoo.checkpoints.native import save_encoder_checkpoint  # noqa: E402

FLAGS = flags.FLAGS
define_task_module_flag()
flags.DEFINE_string("tasks", None, "The entries: one per line, a name then that task's "
                    "tools/train.py flags (--task, --train_data, --eval_data, --data_format, "
                    "the task's own options, --weight).")
run_setup.define_fine_tuning_flags(labelled_data=False, early_stopping=False)
flags.DEFINE_enum("sampling", "proportional", ["proportional", "temperature"], "How an "
                  "entry is drawn for each batch: in proportion to weight x batches, or to "
                  "weight x batches^(1/--temperature).")
flags.DEFINE_float("temperature", 2.0, "T of --sampling=temperature.", lower_bound=1e-3)
flags.DEFINE_string("target", None, "An entry name: the last --target_epochs epochs train it "
                    "alone.")
flags.DEFINE_integer("target_epochs", 1, "Epochs of --target alone, at the end.",
                     lower_bound=1)
distribution.define_distribution_flags()
flags.mark_flags_as_required(["tasks", "model_dir"])

# Settings that shape the models or the batches: a resumed run must not change them.
_RESUME_KEYS = ("tasks", "entries", "preset", "vocabulary_size", "lowercase", "max_seq_length",
                "batch_size", "epochs", "learning_rate", "head_learning_rate", "seed",
                "sampling", "temperature", "target", "target_epochs", "total_steps")

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
            check_paths(values)  # an entry's path flags: `~` expanded as on the command line
        except (flags.Error, UserError) as error:
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


def _read_data(entries):
    """Reads each entry's data; adapts its task to it and sets its labels."""
    for entry in entries:
        if entry.data_format and entry.data_format not in entry.task.formats:
            raise UserError(f"{entry.where}: --data_format={entry.data_format} is not one of "
                            f"{', '.join(entry.task.formats)} for --task={entry.task.name}")
        entry.train_examples = entry.task.read(entry.train_data, entry.data_format)
        entry.raw_eval_examples = entry.task.read(entry.eval_data, entry.data_format)
        entry.task = entry.task.adapt(entry.train_examples)
        entry.labels = entry.task.label_names(entry.train_examples)


def _datasets(entries, setup):
    """Each entry's preprocessor, validation data and number of batches per pass."""
    for entry in entries:
        entry.task = entry.task.for_text_casing(setup.lowercase)
        entry.preprocessor = entry.task.make_preprocessor(setup.tokenizer, setup.lowercase,
                                                          setup.max_seq_length)
        entry.eval_examples = entry.task.prediction_examples(entry.raw_eval_examples,
                                                             entry.preprocessor)
        try:
            entry.eval_dataset = entry.task.make_dataset(
                entry.eval_examples, entry.preprocessor, entry.labels, training=False,
                batch_size=FLAGS.batch_size)
            first = pass_of(entry, 0)
        except ValueError as error:
            raise UserError(f"{entry.where}: {error}")
        entry.batches = int(first.reduce(0, lambda count, _: count + 1))


def _sampling(entries):
    """(the temperature, each entry's probability of being drawn)."""
    temperature = FLAGS.temperature if FLAGS.sampling == "temperature" else 1.0
    try:
        return temperature, sampling_probabilities([entry.batches for entry in entries],
                                                   [entry.weight for entry in entries],
                                                   temperature)
    except ValueError as error:
        raise UserError(f"--tasks={FLAGS.tasks}: {error}")


def _configs(entries, setup, temperature, probabilities):
    """(the run's config.json, the part each entry's config.json shares)."""
    schedule, hardware = setup.schedule, setup.hardware
    common = {
        "preset": setup.encoder_preset, "vocabulary_size": setup.tokenizer.vocabulary_size,
        "lowercase": setup.lowercase,
        "init_checkpoint": run_setup.checkpoint_reference(FLAGS.init_checkpoint),
        "epochs": schedule.epochs, "batch_size": FLAGS.batch_size,
        "learning_rate": schedule.learning_rate,
        "head_learning_rate": schedule.head_learning_rate,
        "warmup_fraction": schedule.warmup_fraction, "clip_norm": schedule.clip_norm,
        "dropout": FLAGS.dropout,
        "max_seq_length": setup.max_seq_length, "seed": FLAGS.seed,
        "mixed_precision": hardware.policy, "jit_compile": hardware.jit_compile,
        "pack_length": hardware.pack_length, "total_steps": setup.total_steps,
    }
    config = dict(common, tasks=os.path.abspath(FLAGS.tasks), sampling=FLAGS.sampling,
                  temperature=temperature, target=FLAGS.target,
                  target_epochs=FLAGS.target_epochs if FLAGS.target else 0,
                  entries={entry.name: {"task": entry.task.name,
                                        "weight": entry.weight,
                                        "batches_per_pass": entry.batches,
                                        "probability": float(p)}
                           for entry, p in zip(entries, probabilities)})
    return config, common


def _completed_epochs(plan):
    """The epochs whose end the saved training state includes (None: nothing saved)."""
    saved = TrainingState(md.path(FLAGS.model_dir, md.CHECKPOINTS), 1).read()
    if saved is None:
        return None
    return int(np.searchsorted(np.cumsum([len(batches) for batches in plan]), saved["step"],
                               side="right"))


def _build_models(entries, setup, encoder, common, config, strategy):
    """One model per entry on one encoder; each entry's directory files and best-model
    checkpoint. Returns the shared encoder."""
    overrides = run_setup.model_overrides(
        setup.tokenizer.vocabulary_size, setup.schedule, setup.total_steps, setup.hardware,
        FLAGS.dropout)
    completed_epochs = _completed_epochs(setup.plan)
    for entry in entries:
        try:
            with strategy.scope():  # mirrored variables, optimizer and metrics
                entry.model = build_task_model(entry.task, setup.encoder_preset,
                                               encoder=encoder, **overrides,
                                               **entry.head_options,
                                               **entry.task.model_head_options(entry.labels))
        except ValueError as error:
            raise UserError(f"{entry.where}: {error}")
        encoder = entry.model.encoder
        task_options = entry.task.options_dict()
        entry.model.attach_metadata(preprocessor=entry.preprocessor, task=entry.task.name,
                                    labels=entry.labels, task_options=task_options,
                                    preset=setup.encoder_preset, data_format=entry.data_format,
                                    task_module=type(entry.task).__module__)
        monitor, mode = entry.task.monitor(len(entry.labels))
        entry.checkpoint = BestModelCheckpoint(md.path(entry.model_dir, md.BEST_MODEL),
                                               monitor, mode, completed_epochs)
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
        md.save_run_tokenizer(entry.model_dir, setup.tokenizer)
        md.write_json(entry.labels, md.path(entry.model_dir, md.LABELS))
    return encoder


def _train(entries, setup, probabilities, strategy):
    """Trains every entry with one optimizer (`zoo.runs.training_loop`), or finishes a
    killed run."""
    # Several replicas (multi-worker): each step runs on all of them, on their shares of
    # the entry's batch; one replica: the step alone, as before.
    replicated = strategy.num_replicas_in_sync > 1
    with strategy.scope():
        # One optimizer for everything: the zoo's AdamW of the first model, with its
        # schedule over all steps and its head rate.
        optimizer = shared_optimizer([entry.model for entry in entries])
        distribution.clip_the_sum(optimizer, strategy)
        for entry in entries:
            # Keras builds a model's loss and metrics from a first batch; done here, outside
            # the traced step, which is traced once per padded shape at most. Multi-worker:
            # build_for_fit does it, and fills Keras's gaps for the epochs' evaluate.
            if distribution.in_multi_worker_mode(strategy):
                distribution.build_for_fit(entry.model, strategy, first_batch(entry))
            else:
                build_from_batch(entry.model, next(iter(first_batch(entry))))
            entry.loss_mean = keras.metrics.Mean(name="loss")
            step = train_step(entry.model, optimizer, entry.loss_mean)
            entry.step = (distributed_step(step, strategy, setup.hardware.jit_compile)
                          if replicated else
                          tf.function(step, reduce_retracing=True,
                                      jit_compile=setup.hardware.jit_compile))
    logs = md.path(FLAGS.model_dir, md.LOGS)
    writers = {(entry.name, part): tf.summary.create_file_writer(
        os.path.join(logs, entry.name, part)) for entry in entries
        for part in ("train", "validation")}
    start, epochs = time.monotonic(), len(setup.plan)

    def end_epoch(epoch, batches):
        line = [f"epoch {epoch + 1}/{epochs} ({time.monotonic() - start:.0f} s)"]
        for number, entry in enumerate(entries):
            line.append(_end_epoch(entry, epoch, int(np.sum(batches == number)), writers))
        return "; ".join(line)

    # Printed once Ctrl-C saves and stops (a test waits for it).
    announce = (f"multi-task training of {', '.join(e.name for e in entries)} on "
                f"{setup.encoder_preset} ({setup.hardware.policy}): {setup.total_steps} steps in "
                f"{epochs} epochs; batches drawn with "
                + ", ".join(f"p({e.name})={p:.3f}" for e, p in zip(entries, probabilities))
                + (f"; the last {FLAGS.target_epochs} epoch(s) {FLAGS.target} alone"
                   if FLAGS.target else ""))
    def make_stream(entry, skip):
        # Each entry's batches: its passes in their fixed orders, one after the other.
        stream = training_stream(lambda index: pass_of(entry, index), epochs + 1, skip)
        if not replicated:
            return stream
        # Each worker takes its share of every batch.
        return strategy.experimental_distribute_dataset(distribution.shard_by_data(stream))

    train_entries_resumably(
        entries, setup.plan, optimizer, model_dir=FLAGS.model_dir,
        make_stream=make_stream,
        end_epoch=end_epoch, checkpoint_every_steps=FLAGS.checkpoint_every_steps,
        log_every_steps=FLAGS.log_every_steps, verbose=fit_verbosity() == 1,
        announce=announce)


def _evaluate(entries, setup, encoder):
    """Saves the shared encoder; tunes, evaluates and documents each entry's best model."""
    save_encoder_checkpoint(encoder, md.path(FLAGS.model_dir, md.ENCODER),
                            setup.tokenizer.vocabulary,
                            setup.lowercase, overwrite=True)
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
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)
    return results


def main(argv):
    strategy = distribution.make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    run_setup.check_gradient_accumulation(FLAGS, binary="tools/multitask.py")
    entries = read_entries(FLAGS.tasks)
    # Only the chief writes --model_dir; other workers write to a temporary directory
    # (resuming: with a copy of the chief's state, its entries' directories included).
    FLAGS.model_dir = distribution.worker_model_dir(
        FLAGS.model_dir, strategy, subdirectories=[entry.name for entry in entries])
    if FLAGS.target is not None and FLAGS.target not in {entry.name for entry in entries}:
        raise UserError(f"--target={FLAGS.target} is not an entry of {FLAGS.tasks} "
                        f"({', '.join(entry.name for entry in entries)})")
    setup = types.SimpleNamespace(hardware=run_setup.apply_hardware_flags(FLAGS, strategy))
    _read_data(entries)
    with strategy.scope():  # its variables are mirrored too
        encoder = run_setup.load_starting_encoder()
    setup.encoder_preset, _, _ = run_setup.resolve_preset(FLAGS.preset, encoder)
    # Heads start from scratch; on a pretrained encoder they learn at their own rate.
    setup.max_seq_length, setup.schedule = run_setup.fine_tuning_settings(
        encoder, setup.encoder_preset)
    if FLAGS.target is not None and FLAGS.target_epochs >= setup.schedule.epochs:
        raise UserError(f"--target_epochs={FLAGS.target_epochs} leaves no multi-task epoch "
                        f"of --epochs={setup.schedule.epochs}")

    # Nothing is written (or removed) before the data and flags have passed every check.
    resuming = md.inspect(FLAGS.model_dir, FLAGS.overwrite) == "resume"
    setup.tokenizer = run_setup.resolve_tokenizer(
        FLAGS, lambda: [text for entry in entries
                        for text in entry.task.texts(entry.train_examples)],
        resuming, learned_from=FLAGS.tasks)
    run_setup.check_vocabulary_fits(encoder, setup.tokenizer)
    setup.lowercase = setup.tokenizer.lowercase
    _datasets(entries, setup)
    temperature, probabilities = _sampling(entries)
    setup.plan = _epoch_plan(entries, setup.schedule.epochs, probabilities)
    setup.total_steps = sum(len(batches) for batches in setup.plan)
    config, common = _configs(entries, setup, temperature, probabilities)
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS)
    md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    for entry in entries:
        entry.model_dir = os.path.join(FLAGS.model_dir, entry.name)
        if not resuming:  # a resumed run keeps each entry's best model so far
            md.prepare(entry.model_dir, overwrite=True)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    encoder = _build_models(entries, setup, encoder, common, config, strategy)
    print(f"distribution: {distribution.describe(strategy)}, global batch {FLAGS.batch_size}",
          flush=True)
    _train(entries, setup, probabilities, strategy)
    # One process and every worker print it: the same run on each agrees (docs/distributed.md).
    # Of every entry's model (the shared encoder's weights once).
    weights = {id(weight): weight for entry in entries for weight in entry.model.weights}
    print(distribution.fingerprint_line(types.SimpleNamespace(weights=list(weights.values()))),
          flush=True)
    results = _evaluate(entries, setup, encoder)
    print(json.dumps(results, sort_keys=True))
    print(f"shared encoder: {os.path.abspath(md.path(FLAGS.model_dir, md.ENCODER))} "
          "(tools/train.py --init_checkpoint=...)")
    print(f"TensorBoard: tensorboard --logdir {os.path.abspath(md.path(FLAGS.model_dir, md.LOGS))}")


def _end_epoch(entry, epoch, drawn, writers):
    """Logs an entry's epoch (its `drawn` batches' loss and metrics, then its validation),
    keeps its best model; the epoch line's part about it."""
    train = {}
    if drawn:
        train = {f"epoch_{name}": value for name, value in
                 entry.model.get_metrics_result().items()}
        train["epoch_loss"] = entry.loss_mean.result()
    _write_scalars(writers[entry.name, "train"], {**train, "epoch_batches": drawn}, epoch)
    metrics = entry.task.validation_scores(entry.model, entry.eval_dataset, entry.eval_examples,
                                           entry.labels, tune_decoding=FLAGS.tune_decoding)
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
