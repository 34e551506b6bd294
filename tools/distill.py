r"""Knowledge distillation: trains a student on a trained teacher's softened outputs.

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

import functools
import json
import os
import shutil
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.tasks.distillation import (  # noqa: E402
    distillation_dataset,
    family_of,
    teacher_targets,
    use_distillation_loss,
)
from nlpzoo.tasks.registry import get_task_class, task_names  # noqa: E402
from nlpzoo.tasks.training import distribution  # noqa: E402
from nlpzoo.tasks.training.tensorboard_hparams import write_hparams  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import define_task_module_flag  # noqa: E402
from nlpzoo.tools.cli import run_setup  # noqa: E402
from nlpzoo.zoo.runs.model_card import file_facts, training_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import train_resumably  # noqa: E402
from nlpzoo.zoo import build_task_model  # noqa: E402

COMPARISON = "distillation.json"

FLAGS = flags.FLAGS
define_task_module_flag()
flags.DEFINE_string("teacher", None, "The teacher: a model directory written by "
                    "tools/train.py (or tools/distill.py), or a .keras file of one.")
for _name in task_names():
    get_task_class(_name).define_flags(FLAGS)
run_setup.define_fine_tuning_flags(head_learning_rate=False, tune_decoding=False)
flags.DEFINE_string("unlabeled_data", None, "Plain text, one example (a text, or a "
                    "sentence of words) per line: more soft targets, no hard labels.")
flags.DEFINE_float("alpha", 0.5, "Weight of the soft-target loss; 1 - alpha weighs the "
                   "hard-label loss.", lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float("temperature", 2.0, "Softmax temperature T of teacher and student in the "
                   "soft-target loss (which is multiplied by T^2).", lower_bound=1e-3)
distribution.define_distribution_flags()
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


def _student_task(teacher):
    """(the family, the student's task and its head options) of the teacher's task."""
    try:
        family = family_of(teacher.task)
    except ValueError as error:
        raise UserError(f"--teacher={FLAGS.teacher}: {error}")
    task = family.student_task(teacher.task)
    if FLAGS.data_format and FLAGS.data_format not in task.formats:
        raise UserError(f"--data_format={FLAGS.data_format} is not one of "
                        f"{', '.join(task.formats)} for a {task.name} teacher")
    _, head_options = type(task).options_from_flags(FLAGS)
    return family, task, head_options


def _training_data(setup, task, family, teacher, examples, labelled):
    """Sets setup.eval_examples, setup.eval_dataset, setup.make_pass and setup.steps_per_epoch."""
    setup.eval_examples = task.prediction_examples(setup.raw_eval_examples, setup.preprocessor)
    try:
        setup.eval_dataset = task.make_dataset(setup.eval_examples, setup.preprocessor, setup.labels,
                                             training=False, batch_size=FLAGS.batch_size)
        print(f"teacher: soft targets at T={FLAGS.temperature} for {len(examples)} examples",
              flush=True)
        targets = teacher_targets(teacher.model, teacher.task, family, examples,
                                  teacher.preprocessor, setup.labels, FLAGS.temperature,
                                  batch_size=FLAGS.batch_size)

        @functools.lru_cache(maxsize=None)  # pass 0 is counted, then trained on: built once
        def make_pass(index):  # each pass in its own order, fixed by (seed, pass)
            return distillation_dataset(task, examples, labelled, targets, setup.preprocessor,
                                        setup.labels, batch_size=FLAGS.batch_size,
                                        seed=(FLAGS.seed, index))

        setup.make_pass = make_pass
        setup.steps_per_epoch = int(make_pass(0).reduce(0, lambda count, _: count + 1))
    except ValueError as error:  # a label the teacher does not know names its line
        raise UserError(str(error))


def _config(setup, task, teacher, train_examples, unlabeled):
    task_options = task.options_dict()
    return {
        "task": task.name, "task_options": task_options,
        "tag_scheme": task_options.get("tag_scheme"), "preset": setup.encoder_preset,
        "teacher": os.path.abspath(FLAGS.teacher), "alpha": FLAGS.alpha,
        "temperature": FLAGS.temperature,
        "train_data": os.path.abspath(FLAGS.train_data),
        "eval_data": os.path.abspath(FLAGS.eval_data),
        "unlabeled_data": FLAGS.unlabeled_data and os.path.abspath(FLAGS.unlabeled_data),
        "data_format": FLAGS.data_format, "vocab": FLAGS.vocab,
        "vocabulary_size": setup.tokenizer.vocabulary_size, "lowercase": setup.tokenizer.lowercase,
        "init_checkpoint": run_setup.checkpoint_reference(FLAGS.init_checkpoint),
        "labels": setup.labels, "epochs": setup.schedule.epochs, "batch_size": FLAGS.batch_size,
        "learning_rate": setup.schedule.learning_rate,
        "warmup_fraction": setup.schedule.warmup_fraction,
        "clip_norm": setup.schedule.clip_norm,
        "early_stopping_patience": FLAGS.early_stopping_patience, "dropout": FLAGS.dropout,
        "max_seq_length": setup.max_seq_length, "seed": FLAGS.seed,
        "mixed_precision": setup.hardware.policy, "jit_compile": setup.hardware.jit_compile,
        "pack_length": setup.hardware.pack_length,
        "steps_per_epoch": setup.steps_per_epoch,
        "total_steps": setup.total_steps, "monitor": setup.monitor,
        "checkpoint_every_steps": FLAGS.checkpoint_every_steps,
        "train_examples": len(train_examples), "unlabeled_examples": len(unlabeled),
        "eval_examples": len(setup.raw_eval_examples),
        "teacher_parameters": _parameters(teacher.model),
    }


def _student(setup, task, family, encoder, head_options, config, strategy):
    """The student model, compiled with the distillation loss; config.json rewritten."""
    overrides = run_setup.model_overrides(
        setup.tokenizer.vocabulary_size, setup.schedule, setup.total_steps, setup.hardware,
        FLAGS.dropout,
        **head_options, **task.model_head_options(setup.labels))
    try:
        with strategy.scope():  # mirrored variables, optimizer and metrics
            student = build_task_model(task, setup.encoder_preset, encoder=encoder, **overrides)
    except ValueError as error:
        raise UserError(str(error))
    config.update(trainable_parameters=sum(int(np.prod(v.shape))
                                           for v in student.trainable_variables),
                  total_parameters=_parameters(student))
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    student.attach_metadata(preprocessor=setup.preprocessor, task=task.name, labels=setup.labels,
                            task_options=task.options_dict(), preset=setup.encoder_preset,
                            data_format=FLAGS.data_format, task_module=type(task).__module__)
    use_distillation_loss(student, family, FLAGS.alpha, FLAGS.temperature)
    return student


def _finish(setup, task, teacher, config):
    """Evaluates the best student, compares it with the teacher; the comparison."""
    best = keras.saving.load_model(md.path(FLAGS.model_dir, md.BEST_MODEL))
    metrics = task.evaluate(best, setup.eval_dataset, setup.eval_examples, setup.labels)
    md.write_json(metrics, md.path(FLAGS.model_dir, md.METRICS))
    comparison = {
        "eval_data": os.path.abspath(FLAGS.eval_data), "batch_size": FLAGS.batch_size,
        "teacher": _side(teacher.task, teacher.model, teacher.preprocessor,
                         setup.raw_eval_examples, setup.labels),
        "student": _side(task, best, setup.preprocessor, setup.raw_eval_examples, setup.labels),
    }
    md.write_json(comparison, md.path(FLAGS.model_dir, COMPARISON))
    write_hparams(md.path(FLAGS.model_dir, md.LOGS), config, metrics)
    write_model_card(FLAGS.model_dir, _card(config))
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)
    return comparison


def _announce(setup, teacher, labelled, unlabelled, config, strategy):
    """The run's first lines: what is distilled into what, on what, and how it is spread."""
    print(f"distilling {teacher.task.name} into {setup.encoder_preset} (alpha {FLAGS.alpha}, "
          f"T {FLAGS.temperature}; {setup.hardware.policy}) on {labelled} labelled "
          f"and {unlabelled} unlabelled examples, {setup.steps_per_epoch} steps per epoch; "
          f"{config['total_parameters']:,} parameters (teacher "
          f"{config['teacher_parameters']:,})", flush=True)
    print(f"distribution: {distribution.describe(strategy)}, global batch {FLAGS.batch_size}",
          flush=True)


def main(argv):
    strategy = distribution.make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    run_setup.check_gradient_accumulation(FLAGS, binary="tools/distill.py")
    # Only the chief writes --model_dir; other workers write to a temporary directory.
    FLAGS.model_dir = distribution.worker_model_dir(FLAGS.model_dir, strategy)
    # The teacher stays outside the strategy: each worker computes every soft target
    # (the same ones) before training, and the batches are sharded afterwards.
    teacher = _load_teacher()
    family, task, head_options = _student_task(teacher)
    setup = types.SimpleNamespace(hardware=run_setup.apply_hardware_flags(FLAGS, strategy),
                                  labels=teacher.labels)
    train_examples = task.read(FLAGS.train_data, FLAGS.data_format)
    setup.raw_eval_examples = task.read(FLAGS.eval_data, FLAGS.data_format)
    unlabeled = _unlabeled_examples(task, family, setup.labels)
    examples = list(train_examples) + unlabeled
    labelled = [True] * len(train_examples) + [False] * len(unlabeled)
    with strategy.scope():  # its variables are mirrored too
        encoder = run_setup.load_starting_encoder()
    setup.encoder_preset, _, _ = run_setup.resolve_preset(FLAGS.preset, encoder)
    setup.max_seq_length, setup.schedule = run_setup.fine_tuning_settings(
        encoder, setup.encoder_preset)

    # Nothing is written (or removed) before the data and flags have passed every check.
    resuming = md.inspect(FLAGS.model_dir, FLAGS.overwrite) == "resume"
    setup.tokenizer = run_setup.resolve_tokenizer(
        FLAGS, lambda: task.texts(examples), resuming, learned_from=FLAGS.train_data)
    run_setup.check_vocabulary_fits(encoder, setup.tokenizer)
    task = task.for_text_casing(setup.tokenizer.lowercase)
    setup.preprocessor = task.make_preprocessor(setup.tokenizer, setup.tokenizer.lowercase,
                                                setup.max_seq_length)
    _training_data(setup, task, family, teacher, examples, labelled)
    setup.total_steps = setup.steps_per_epoch * setup.schedule.epochs
    setup.monitor, mode = task.monitor(len(setup.labels))
    config = _config(setup, task, teacher, train_examples, unlabeled)
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS)
    md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    if os.path.exists(md.path(FLAGS.model_dir, COMPARISON)):  # of an overwritten run
        os.remove(md.path(FLAGS.model_dir, COMPARISON))
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    md.save_run_tokenizer(FLAGS.model_dir, setup.tokenizer)
    md.write_json(setup.labels, md.path(FLAGS.model_dir, md.LABELS))
    student = _student(setup, task, family, encoder, head_options, config, strategy)

    logs = md.path(FLAGS.model_dir, md.LOGS)
    _announce(setup, teacher, len(train_examples), len(unlabeled), config, strategy)
    distribution.build_for_fit(student, strategy, setup.make_pass(0))
    train_resumably(
        student, model_dir=FLAGS.model_dir, make_pass=setup.make_pass,
        steps_per_epoch=setup.steps_per_epoch, epochs=setup.schedule.epochs,
        monitor=setup.monitor, mode=mode, validation_data=setup.eval_dataset,
        task_callbacks=task.callbacks(setup.eval_dataset, setup.eval_examples, setup.labels,
                                      log_dir=os.path.join(logs, "validation")),
        checkpoint_every_steps=FLAGS.checkpoint_every_steps,
        log_every_steps=FLAGS.log_every_steps,
        early_stopping_patience=FLAGS.early_stopping_patience,
        shard=distribution.shard_by_data)
    # One process and every worker print it: the same run on each agrees (docs/distributed.md).
    print(distribution.fingerprint_line(student), flush=True)
    print(json.dumps(_finish(setup, task, teacher, config), sort_keys=True))


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
