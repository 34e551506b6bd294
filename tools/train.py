"""Fine-tunes (or trains from scratch) a zoo preset on a task.

    python tools/train.py --task=classification --preset=bert_tiny \
        --train_data=train.label --eval_data=test.label --model_dir=runs/trec

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
import logging
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.layers import LAYER_MIXES, transformer_of  # noqa: E402
from nlpzoo.tasks.modeling.auxiliary_mlm import auxiliary_mlm_for  # noqa: E402
from nlpzoo.tasks.training.gradual_unfreezing import GradualUnfreezing  # noqa: E402
from nlpzoo.tasks.training.optimization import SCHEDULES  # noqa: E402
from nlpzoo.tasks.registry import get_task_class, task_names  # noqa: E402
from nlpzoo.tasks.training.tensorboard_hparams import write_hparams  # noqa: E402
from nlpzoo.tasks.text.tokenizer import build_vocabulary, read_vocabulary  # noqa: E402
from nlpzoo.tasks.training import distribution  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_hardware_flags,
    define_packing_flag,
    define_progress_flag,
    define_task_module_flag,
    define_training_loop_flags,
    resolve_pack_length,
    vocabulary_progress,
)
from nlpzoo.zoo.runs.model_card import training_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import train_resumably  # noqa: E402
from nlpzoo.zoo import (  # noqa: E402
    ENCODER_PRESETS,
    TASK_PRESETS,
    build_task_model,
    check_adaptation,
    get_preset,
)
from nlpzoo.zoo.checkpoints import (  # noqa: E402
    load_encoder,
    matching_encoder_preset,
    read_tokenizer_settings,
)
from nlpzoo.zoo.hardware import resolve_jit_compile, resolve_mixed_precision  # noqa: E402

FLAGS = flags.FLAGS
define_task_module_flag()
flags.DEFINE_string("preset", None, "Encoder preset (bert_tiny, ...) or task preset "
                    "(bert_tiny_classifier, bert_tiny_crf_tagger, ...); it gives the "
                    "fine-tuning defaults. By default the encoder preset with the shape of "
                    "--init_checkpoint (else the nearest), or bert_tiny without one.")
flags.DEFINE_string("task", "classification", "The task: a registered task name ("
                    f"{', '.join(task_names())}, or one of a --task_module).")
for _name in task_names():
    get_task_class(_name).define_flags(FLAGS)
flags.DEFINE_string("train_data", None, "Training data file.")
flags.DEFINE_string("eval_data", None, "Validation data file (picks the best model).")
flags.DEFINE_string("data_format", None, "Data format; inferred from the file when omitted.")
flags.DEFINE_string("vocab", None, "vocab.txt to use; by default the --init_checkpoint's, or "
                    "one learned from the training text.")
flags.DEFINE_string("init_checkpoint", None, "A checkpoint directory whose encoder weights "
                    "start training: Hugging Face BERT (config.json, model.safetensors, "
                    "vocab.txt), a KerasHub BertBackbone preset (save_to_preset), or ours "
                    "(encoder.keras; a tools/pretrain.py run directory stands for its "
                    "encoder/).")
flags.DEFINE_integer("vocab_size", 8000, "Size of a vocabulary learned from the training text.",
                     lower_bound=100)
flags.DEFINE_boolean("lowercase", True, "Lower-case and strip accents before WordPiece.")
flags.DEFINE_string("model_dir", None, "Output directory.")
flags.DEFINE_boolean("overwrite", False, "Replace a finished model in --model_dir.")
flags.DEFINE_integer("epochs", None, "Training epochs (at most, with early stopping); the "
                     "preset's default when omitted.", lower_bound=1)
flags.DEFINE_integer("early_stopping_patience", None, "Stop when the validation metric that "
                     "picks the best model has not improved for this many epochs; the best "
                     "epoch's model is the one kept and evaluated.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Examples per batch: the global batch, split over "
                     "the replicas of --distribution_strategy.", lower_bound=1)
flags.DEFINE_float("learning_rate", None, "Peak learning rate; the preset's default when "
                   "omitted.", lower_bound=0.0)
flags.DEFINE_float("head_learning_rate", None, "Peak learning rate of what starts from "
                   "scratch (the task head, CRF transitions, span scorer) on a pretrained "
                   "encoder; the preset's default when omitted (without --init_checkpoint "
                   "everything starts from scratch and learns at --learning_rate).",
                   lower_bound=0.0)
flags.DEFINE_float("layer_lr_decay", 1.0, "Discriminative fine-tuning: block l of L learns at "
                   "decay^(L-1-l) x the learning rate, the embeddings at decay^L (1: off).",
                   lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_boolean("freeze_encoder", False, "Feature extraction: the encoder's weights stay "
                     "as they start; only the task head (and a --layer_mix) trains.")
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
flags.DEFINE_float("warmup_fraction", None, "Fraction of steps of linear warm-up before the "
                   "schedule's decay; the preset's default when omitted.", lower_bound=0.0,
                   upper_bound=1.0)
flags.DEFINE_float("dropout", None, "Dropout rate; the preset's default when omitted.",
                   lower_bound=0.0, upper_bound=0.99)
flags.DEFINE_integer("max_seq_length", None, "Longest packed sequence, in wordpieces; the "
                     "preset's default (at most the encoder's positions) when omitted.",
                     lower_bound=8)
flags.DEFINE_boolean("tune_decoding", True, "After training, let the task tune its decoding "
                     "on --eval_data (span NER: the F1-best threshold, as tools/calibrate.py "
                     "does) before the final evaluation.")
flags.DEFINE_integer("seed", 42, "Random seed.")
define_hardware_flags()
define_packing_flag()
define_training_loop_flags()
define_progress_flag()
distribution.define_distribution_flags()
flags.mark_flags_as_required(["train_data", "eval_data", "model_dir"])

# Settings that shape the model or data: a resumed run must not change them.
_RESUME_KEYS = ("task", "task_options", "preset", "train_data", "max_seq_length", "lowercase", "labels",
                "vocabulary_size", "batch_size", "epochs", "learning_rate", "layer_mix",
                "adapter_size", "lora_rank", "gradual_unfreezing", "unfreeze_every_steps",
                "schedule", "auxiliary_mlm_weight", "auxiliary_mlm_anneal")


def _resolve_preset(task, head_options, encoder):
    """(encoder preset, task preset or None, head options) from --preset.

    A task preset gives its encoder and head; an encoder preset takes the
    task's head options from its flags and, when the zoo has one, the name of
    the matching task preset (kept in config.json). Without --preset, the
    encoder preset of the --init_checkpoint's shape (else the nearest) gives
    the defaults, or bert_tiny without a checkpoint.
    """
    if FLAGS.preset is None:
        name = matching_encoder_preset(transformer_of(encoder)) if encoder else "bert_tiny"
    else:
        name = FLAGS.preset
    if name in TASK_PRESETS:
        preset = TASK_PRESETS[name]
        if preset.task != task.name:
            raise UserError(f"--preset={name} is a {preset.task} preset, "
                            f"not one for --task={task.name}")
        return preset.encoder, name, {**head_options, **preset.head_options}
    if name in ENCODER_PRESETS:
        task_preset = task.preset_for(name, head_options)
        return name, task_preset if task_preset in TASK_PRESETS else None, head_options
    try:
        get_preset(name)
    except ValueError as error:
        raise UserError(f"--preset: {error}")


@functools.lru_cache(maxsize=None)
def _checkpoint_tokenizer_settings(path):
    """(vocabulary, lowercase) of --init_checkpoint, in any checkpoint format."""
    try:
        return read_tokenizer_settings(path)
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={path}: {error}")


def _vocabulary(task, examples, resuming):
    if FLAGS.vocab:
        return read_vocabulary(FLAGS.vocab)
    if FLAGS.init_checkpoint:
        return _checkpoint_tokenizer_settings(FLAGS.init_checkpoint)[0]
    if resuming and os.path.exists(md.path(FLAGS.model_dir, md.VOCAB)):
        return md.load_vocabulary(FLAGS.model_dir)
    logging.info("learning a %d-token WordPiece vocabulary from %s", FLAGS.vocab_size,
                 FLAGS.train_data)
    try:
        with vocabulary_progress(FLAGS.progress):
            return build_vocabulary(task.texts(examples), FLAGS.vocab_size, FLAGS.lowercase)
    except ValueError as error:  # e.g. below the minimum size for the text's characters
        raise UserError(f"--vocab_size={FLAGS.vocab_size}: {error}")


def _count_batches(dataset):
    return int(dataset.reduce(0, lambda count, _: count + 1))


def _load_encoder():
    """The --init_checkpoint encoder, or None without one."""
    if not FLAGS.init_checkpoint:
        return None
    encoder_options = {"dropout": FLAGS.dropout} if FLAGS.dropout is not None else {}
    try:
        return load_encoder(FLAGS.init_checkpoint, **encoder_options)
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: {error}")


def _max_seq_length(encoder, encoder_preset, preset, defaults):
    """--max_seq_length, else the preset's default, within the encoder's positions."""
    if encoder is not None:
        positions, source = transformer_of(encoder).max_sequence_length, "--init_checkpoint"
    else:
        positions = ENCODER_PRESETS[encoder_preset].max_sequence_length
        source = preset or encoder_preset
    if FLAGS.max_seq_length is None:
        return min(defaults.max_seq_length, positions)
    if FLAGS.max_seq_length > positions:
        raise UserError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the "
                        f"{positions} positions of {source}")
    return FLAGS.max_seq_length


def _check_adaptation_flags():
    """Conflicting adaptation flags fail before anything is read or written."""
    try:
        check_adaptation(dict(freeze_encoder=FLAGS.freeze_encoder, layer_mix=FLAGS.layer_mix,
                              adapter_size=FLAGS.adapter_size, lora_rank=FLAGS.lora_rank,
                              l2sp=FLAGS.l2sp))
    except ValueError as error:
        raise UserError(f"{error} (--freeze_encoder, --adapter_size, --lora_rank, --l2sp)")
    if FLAGS.auxiliary_mlm_weight and FLAGS.freeze_encoder:
        raise UserError("--auxiliary_mlm_weight trains the encoder with a masked-LM loss; "
                        "it cannot be combined with --freeze_encoder")
    if FLAGS.auxiliary_mlm_anneal and not FLAGS.auxiliary_mlm_weight:
        raise UserError("--auxiliary_mlm_anneal needs --auxiliary_mlm_weight > 0")
    if FLAGS.gradual_unfreezing and (FLAGS.freeze_encoder or FLAGS.adapter_size
                                     or FLAGS.lora_rank):
        raise UserError("--gradual_unfreezing unfreezes the whole encoder in turn; it "
                        "cannot be combined with --freeze_encoder, --adapter_size or "
                        "--lora_rank")


def main(argv):
    strategy = distribution.make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    # Only the chief writes --model_dir; other workers write to a temporary directory.
    FLAGS.model_dir = distribution.worker_model_dir(FLAGS.model_dir, strategy)
    if FLAGS.init_checkpoint:  # a tools/pretrain.py run directory stands for its encoder/
        FLAGS.init_checkpoint = md.encoder_checkpoint(FLAGS.init_checkpoint)
    try:
        task_class = get_task_class(FLAGS.task)
        if not task_class.trainable:
            raise ValueError("this task is not trained: its model works on a pretrained "
                             "encoder as it is (no labels, no loss); build it with "
                             f"tools/export.py --task={FLAGS.task} --init_checkpoint=<dir>")
        task_options, head_options = task_class.options_from_flags(FLAGS)
        task = task_class(**task_options)
    except ValueError as error:
        raise UserError(f"--task={FLAGS.task}: {error}")
    _check_adaptation_flags()
    if FLAGS.data_format and FLAGS.data_format not in task.formats:
        raise UserError(f"--data_format={FLAGS.data_format} is not one of "
                        f"{', '.join(task.formats)} for --task={task.name}")
    policy = resolve_mixed_precision(FLAGS.mixed_precision)
    jit_compile = resolve_jit_compile(FLAGS.jit_compile)
    distribution.check_jit_compile(strategy, jit_compile)
    try:
        pack_length = resolve_pack_length(FLAGS.pack_length, jit_compile)
    except ValueError as error:
        raise UserError(str(error))
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(FLAGS.seed)

    train_examples = task.read(FLAGS.train_data, FLAGS.data_format)
    eval_examples = task.read(FLAGS.eval_data, FLAGS.data_format)
    task = task.adapt(train_examples)
    with strategy.scope():  # its variables are mirrored too
        encoder = _load_encoder()
    encoder_preset, preset, head_options = _resolve_preset(task, head_options, encoder)
    defaults = ENCODER_PRESETS[encoder_preset].fine_tuning
    max_seq_length = _max_seq_length(encoder, encoder_preset, preset, defaults)
    epochs = FLAGS.epochs or defaults.epochs
    learning_rate = FLAGS.learning_rate or defaults.learning_rate
    head_learning_rate = FLAGS.head_learning_rate
    if head_learning_rate is None and encoder is not None:
        head_learning_rate = defaults.head_learning_rate
    warmup_fraction = FLAGS.warmup_fraction
    if warmup_fraction is None:
        warmup_fraction = defaults.warmup_fraction
    labels = task.label_names(train_examples)

    # Nothing is written (or removed) before the data and flags have passed every check.
    resuming = md.inspect(FLAGS.model_dir, FLAGS.overwrite) == "resume"
    tokens = _vocabulary(task, train_examples, resuming)
    lowercase = FLAGS.lowercase
    if FLAGS.init_checkpoint and not FLAGS.vocab:
        lowercase = _checkpoint_tokenizer_settings(FLAGS.init_checkpoint)[1]
    if encoder is not None and transformer_of(encoder).vocabulary_size != len(tokens):
        raise UserError(f"the vocabulary has {len(tokens)} tokens but --init_checkpoint "
                        f"has {transformer_of(encoder).vocabulary_size} token embeddings")
    task = task.for_text_casing(lowercase)  # e.g. casing features for an uncased encoder
    preprocessor = task.make_preprocessor(tokens, lowercase, max_seq_length)
    options = dict(batch_size=FLAGS.batch_size, seed=FLAGS.seed)
    # Built before anything is written: an unseen evaluation label fails here.
    # Sentences longer than the window are evaluated in windows (word tasks).
    num_eval_examples = len(eval_examples)
    eval_examples = task.prediction_examples(eval_examples, preprocessor)
    try:
        eval_dataset = task.make_dataset(eval_examples, preprocessor, labels, training=False,
                                         **options)
        # The first pass of the training stream (tools.training_loop): its batches counted.
        train_dataset = task.make_dataset(train_examples, preprocessor, labels, training=True,
                                          batch_size=FLAGS.batch_size, seed=(FLAGS.seed, 0))
    except ValueError as error:
        raise UserError(str(error))
    steps_per_epoch = _count_batches(train_dataset)
    total_steps = steps_per_epoch * epochs
    monitor, mode = task.monitor(len(labels))
    unfreeze_every_steps = None
    if FLAGS.gradual_unfreezing:
        unfreeze_every_steps = FLAGS.unfreeze_every_steps or steps_per_epoch

    task_options = task.options_dict()
    config = {
        "task": task.name, "task_options": task_options,
        "tag_scheme": task_options.get("tag_scheme"),
        "preset": preset or encoder_preset, "train_data": os.path.abspath(FLAGS.train_data),
        "eval_data": os.path.abspath(FLAGS.eval_data), "data_format": FLAGS.data_format,
        "vocab": FLAGS.vocab, "vocabulary_size": len(tokens), "lowercase": lowercase,
        "init_checkpoint": FLAGS.init_checkpoint and os.path.abspath(FLAGS.init_checkpoint),
        "labels": labels, "epochs": epochs, "batch_size": FLAGS.batch_size,
        "learning_rate": learning_rate, "warmup_fraction": warmup_fraction,
        "early_stopping_patience": FLAGS.early_stopping_patience,
        "head_learning_rate": head_learning_rate, "layer_lr_decay": FLAGS.layer_lr_decay,
        "freeze_encoder": FLAGS.freeze_encoder, "layer_mix": FLAGS.layer_mix,
        "adapter_size": FLAGS.adapter_size, "lora_rank": FLAGS.lora_rank,
        "gradual_unfreezing": FLAGS.gradual_unfreezing,
        "unfreeze_every_steps": unfreeze_every_steps, "l2sp": FLAGS.l2sp,
        "auxiliary_mlm_weight": FLAGS.auxiliary_mlm_weight,
        "auxiliary_mlm_anneal": FLAGS.auxiliary_mlm_anneal,
        "schedule": FLAGS.schedule, "dropout": FLAGS.dropout, "max_seq_length": max_seq_length,
        "seed": FLAGS.seed, "mixed_precision": policy, "jit_compile": jit_compile,
        "pack_length": pack_length,
        "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
        "checkpoint_every_steps": FLAGS.checkpoint_every_steps,
        "monitor": monitor, "train_examples": len(train_examples),
        "eval_examples": num_eval_examples,
    }
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS)
    md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    md.save_vocabulary(FLAGS.model_dir, tokens)
    md.write_json(labels, md.path(FLAGS.model_dir, md.LABELS))

    overrides = dict(head_options, **task.model_head_options(labels),
                     vocabulary_size=len(tokens), learning_rate=learning_rate,
                     total_steps=total_steps, warmup_steps=int(warmup_fraction * total_steps),
                     jit_compile=jit_compile, layer_lr_decay=FLAGS.layer_lr_decay,
                     schedule=FLAGS.schedule, freeze_encoder=FLAGS.freeze_encoder,
                     layer_mix=FLAGS.layer_mix, adapter_size=FLAGS.adapter_size,
                     lora_rank=FLAGS.lora_rank, l2sp=FLAGS.l2sp,
                     pack_length=pack_length)
    if head_learning_rate is not None:
        overrides["head_learning_rate"] = head_learning_rate
    if FLAGS.dropout is not None:
        overrides["dropout"] = FLAGS.dropout
    try:
        with strategy.scope():  # mirrored variables, optimizer and metrics
            model = build_task_model(task, encoder_preset, encoder=encoder,
                                     **overrides)
            if FLAGS.auxiliary_mlm_weight:
                model.attach_auxiliary_mlm(auxiliary_mlm_for(
                    preprocessor.tokenizer(), FLAGS.auxiliary_mlm_weight, max_seq_length,
                    anneal_steps=total_steps if FLAGS.auxiliary_mlm_anneal else 0,
                    seed=FLAGS.seed))
    except ValueError as error:
        raise UserError(str(error))
    trainable = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    total = sum(int(np.prod(v.shape)) for v in model.weights)
    config.update(trainable_parameters=trainable, total_parameters=total)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    # What inference needs rides in the .keras file (vocabulary as an asset), so that
    # best_model.keras alone predicts, evaluates and exports (--model=...keras).
    model.attach_metadata(preprocessor=preprocessor, task=task.name, labels=labels,
                          task_options=task_options, preset=preset or encoder_preset,
                          data_format=FLAGS.data_format,
                          task_module=type(task).__module__)
    logs = md.path(FLAGS.model_dir, md.LOGS)
    print(f"training {preset or task.name + ' on ' + encoder_preset} ({policy}, "
          f"jit_compile={jit_compile}) on {len(train_examples)} examples, "
          f"{steps_per_epoch} steps per epoch; {trainable:,} of {total:,} parameters "
          "trainable", flush=True)
    print(f"distribution: {distribution.describe(strategy)}, global batch {FLAGS.batch_size}",
          flush=True)

    def make_pass(index):  # each pass in its own order, fixed by (seed, pass)
        return task.make_dataset(train_examples, preprocessor, labels, training=True,
                                 batch_size=FLAGS.batch_size, seed=(FLAGS.seed, index))

    distribution.build_for_fit(model, strategy, train_dataset)
    best_checkpoint = train_resumably(
        model, model_dir=FLAGS.model_dir, make_pass=make_pass,
        steps_per_epoch=steps_per_epoch, epochs=epochs, monitor=monitor, mode=mode,
        validation_data=eval_dataset,
        task_callbacks=task.callbacks(eval_dataset, eval_examples, labels,
                                      log_dir=os.path.join(logs, "validation")),
        extra_callbacks=[GradualUnfreezing(unfreeze_every_steps)] if unfreeze_every_steps
        else [],
        checkpoint_every_steps=FLAGS.checkpoint_every_steps,
        log_every_steps=FLAGS.log_every_steps,
        early_stopping_patience=FLAGS.early_stopping_patience,
        shard=distribution.shard_by_data)
    print(f"trained {int(model.optimizer.iterations.numpy())} steps; evaluating the best "
          f"model (epoch {best_checkpoint.best_epoch}) on {FLAGS.eval_data}", flush=True)
    if strategy.num_replicas_in_sync > 1:
        print(f"final weights: {distribution.weights_fingerprint(model)}", flush=True)

    best = keras.saving.load_model(md.path(FLAGS.model_dir, md.BEST_MODEL))
    if FLAGS.tune_decoding:
        changes = task.tune_decoding(best, eval_dataset, eval_examples, labels)
        if changes:
            task = task.with_options(**changes)
            md.update_task_options(changes, FLAGS.eval_data, best, FLAGS.model_dir)
            print(f"decoding tuned on {FLAGS.eval_data}: {json.dumps(changes)}", flush=True)
    metrics = task.evaluate(best, eval_dataset, eval_examples, labels)
    md.write_json(metrics, md.path(FLAGS.model_dir, md.METRICS))
    write_hparams(logs, config, metrics)
    write_model_card(FLAGS.model_dir, training_card(FLAGS.model_dir, sys.argv))
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)
    print(json.dumps(metrics, sort_keys=True))
    print(f"TensorBoard: tensorboard --logdir {os.path.abspath(md.path(FLAGS.model_dir, md.LOGS))}")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
