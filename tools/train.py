r"""Fine-tunes (or trains from scratch) a zoo preset on a task.

    python tools/train.py --task=classification --preset=bert_tiny \
        --train_data=train.label --eval_data=test.label --model_dir=runs/trec
    python tools/train.py --train_data=reviews.csv --text_column=review \
        --label_column=stars --validation_split=0.1 --model_dir=runs/reviews

Your own data (CSV/TSV/JSONL columns, the validation split): docs/own_data.md.

Writes into --model_dir the resolved config (before training), the
vocabulary, the label names, TensorBoard logs (logs/train, logs/validation),
the best model by the validation metric, the final metrics as JSON and the
model card README.md. A save that fails (disk full, permission denied) stops
with one line and keeps the previous best model and checkpoint.
An interrupted run (killed, or stopped with Ctrl-C) resumes from its last
saved step when started again with the same flags: the training state is
saved every --checkpoint_every_steps steps and at every epoch's end.
"""

import functools
import json
import os
import shutil
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.layers import LAYER_MIXES, distinct_block_count, transformer_of  # noqa: E402
from nlpzoo.tasks.modeling.auxiliary_mlm import auxiliary_mlm_for  # noqa: E402
from nlpzoo.tasks.training.chain_thaw import ChainThaw, default_chain_thaw_steps  # noqa: E402
from nlpzoo.tasks.training.ewc import FISHER_SOURCES  # noqa: E402
from nlpzoo.tasks.training.gradual_unfreezing import GradualUnfreezing  # noqa: E402
from nlpzoo.tasks.training.optimization import SCHEDULES  # noqa: E402
from nlpzoo.tasks.registry import get_task_class, task_names  # noqa: E402
from nlpzoo.tasks.training.tensorboard_hparams import write_hparams  # noqa: E402
from nlpzoo.tasks.training import distribution  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import define_task_module_flag  # noqa: E402
from nlpzoo.tools.cli import data_flags, run_setup  # noqa: E402
from nlpzoo.zoo.runs.ewc_anchor import anchor_with_ewc  # noqa: E402
from nlpzoo.zoo.runs.model_card import training_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import train_resumably  # noqa: E402
from nlpzoo.zoo import ENCODER_PRESETS, build_task_model, check_adaptation  # noqa: E402
from nlpzoo.zoo.checkpoints import load_pretraining_heads  # noqa: E402

FLAGS = flags.FLAGS
define_task_module_flag()
flags.DEFINE_string("task", "classification", "The task: a registered task name ("
                    f"{', '.join(task_names())}, or one of a --task_module).")
for _name in task_names():
    get_task_class(_name).define_flags(FLAGS)
