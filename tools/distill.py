"""Knowledge distillation: trains a student on a trained teacher's softened outputs.

    python tools/distill.py --teacher=runs/trec_minilm --preset=bert_tiny \
        --train_data=train.label --eval_data=dev.label --model_dir=runs/trec_tiny \
        --alpha=0.5 --temperature=2 [--unlabeled_data=questions.txt]

The student is a normal task model of the teacher's task and labels (a
classifier, or a tagger with the --head asked for), on a new encoder of
--preset or on --init_checkpoint's, with a tokenizer of its own: it predicts,
evaluates and exports like any model of tools/train.py, and its --model_dir
has the same layout (config.json, vocab.txt, labels.json, best_model.keras,
metrics.json, logs/, README.md), plus distillation.json: teacher and student
side by side on --eval_data (their metrics, parameters and predict
throughput in examples per second at the same --batch_size).

The loss is (1 - alpha) * hard-label loss + alpha * T^2 * KL(teacher_T || student_T),
per example (classification) or per word (tagging; a CRF teacher gives its
per-word marginals at T). The teacher runs once, before training, over the
training data and --unlabeled_data (plain text, one example per line; only
the soft-target loss sees it). The best model is picked on --eval_data by the
task's metric, as tools/train.py does, and the training loop is the same
(`zoo.runs.training_loop`): an interrupted run (killed, or stopped with Ctrl-C)
resumes from its last saved step, on the same batches, when started again
with the same flags.
"""

import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.layers import transformer_of  # noqa: E402
from nlpzoo.tasks.distillation import (  # noqa: E402
    distillation_dataset,
    family_of,
    teacher_targets,
    use_distillation_loss,
)
from nlpzoo.tasks.registry import get_task_class, task_names  # noqa: E402
from nlpzoo.tasks.training.tensorboard_hparams import write_hparams  # noqa: E402
from nlpzoo.tasks.text.tokenizer import build_vocabulary, read_vocabulary  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_hardware_flags,
    define_packing_flag,
    define_task_module_flag,
    define_training_loop_flags,
    resolve_pack_length,
)
from nlpzoo.zoo.runs.model_card import file_facts, training_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import train_resumably  # noqa: E402
from nlpzoo.zoo import ENCODER_PRESETS, build_task_model  # noqa: E402
from nlpzoo.zoo.checkpoints import read_tokenizer_settings  # noqa: E402
from nlpzoo.zoo.hardware import resolve_jit_compile, resolve_mixed_precision  # noqa: E402

COMPARISON = "distillation.json"

FLAGS = flags.FLAGS
define_task_module_flag()
flags.DEFINE_string("teacher", None, "The teacher: a model directory written by "
                    "tools/train.py (or tools/distill.py), or a .keras file of one.")
flags.DEFINE_string("preset", None, "The student's encoder preset (bert_tiny, ...). By "
                    "default the preset of --init_checkpoint's shape, or bert_tiny.")
flags.DEFINE_string("init_checkpoint", None, "A checkpoint directory whose encoder weights "
                    "start the student (any format tools/train.py reads).")
for _name in task_names():
    get_task_class(_name).define_flags(FLAGS)
flags.DEFINE_string("train_data", None, "Labelled training data of the teacher's task.")
flags.DEFINE_string("eval_data", None, "Validation data (picks the best student).")
flags.DEFINE_string("unlabeled_data", None, "Plain text, one example (a text, or a "
                    "sentence of words) per line: more soft targets, no hard labels.")