run_setup.define_fine_tuning_flags()
data_flags.define_data_flags()
flags.DEFINE_float("layer_lr_decay", 1.0, "Discriminative fine-tuning: block l of L learns at "
                   "decay^(L-1-l) x the learning rate, the embeddings at decay^L (1: off).",
                   lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_boolean("freeze_encoder", False, "Feature extraction: the encoder's weights stay "
                     "as they start; only the task head (and a --layer_mix) trains.")
flags.DEFINE_integer("trainable_layers", None, "Train only the top this many blocks of the "
                     "encoder (with the pooler) and the head; the embeddings and the blocks "
                     "below keep their weights. All of them train when omitted.",
                     lower_bound=1)
flags.DEFINE_enum("layer_mix", "last", LAYER_MIXES, "What the head reads: the last layer, "
                  "ELMo's learned scalar mix of every layer (embeddings included), or the "
                  "mean of the last four.")
flags.DEFINE_integer("adapter_size", 0, "Houlsby bottleneck adapters of this width after the "
                     "attention and feed-forward sublayers of every block; only adapters, "
                     "LayerNorms and the head train (0: none).", lower_bound=0)
flags.DEFINE_integer("lora_rank", 0, "LoRA updates of this rank on every block's query and "
                     "value projections (Keras's own LoRA); only they and the head train "
                     "(0: none).", lower_bound=0)
flags.DEFINE_boolean("gradual_unfreezing", False, "ULMFiT's gradual unfreezing: the head "
                     "trains alone, then one more block from the top every "
                     "--unfreeze_every_steps, the embeddings last.")
flags.DEFINE_integer("unfreeze_every_steps", None, "Steps between unfreezing steps of "
                     "--gradual_unfreezing; one epoch when omitted.", lower_bound=1)
flags.DEFINE_float("l2sp", 0.0, "L2-SP: add alpha * ||theta - theta_0||^2 over the encoder's "
                   "weights to the loss, theta_0 the weights training starts from (0: off).",
                   lower_bound=0.0)
flags.DEFINE_float("ewc", 0.0, "EWC (elastic weight consolidation): add lambda * sum_i F_i * "
                   "(theta_i - theta_0_i)^2 over the encoder's weights to the loss, F the "
                   "diagonal Fisher (--ewc_fisher), normalised to mean 1 so that lambda is on "
                   "--l2sp's scale; saved as ewc_fisher.npz in --model_dir (0: off).",
                   lower_bound=0.0)
flags.DEFINE_enum("ewc_fisher", "task", FISHER_SOURCES, "Where --ewc's Fisher comes from: "
                  "the mean squared gradient of the task's loss over the first "
                  "--ewc_fisher_batches training batches, at the starting weights with the "
                  "head as initialised and no dropout, before training.")
flags.DEFINE_integer("ewc_fisher_batches", 100, "At most this many training batches (of "
                     "the first epoch) estimate --ewc's Fisher.", lower_bound=1)
flags.DEFINE_boolean("chain_thaw", False, "Chain-thaw (DeepMoji): the head trains alone, "
                     "then each encoder block alone from the top (with the pooler) down to "
                     "the embeddings, --chain_thaw_steps each, then everything.")
flags.DEFINE_integer("chain_thaw_steps", None, "Steps of each single-part stage of "
                     "--chain_thaw; by default those stages share the first half of the run "
                     "and everything trains for the second.", lower_bound=1)
flags.DEFINE_float("auxiliary_mlm_weight", 0.0, "Multi-task fine-tuning with the language "
                   "model: add this weight times a masked-LM loss on the task's own inputs "
                   "(masked afresh every step, decoded tied to the token embeddings) to the "
                   "task loss; costs about one more encoder pass per step (0: off).",
                   lower_bound=0.0)
flags.DEFINE_boolean("auxiliary_mlm_anneal", False, "Anneal --auxiliary_mlm_weight linearly "
                     "to 0 over the run.")
flags.DEFINE_enum("schedule", "linear", SCHEDULES, "Learning-rate schedule: warm-up over "
                  "--warmup_fraction then linear decay to 0, cosine decay to 0, ULMFiT's "
                  "slanted triangular (the warm-up fraction is its cut_frac), or constant "
                  "(no warm-up).")
distribution.define_distribution_flags()
flags.mark_flags_as_required(["train_data", "model_dir"])  # --eval_data or --validation_split

# Settings that shape the model or data: a resumed run must not change them.
_RESUME_KEYS = ("task", "task_options", "preset", "train_data", "max_seq_length", "lowercase", "labels",
                "vocabulary_size", "batch_size", "epochs", "learning_rate", "layer_mix",
                "adapter_size", "lora_rank", "gradual_unfreezing", "unfreeze_every_steps",
                "schedule", "auxiliary_mlm_weight", "auxiliary_mlm_anneal", "columns",
                "validation_split", "trainable_layers", "gradient_accumulation_steps",
                "l2sp", "ewc", "ewc_fisher", "ewc_fisher_batches", "chain_thaw",
                "chain_thaw_steps")
# What a resume key was in runs from before it was recorded (their config.json lacks it).
_RESUME_DEFAULTS = {"gradient_accumulation_steps": 1, "l2sp": 0.0, "ewc": 0.0,
                    "ewc_fisher": None, "ewc_fisher_batches": None, "chain_thaw": False,
                    "chain_thaw_steps": None}


def _count_batches(dataset):
    return int(dataset.reduce(0, lambda count, _: count + 1))


def _task():
    """(the --task, its head options from the flags); checks --data_format for it."""
    try:
        task_class = get_task_class(FLAGS.task)
        if not task_class.trainable:
            raise ValueError("this task is not trained: its model works on a pretrained "
                             "encoder as it is (no labels, no loss); build it with "
                             f"tools/export.py --task={FLAGS.task} --init_checkpoint=<dir>")
        task_options, head_options = task_class.options_from_flags(FLAGS)
        task = task_class(**task_options)
        if task.pretrained_heads and not FLAGS.init_checkpoint:
            raise ValueError(f"it starts from the pretrained {', '.join(task.pretrained_heads)}"
                             " of a checkpoint: give --init_checkpoint")
    except ValueError as error:
        raise UserError(f"--task={FLAGS.task}: {error}")
    if FLAGS.data_format and FLAGS.data_format not in task.formats:
        raise UserError(f"--data_format={FLAGS.data_format} is not one of "
                        f"{', '.join(task.formats)} for --task={task.name}")
    return task, head_options


def _check_adaptation_flags(strategy):
    """Conflicting adaptation flags (and --gradient_accumulation_steps with several
    replicas) fail before anything is read or written."""
    run_setup.check_gradient_accumulation(FLAGS, strategy)
    try:
        check_adaptation(dict(freeze_encoder=FLAGS.freeze_encoder, layer_mix=FLAGS.layer_mix,
                              adapter_size=FLAGS.adapter_size, lora_rank=FLAGS.lora_rank,
                              l2sp=FLAGS.l2sp, trainable_layers=FLAGS.trainable_layers))
    except ValueError as error:
        raise UserError(f"{error} (--freeze_encoder, --trainable_layers, --adapter_size, "
                        "--lora_rank, --l2sp)")
    if FLAGS.auxiliary_mlm_weight and FLAGS.freeze_encoder:
        raise UserError("--auxiliary_mlm_weight trains the encoder with a masked-LM loss; "
                        "it cannot be combined with --freeze_encoder")
    if FLAGS.auxiliary_mlm_anneal and not FLAGS.auxiliary_mlm_weight:
        raise UserError("--auxiliary_mlm_anneal needs --auxiliary_mlm_weight > 0")
    if FLAGS.gradual_unfreezing and (FLAGS.freeze_encoder or FLAGS.adapter_size
                                     or FLAGS.lora_rank or FLAGS.trainable_layers):
        raise UserError("--gradual_unfreezing unfreezes the whole encoder in turn; it "
                        "cannot be combined with --freeze_encoder, --trainable_layers, "
                        "--adapter_size or --lora_rank")
    if FLAGS.chain_thaw and (FLAGS.gradual_unfreezing or FLAGS.freeze_encoder
                             or FLAGS.adapter_size or FLAGS.lora_rank or FLAGS.trainable_layers):
        raise UserError("--chain_thaw trains each part of the model in turn, then all of "
                        "it; it cannot be combined with --gradual_unfreezing, "
                        "--freeze_encoder, --trainable_layers, --adapter_size or --lora_rank")
    if FLAGS.ewc and (FLAGS.l2sp or FLAGS.freeze_encoder or FLAGS.adapter_size
                      or FLAGS.lora_rank):
        raise UserError("--ewc pulls the encoder's weights towards their start (with F = 1 "
                        "it is --l2sp); it cannot be combined with --l2sp, --freeze_encoder, "
                        "--adapter_size or --lora_rank")
    for flag, needs in (("ewc_fisher_batches", "ewc"), ("ewc_fisher", "ewc"),
                        ("chain_thaw_steps", "chain_thaw")):
        if FLAGS[flag].present and not FLAGS[needs].value:
            raise UserError(f"--{flag} is a setting of --{needs}, which is off")


def _adapted_task(task, train_examples):
    """`task.adapt(train_examples)`; options that the training data contradicts fail in
    one line (e.g. --class_weights with the wrong number of weights)."""
    try:
        return task.adapt(train_examples)
    except ValueError as error:
        raise UserError(f"--train_data={FLAGS.train_data}: {error}")


def _starting_encoder(setup, task, head_options, strategy):
    """(--init_checkpoint's encoder or None, the task preset or None, head options); sets
    setup.encoder_preset and setup.preset, and checks --trainable_layers against them."""
    with strategy.scope():  # its variables are mirrored too
        encoder = run_setup.load_starting_encoder()
    setup.encoder_preset, preset, head_options = run_setup.resolve_preset(
        FLAGS.preset, encoder, task, head_options)
    setup.preset = preset or setup.encoder_preset
    shape = (transformer_of(encoder) if encoder is not None
             else ENCODER_PRESETS[setup.encoder_preset])
    setup.num_blocks = distinct_block_count(shape.num_layers, shape.share_layers)
    _check_trainable_layers(setup.num_blocks, setup.encoder_preset)
    return encoder, preset, head_options


def _check_trainable_layers(blocks, encoder_preset):
    """--trainable_layers against the encoder's distinct blocks, before anything is written."""
    if FLAGS.trainable_layers is not None and FLAGS.trainable_layers > blocks:
        raise UserError(f"--trainable_layers={FLAGS.trainable_layers}: the encoder "
                        f"({encoder_preset}) has {blocks} distinct blocks")


def _stage_lengths(setup):
    """Sets setup.unfreeze_every_steps and setup.chain_thaw_steps (None when off)."""
    setup.unfreeze_every_steps = ((FLAGS.unfreeze_every_steps or setup.steps_per_epoch)
                                  if FLAGS.gradual_unfreezing else None)
    setup.chain_thaw_steps = ((FLAGS.chain_thaw_steps
                               or default_chain_thaw_steps(setup.total_steps, setup.num_blocks))
                              if FLAGS.chain_thaw else None)


def _stage_callbacks(setup):
    """The callback that changes what trains during the run (gradual unfreezing or
    chain-thaw), or none."""
    if setup.unfreeze_every_steps:
        return [GradualUnfreezing(setup.unfreeze_every_steps)]
    if setup.chain_thaw_steps:
        return [ChainThaw(setup.chain_thaw_steps)]
    return []


def _datasets(setup, task, train_examples, eval_examples):
    """Sets setup.preprocessor, setup.eval_examples, setup.eval_dataset, setup.steps_per_epoch."""
    setup.preprocessor = task.make_preprocessor(setup.tokenizer, setup.lowercase,
                                                setup.max_seq_length)
    # Built before anything is written: an unseen evaluation label fails here.
    # Sentences longer than the window are evaluated in windows (word tasks).
    setup.eval_examples = task.prediction_examples(eval_examples, setup.preprocessor)
    try:
        setup.eval_dataset = task.make_dataset(setup.eval_examples, setup.preprocessor, setup.labels,
                                             training=False, batch_size=FLAGS.batch_size,
                                             seed=FLAGS.seed)
        # The first pass of the training stream (zoo.runs.training_loop): its batches counted;
        # a step is an update (of --gradient_accumulation_steps batches), an epoch whole ones.
        setup.steps_per_epoch = run_setup.updates_per_epoch(
            _count_batches(setup.make_pass(0)), FLAGS.gradient_accumulation_steps)
    except ValueError as error:
        raise UserError(str(error))


def _accumulation_note(setup):
    """What a step is under --gradient_accumulation_steps, for the start-up line ('' without)."""
    steps = setup.schedule.gradient_accumulation_steps
    if steps == 1:
        return ""
    return (f" (each an update of {steps} batches of {FLAGS.batch_size}: the updates of "
            f"batch {steps * FLAGS.batch_size})")


def _config(setup, task, train_examples, num_eval_examples):
    """The run's config.json (before training)."""
    task_options = task.options_dict()
    schedule, hardware = setup.schedule, setup.hardware
    return {
        "task": task.name, "task_options": task_options,
        "tag_scheme": task_options.get("tag_scheme"),
        "preset": setup.preset, "train_data": os.path.abspath(FLAGS.train_data),
        "eval_data": FLAGS.eval_data and os.path.abspath(FLAGS.eval_data),
        "validation_split": setup.validation_split, "data_format": FLAGS.data_format,
        "columns": {name: FLAGS[name].value for name in data_flags.COLUMN_FLAGS
                    if FLAGS[name].value is not None} or None,
        "vocab": FLAGS.vocab, "vocabulary_size": setup.tokenizer.vocabulary_size,
        "lowercase": setup.lowercase,
        "init_checkpoint": run_setup.checkpoint_reference(FLAGS.init_checkpoint),
        "labels": setup.labels, "epochs": schedule.epochs, "batch_size": FLAGS.batch_size,
        "learning_rate": schedule.learning_rate, "warmup_fraction": schedule.warmup_fraction,
        "clip_norm": schedule.clip_norm,
        "gradient_accumulation_steps": schedule.gradient_accumulation_steps,
        "early_stopping_patience": FLAGS.early_stopping_patience,
        "head_learning_rate": schedule.head_learning_rate,
        "layer_lr_decay": FLAGS.layer_lr_decay,
        "freeze_encoder": FLAGS.freeze_encoder, "trainable_layers": FLAGS.trainable_layers,
        "layer_mix": FLAGS.layer_mix, "adapter_size": FLAGS.adapter_size,
        "lora_rank": FLAGS.lora_rank,
        "gradual_unfreezing": FLAGS.gradual_unfreezing,
        "unfreeze_every_steps": setup.unfreeze_every_steps, "l2sp": FLAGS.l2sp,
        "ewc": FLAGS.ewc, "ewc_fisher": FLAGS.ewc_fisher if FLAGS.ewc else None,
        "ewc_fisher_batches": FLAGS.ewc_fisher_batches if FLAGS.ewc else None,
        "ewc_fisher_file": md.EWC_FISHER if FLAGS.ewc else None,
        "chain_thaw": FLAGS.chain_thaw, "chain_thaw_steps": setup.chain_thaw_steps,
        "auxiliary_mlm_weight": FLAGS.auxiliary_mlm_weight,
        "auxiliary_mlm_anneal": FLAGS.auxiliary_mlm_anneal,
        "schedule": FLAGS.schedule, "dropout": FLAGS.dropout,
        "max_seq_length": setup.max_seq_length, "seed": FLAGS.seed,
        "mixed_precision": hardware.policy, "jit_compile": hardware.jit_compile,
        "pack_length": hardware.pack_length,
        "steps_per_epoch": setup.steps_per_epoch, "total_steps": setup.total_steps,
        "checkpoint_every_steps": FLAGS.checkpoint_every_steps,
        "monitor": setup.monitor, "train_examples": len(train_examples),
        "eval_examples": num_eval_examples,
    }


def _build_model(setup, task, encoder, head_options, strategy):
    """The compiled task model, with what inference needs attached."""
    overrides = run_setup.model_overrides(
        setup.tokenizer.vocabulary_size, setup.schedule, setup.total_steps, setup.hardware,
        FLAGS.dropout,
        **head_options, **task.model_head_options(setup.labels),
        layer_lr_decay=FLAGS.layer_lr_decay, schedule=FLAGS.schedule,
        freeze_encoder=FLAGS.freeze_encoder, layer_mix=FLAGS.layer_mix,
        adapter_size=FLAGS.adapter_size, lora_rank=FLAGS.lora_rank, l2sp=FLAGS.l2sp,
        **({"trainable_layers": FLAGS.trainable_layers} if FLAGS.trainable_layers else {}))
    try:
        with strategy.scope():  # mirrored variables, optimizer and metrics
            model = build_task_model(task, setup.encoder_preset, encoder=encoder, **overrides)
            _load_pretrained_heads(task, model)
            if FLAGS.ewc:  # before the auxiliary MLM: the Fisher is the task loss's
                _anchor_with_ewc(setup, model)
            if FLAGS.auxiliary_mlm_weight:
                model.attach_auxiliary_mlm(auxiliary_mlm_for(
                    setup.preprocessor.tokenizer(), FLAGS.auxiliary_mlm_weight,
                    setup.max_seq_length,
                    anneal_steps=setup.total_steps if FLAGS.auxiliary_mlm_anneal else 0,
                    seed=FLAGS.seed))
    except ValueError as error:
        raise UserError(str(error))
    # What inference needs rides in the .keras file (vocabulary as an asset), so that
    # best_model.keras alone predicts, evaluates and exports (--model=...keras).
    model.attach_metadata(preprocessor=setup.preprocessor, task=task.name, labels=setup.labels,
                          task_options=task.options_dict(), preset=setup.preset,
                          data_format=FLAGS.data_format, task_module=type(task).__module__)
    return model


def _load_pretrained_heads(task, model):
    """The heads a task takes over from --init_checkpoint (`Task.pretrained_heads`: prompt
    classification's masked-LM head); a resumed run then restores its own trained ones."""
    if task.pretrained_heads:  # --init_checkpoint is there: `_task` checked
        load_pretraining_heads(model, FLAGS.init_checkpoint, required=task.pretrained_heads)


def _anchor_with_ewc(setup, model):
    """--ewc: the Fisher estimated at the starting weights (or read back when resuming)."""
    _, stored = anchor_with_ewc(model, FLAGS.ewc, FLAGS.model_dir, setup.make_pass(0),
                                FLAGS.ewc_fisher_batches)
    where = md.path(FLAGS.model_dir, md.EWC_FISHER)
    print(f"EWC: the Fisher of {where}" if stored else
          f"EWC: Fisher estimated on at most {FLAGS.ewc_fisher_batches} training batches, "
          f"saved to {where}", flush=True)


def _record_parameters(setup, config, model):
    """Adds the model's parameter counts to config.json; (trainable, total)."""
    trainable = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    total = sum(int(np.prod(v.shape)) for v in model.weights)
    config.update(trainable_parameters=trainable, total_parameters=total)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    return trainable, total


def _train(setup, task, model, strategy):
    """Trains (or finishes a killed setup) with `zoo.runs.training_loop`; the best checkpoint."""
    logs = md.path(FLAGS.model_dir, md.LOGS)
    distribution.build_for_fit(model, strategy, setup.make_pass(0))
    return train_resumably(
        model, model_dir=FLAGS.model_dir, make_pass=setup.make_pass,
        steps_per_epoch=setup.steps_per_epoch, epochs=setup.schedule.epochs,
        monitor=setup.monitor, mode=setup.mode, validation_data=setup.eval_dataset,
        task_callbacks=task.callbacks(setup.eval_dataset, setup.eval_examples, setup.labels,
                                      log_dir=os.path.join(logs, "validation"),
                                      tune_decoding=FLAGS.tune_decoding),
        extra_callbacks=_stage_callbacks(setup),
        checkpoint_every_steps=FLAGS.checkpoint_every_steps,
        log_every_steps=FLAGS.log_every_steps,
        early_stopping_patience=FLAGS.early_stopping_patience,
        shard=distribution.shard_by_data)


def _evaluate(setup, task, config):
    """Tunes the best model's decoding, evaluates it, writes the metrics, logs and card."""
    best = keras.saving.load_model(md.path(FLAGS.model_dir, md.BEST_MODEL))
    if FLAGS.tune_decoding:
        changes = task.tune_decoding(best, setup.eval_dataset, setup.eval_examples, setup.labels)
        if changes:
            task = task.with_options(**changes)
            md.update_task_options(changes, setup.eval_name, best, FLAGS.model_dir)
            print(f"decoding tuned on {setup.eval_name}: {json.dumps(changes)}", flush=True)
    metrics = task.evaluate(best, setup.eval_dataset, setup.eval_examples, setup.labels)
    md.write_json(metrics, md.path(FLAGS.model_dir, md.METRICS))
    write_hparams(md.path(FLAGS.model_dir, md.LOGS), config, metrics)
    write_model_card(FLAGS.model_dir, training_card(FLAGS.model_dir, sys.argv))
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)
    return metrics