flags.DEFINE_string("data_format", None, "Data format; inferred from the file when omitted.")
flags.DEFINE_float("alpha", 0.5, "Weight of the soft-target loss; 1 - alpha weighs the "
                   "hard-label loss.", lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float("temperature", 2.0, "Softmax temperature T of teacher and student in the "
                   "soft-target loss (which is multiplied by T^2).", lower_bound=1e-3)
flags.DEFINE_string("vocab", None, "The student's vocab.txt; by default --init_checkpoint's, "
                    "or one learned from the training (and unlabelled) text.")
flags.DEFINE_integer("vocab_size", 8000, "Size of a vocabulary learned from the text.",
                     lower_bound=100)
flags.DEFINE_boolean("lowercase", True, "Lower-case and strip accents before WordPiece.")
flags.DEFINE_string("model_dir", None, "Output directory of the student.")
flags.DEFINE_boolean("overwrite", False, "Replace a finished model in --model_dir.")
flags.DEFINE_integer("epochs", None, "Training epochs; the preset's default when omitted.",
                     lower_bound=1)
flags.DEFINE_integer("early_stopping_patience", None, "Stop when the validation metric has "
                     "not improved for this many epochs.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Examples per batch (training, teacher and the "
                     "throughput comparison).", lower_bound=1)
flags.DEFINE_float("learning_rate", None, "Peak learning rate; the preset's default when "
                   "omitted.", lower_bound=0.0)
flags.DEFINE_float("warmup_fraction", None, "Fraction of steps of linear warm-up; the "
                   "preset's default when omitted.", lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float("dropout", None, "Dropout rate; the preset's default when omitted.",
                   lower_bound=0.0, upper_bound=0.99)
flags.DEFINE_integer("max_seq_length", None, "The student's longest packed sequence; the "
                     "preset's default (at most the encoder's positions) when omitted.",
                     lower_bound=8)
flags.DEFINE_integer("seed", 42, "Random seed.")
define_hardware_flags()
define_packing_flag()
define_training_loop_flags()
flags.mark_flags_as_required(["teacher", "train_data", "eval_data", "model_dir"])

# Settings that shape the model or data: a resumed run must not change them.
_RESUME_KEYS = ("teacher", "task", "task_options", "preset", "train_data", "unlabeled_data",
                "alpha", "temperature", "max_seq_length", "lowercase", "labels",
                "vocabulary_size", "batch_size", "epochs", "learning_rate")


def _load_teacher():
    """The teacher's `TrainedModel`; errors name --teacher."""
    path = FLAGS.teacher
    if not os.path.exists(path):
        raise UserError(f"--teacher={path}: no such model directory or .keras file")
    try:
        if os.path.isdir(path):
            return md.load_trained(model_dir=path)
        return md.load_trained(model_path=path)
    except UserError as error:
        message = str(error)
        for flag in (f"--model_dir={path}", f"--model={path}"):
            message = message.replace(flag, f"--teacher={path}")
        raise UserError(message) from None


def _student_encoder():
    """(--init_checkpoint's encoder or None, encoder preset name) from --init_checkpoint and
    --preset."""
    if FLAGS.init_checkpoint:  # a run directory stands for its encoder/
        FLAGS.init_checkpoint = md.encoder_checkpoint(FLAGS.init_checkpoint)
    return md.encoder_and_preset(FLAGS.init_checkpoint, FLAGS.preset, FLAGS.dropout)


def _vocabulary(task, examples, resuming):
    """(tokens, lowercase) of the student's tokenizer."""
    if FLAGS.vocab:
        return read_vocabulary(FLAGS.vocab), FLAGS.lowercase
    if FLAGS.init_checkpoint:
        try:
            return read_tokenizer_settings(FLAGS.init_checkpoint)
        except (ValueError, OSError) as error:
            raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: {error}")
    if resuming and os.path.exists(md.path(FLAGS.model_dir, md.VOCAB)):
        return md.load_vocabulary(FLAGS.model_dir), FLAGS.lowercase
    try:
        return build_vocabulary(task.texts(examples), FLAGS.vocab_size,
                                FLAGS.lowercase), FLAGS.lowercase
    except ValueError as error:
        raise UserError(f"--vocab_size={FLAGS.vocab_size}: {error}")


def _max_seq_length(encoder, encoder_preset, default):
    positions = (transformer_of(encoder).max_sequence_length if encoder is not None
                 else ENCODER_PRESETS[encoder_preset].max_sequence_length)
    if FLAGS.max_seq_length is None:
        return min(default, positions)
    if FLAGS.max_seq_length > positions:
        raise UserError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the student "
                        f"encoder's {positions} positions")
    return FLAGS.max_seq_length


def _unlabeled_examples(task, family, labels):
    if not FLAGS.unlabeled_data:
        return []
    examples = task.read_prediction_input(FLAGS.unlabeled_data, input_format="text")
    return [family.with_placeholder_label(example, labels) for example in examples]


def _parameters(model):
    return sum(int(np.prod(v.shape)) for v in model.weights)


def _side(task, model, preprocessor, raw_eval_examples, labels):
    """Metrics, parameters and predict throughput of one model on the validation data."""
    examples = task.prediction_examples(raw_eval_examples, preprocessor)
    dataset = task.make_dataset(examples, preprocessor, labels, batch_size=FLAGS.batch_size)
    metrics = task.evaluate(model, dataset, examples, labels)
    model.predict(dataset, verbose=0)  # traced for every length bucket before timing
    start = time.perf_counter()
    model.predict(dataset, verbose=0)
    seconds = time.perf_counter() - start
    return {"metrics": metrics, "parameters": _parameters(model),
            "predict_examples_per_second": round(len(raw_eval_examples) / seconds, 1),
            "predict_seconds": round(seconds, 3)}


def _card(config):
    card = training_card(FLAGS.model_dir, sys.argv)
    card["title"] = f"{config['task']} model distilled from {config['teacher']}"
    card["summary"] = (
        "Trained with `tools/distill.py` on a teacher's soft targets (alpha "
        f"{config['alpha']}, temperature {config['temperature']}); `{COMPARISON}` compares "
        "it with the teacher. Load it with `keras.saving.load_model(\"best_model.keras\")` "
        "after `import zoo`, or use it with `tools/predict.py --model_dir=<this directory>`.")
    card["model_facts"].append(("Teacher", f"{config['teacher']} "
                                f"({config['teacher_parameters']:,} parameters)"))
    if config["unlabeled_data"]:
        card["data"].append(file_facts(config["unlabeled_data"], "unlabelled (soft targets)"))
    return card


def main(argv):
    teacher = _load_teacher()
    try:
        family = family_of(teacher.task)
    except ValueError as error:
        raise UserError(f"--teacher={FLAGS.teacher}: {error}")
    task, labels = family.student_task(teacher.task), teacher.labels
    if FLAGS.data_format and FLAGS.data_format not in task.formats:
        raise UserError(f"--data_format={FLAGS.data_format} is not one of "
                        f"{', '.join(task.formats)} for a {task.name} teacher")
    _, head_options = type(task).options_from_flags(FLAGS)
    policy = resolve_mixed_precision(FLAGS.mixed_precision)
    jit_compile = resolve_jit_compile(FLAGS.jit_compile)
    try:
        pack_length = resolve_pack_length(FLAGS.pack_length, jit_compile)
    except ValueError as error:
        raise UserError(str(error))
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(FLAGS.seed)

    train_examples = task.read(FLAGS.train_data, FLAGS.data_format)
    raw_eval_examples = task.read(FLAGS.eval_data, FLAGS.data_format)
    unlabeled = _unlabeled_examples(task, family, labels)
    examples = list(train_examples) + unlabeled
    labelled = [True] * len(train_examples) + [False] * len(unlabeled)
    encoder, encoder_preset = _student_encoder()
    defaults = ENCODER_PRESETS[encoder_preset].fine_tuning
    max_seq_length = _max_seq_length(encoder, encoder_preset, defaults.max_seq_length)
    epochs = FLAGS.epochs or defaults.epochs
    learning_rate = FLAGS.learning_rate or defaults.learning_rate
    warmup_fraction = (defaults.warmup_fraction if FLAGS.warmup_fraction is None
                       else FLAGS.warmup_fraction)

    # Nothing is written (or removed) before the data and flags have passed every check.
    resuming = md.inspect(FLAGS.model_dir, FLAGS.overwrite) == "resume"
    tokens, lowercase = _vocabulary(task, examples, resuming)
    if encoder is not None and transformer_of(encoder).vocabulary_size != len(tokens):
        raise UserError(f"the vocabulary has {len(tokens)} tokens but --init_checkpoint "
                        f"has {transformer_of(encoder).vocabulary_size} token embeddings")
    task = task.for_text_casing(lowercase)
    preprocessor = task.make_preprocessor(tokens, lowercase, max_seq_length)
    eval_examples = task.prediction_examples(raw_eval_examples, preprocessor)
    try:
        eval_dataset = task.make_dataset(eval_examples, preprocessor, labels, training=False,
                                         batch_size=FLAGS.batch_size)
        print(f"teacher: soft targets at T={FLAGS.temperature} for {len(examples)} examples",
              flush=True)
        targets = teacher_targets(teacher.model, teacher.task, family, examples,
                                  teacher.preprocessor, labels, FLAGS.temperature,
                                  batch_size=FLAGS.batch_size)

        def make_pass(index):  # each pass in its own order, fixed by (seed, pass)
            return distillation_dataset(task, examples, labelled, targets, preprocessor,
                                        labels, batch_size=FLAGS.batch_size,
                                        seed=(FLAGS.seed, index))

        train_dataset = make_pass(0)
    except ValueError as error:  # a label the teacher does not know names its line
        raise UserError(str(error))
    steps_per_epoch = int(train_dataset.reduce(0, lambda count, _: count + 1))
    total_steps = steps_per_epoch * epochs
    monitor, mode = task.monitor(len(labels))

    task_options = task.options_dict()
    config = {
        "task": task.name, "task_options": task_options,
        "tag_scheme": task_options.get("tag_scheme"), "preset": encoder_preset,
        "teacher": os.path.abspath(FLAGS.teacher), "alpha": FLAGS.alpha,
        "temperature": FLAGS.temperature,
        "train_data": os.path.abspath(FLAGS.train_data),
        "eval_data": os.path.abspath(FLAGS.eval_data),
        "unlabeled_data": FLAGS.unlabeled_data and os.path.abspath(FLAGS.unlabeled_data),
        "data_format": FLAGS.data_format, "vocab": FLAGS.vocab,
        "vocabulary_size": len(tokens), "lowercase": lowercase,
        "init_checkpoint": FLAGS.init_checkpoint and os.path.abspath(FLAGS.init_checkpoint),
        "labels": labels, "epochs": epochs, "batch_size": FLAGS.batch_size,
        "learning_rate": learning_rate, "warmup_fraction": warmup_fraction,
        "early_stopping_patience": FLAGS.early_stopping_patience, "dropout": FLAGS.dropout,
        "max_seq_length": max_seq_length, "seed": FLAGS.seed, "mixed_precision": policy,
        "jit_compile": jit_compile, "pack_length": pack_length,
        "steps_per_epoch": steps_per_epoch,
        "total_steps": total_steps, "monitor": monitor,
        "checkpoint_every_steps": FLAGS.checkpoint_every_steps,
        "train_examples": len(train_examples), "unlabeled_examples": len(unlabeled),
        "eval_examples": len(raw_eval_examples),
        "teacher_parameters": _parameters(teacher.model),
    }
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS)
    md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    if os.path.exists(md.path(FLAGS.model_dir, COMPARISON)):  # of an overwritten run
        os.remove(md.path(FLAGS.model_dir, COMPARISON))
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    md.save_vocabulary(FLAGS.model_dir, tokens)
    md.write_json(labels, md.path(FLAGS.model_dir, md.LABELS))

    overrides = dict(head_options, **task.model_head_options(labels),
                     vocabulary_size=len(tokens), learning_rate=learning_rate,
                     total_steps=total_steps, warmup_steps=int(warmup_fraction * total_steps),
                     jit_compile=jit_compile, pack_length=pack_length)
    if FLAGS.dropout is not None:
        overrides["dropout"] = FLAGS.dropout
    try:
        student = build_task_model(task, encoder_preset, encoder=encoder, **overrides)
    except ValueError as error:
        raise UserError(str(error))
    config.update(trainable_parameters=sum(int(np.prod(v.shape))
                                           for v in student.trainable_variables),
                  total_parameters=_parameters(student))
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    student.attach_metadata(preprocessor=preprocessor, task=task.name, labels=labels,
                            task_options=task_options, preset=encoder_preset,
                            data_format=FLAGS.data_format, task_module=type(task).__module__)
    use_distillation_loss(student, family, FLAGS.alpha, FLAGS.temperature)

    logs = md.path(FLAGS.model_dir, md.LOGS)
    print(f"distilling {teacher.task.name} into {encoder_preset} (alpha {FLAGS.alpha}, "
          f"T {FLAGS.temperature}; {policy}) on {len(train_examples)} labelled and "
          f"{len(unlabeled)} unlabelled examples, {steps_per_epoch} steps per epoch; "
          f"{config['total_parameters']:,} parameters (teacher "
          f"{config['teacher_parameters']:,})", flush=True)
    train_resumably(
        student, model_dir=FLAGS.model_dir, make_pass=make_pass,
        steps_per_epoch=steps_per_epoch, epochs=epochs, monitor=monitor, mode=mode,
        validation_data=eval_dataset,
        task_callbacks=task.callbacks(eval_dataset, eval_examples, labels,
                                      log_dir=os.path.join(logs, "validation")),
        checkpoint_every_steps=FLAGS.checkpoint_every_steps,
        log_every_steps=FLAGS.log_every_steps,
        early_stopping_patience=FLAGS.early_stopping_patience)

    best = keras.saving.load_model(md.path(FLAGS.model_dir, md.BEST_MODEL))
    metrics = task.evaluate(best, eval_dataset, eval_examples, labels)
    md.write_json(metrics, md.path(FLAGS.model_dir, md.METRICS))
    comparison = {
        "eval_data": os.path.abspath(FLAGS.eval_data), "batch_size": FLAGS.batch_size,
        "teacher": _side(teacher.task, teacher.model, teacher.preprocessor,
                         raw_eval_examples, labels),
        "student": _side(task, best, preprocessor, raw_eval_examples, labels),
    }
    md.write_json(comparison, md.path(FLAGS.model_dir, COMPARISON))
    write_hparams(logs, config, metrics)
    write_model_card(FLAGS.model_dir, _card(config))
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)
    print(json.dumps(comparison, sort_keys=True))


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