def main(argv):
    strategy = distribution.make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    # Only the chief writes --model_dir; other workers write to a temporary directory.
    FLAGS.model_dir = distribution.worker_model_dir(FLAGS.model_dir, strategy)
    run_setup.normalize_init_checkpoint()
    task, head_options = _task()
    _check_adaptation_flags(strategy)
    setup = types.SimpleNamespace(hardware=run_setup.apply_hardware_flags(FLAGS, strategy))

    train_examples, eval_examples, setup.eval_name, setup.validation_split = (
        data_flags.read_training_data(task))
    task = _adapted_task(task, train_examples)
    encoder, preset, head_options = _starting_encoder(setup, task, head_options, strategy)
    setup.max_seq_length, setup.schedule = run_setup.fine_tuning_settings(
        encoder, setup.encoder_preset, task=task)
    setup.labels = task.label_names(train_examples)

    # Nothing is written (or removed) before the data and flags have passed every check.
    resuming = md.inspect(FLAGS.model_dir, FLAGS.overwrite) == "resume"
    setup.tokenizer = run_setup.resolve_tokenizer(
        FLAGS, lambda: task.texts(train_examples), resuming, learned_from=FLAGS.train_data)
    run_setup.check_vocabulary_fits(encoder, setup.tokenizer)
    setup.lowercase = setup.tokenizer.lowercase
    task = task.for_text_casing(setup.lowercase)  # e.g. casing features for an uncased encoder
    # Each pass in its own fixed (seed, pass) order, built once: counting the batches,
    # building the model and the training stream read the same pass 0.
    setup.make_pass = functools.lru_cache(maxsize=None)(lambda index: task.make_dataset(
        train_examples, setup.preprocessor, setup.labels, training=True,
        batch_size=FLAGS.batch_size, seed=(FLAGS.seed, index)))
    _datasets(setup, task, train_examples, eval_examples)
    setup.total_steps = setup.steps_per_epoch * setup.schedule.epochs
    setup.monitor, setup.mode = task.monitor(len(setup.labels))
    _stage_lengths(setup)
    config = _config(setup, task, train_examples, len(eval_examples))
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS, _RESUME_DEFAULTS)
    md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    md.save_run_tokenizer(FLAGS.model_dir, setup.tokenizer)
    md.write_json(setup.labels, md.path(FLAGS.model_dir, md.LABELS))

    model = _build_model(setup, task, encoder, head_options, strategy)
    trainable, total = _record_parameters(setup, config, model)
    print(f"training {preset or task.name + ' on ' + setup.encoder_preset} "
          f"({setup.hardware.policy}, jit_compile={setup.hardware.jit_compile}) on "
          f"{len(train_examples)} examples, {setup.steps_per_epoch} steps per epoch"
          f"{_accumulation_note(setup)}; "
          f"{trainable:,} of {total:,} parameters trainable", flush=True)
    print(f"distribution: {distribution.describe(strategy)}, global batch {FLAGS.batch_size}",
          flush=True)
    best_checkpoint = _train(setup, task, model, strategy)
    print(f"trained {int(model.optimizer.iterations.numpy())} steps; evaluating the best "
          f"model (epoch {best_checkpoint.best_epoch}) on {setup.eval_name}", flush=True)
    # One process and every worker print it: the same run on each agrees (docs/distributed.md).
    print(distribution.fingerprint_line(model), flush=True)
    print(json.dumps(_evaluate(setup, task, config), sort_keys=True))
    print(f"TensorBoard: tensorboard --logdir {os.path.abspath(md.path(FLAGS.model_dir, md.LOGS))}")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
