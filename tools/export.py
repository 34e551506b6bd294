r"""Exports a model as a TensorFlow SavedModel that serves raw text.

    python tools/export.py --model_dir=runs/conll --output=exported/conll
    python tools/export.py --model=runs/trec/best_model.keras --output=exported/trec
    python tools/export.py --init_checkpoint=/path/to/all-MiniLM-L6-v2 \
        --task=sentence_embedding --output=exported/minilm_embeddings

A trained model (--model_dir or --model) is exported as it is. With --task,
the model of a task that needs no training (`Task.trainable` False:
sentence_embedding, fill_mask) is built on the encoder of --init_checkpoint
(any checkpoint format; a tools/pretrain.py run directory) or of a trained
model, with the head options of the flags of the same names (--pooling,
--normalize, --layer) and the encoder's vocabulary, lower-casing and
--max_seq_length; a sentence embedding export serves `text` → `embedding`
(float32 [B, hidden_dim]); a fill-mask export (its masked-LM head from the
checkpoint) serves `text` with [MASK] tokens → `token`, `token_id`,
`probability` (the 5 best per mask) and `num_masks`.

The SavedModel's `serving_default` signature takes a 1-D string tensor `text`
of raw sentences (a pair classifier: `text` and `text_pair`; a tagger or span
NER model trained with `--context_sentences`: `text`, `left_context` and
`right_context`, the words of the neighbouring sentences as raw strings, ""
for none); tokenization,
packing, truncation to max_seq_length and decoding (CRF Viterbi, span NER
decoding at the model's threshold) all run inside the graph. Outputs:
classification `label`, `label_id`, `probabilities` (regression: `score`; multi-label:
`probabilities`, `labels` over their thresholds, `num_labels`); tagging and span NER
`words`, `num_words`, `entity_label`, `entity_start`, `entity_end` (word
offsets, end inclusive, -1 as padding), `num_entities`, plus `tags` (tagging)
or `entity_score` (span NER); bi-encoder (inputs `text` and `text_pair`)
`cosine`, `embedding`, `pair_embedding`, plus the classification outputs for
the softmax objective. See `tasks/modeling/serving.py` and each task's `serving.py`.

    import tensorflow as tf
    serve = tf.saved_model.load("exported/conll").signatures["serving_default"]
    serve(tf.constant(["EU rejects German call to boycott British lamb ."]))

The export holds a model card, README.md (zoo/runs/model_card.py). The output
is written into a temporary directory beside --output, then renamed; an
existing --output is only replaced with --overwrite (and only when it is an
earlier export); a write that fails leaves it as it was.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.tasks.io.ownership import NotOurDirectory, check_replaceable  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.trained_model_flags import untrained_task  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_encoder_source_flags,
    define_pooling_flags,
    define_stride_override_flag,
    define_task_module_flag,
    with_stride_override,
)

# TensorFlow, Keras and the model code are imported in `main`, once the flags are
# checked: a refused --output costs no TensorFlow start-up.

FLAGS = flags.FLAGS
define_task_module_flag()
define_encoder_source_flags(what="the model to export (or, with --task, whose encoder is "
                            "used)")
define_pooling_flags()
define_stride_override_flag()
flags.DEFINE_string("task", None, "Build the model of this task, one that needs no training "
                    "(sentence_embedding), on the encoder of --init_checkpoint or of the "
                    "trained model, and export it; required with --init_checkpoint. Its head "
                    "options come from the flags of the same names (--pooling, --normalize, "
                    "--layer).")
flags.DEFINE_string("output", None, "Directory to write the SavedModel to.")
flags.DEFINE_boolean("overwrite", False, "Replace an existing export at --output.")
flags.mark_flags_as_required(["output"])


def _is_inside(path, directory):
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _is_export(directory):
    """An export written before exports carried our ownership marker."""
    return os.path.exists(os.path.join(directory, "saved_model.pb"))


def _check_output(output):
    """Refuses an --output that holds the model, is not an earlier export of ours, or exists
    without --overwrite (`tasks.io.ownership`)."""
    source = FLAGS.model_dir or FLAGS.model or FLAGS.init_checkpoint
    if source and _is_inside(source, output):
        raise UserError(f"--output={output} would replace the model being exported")
    try:
        check_replaceable(output, "--output", overwrite=FLAGS.overwrite, adopt=_is_export)
    except NotOurDirectory as error:
        raise UserError(str(error))


def _training_directory(model_path):
    """The tools/train.py directory a --model file lies in (its card's source), or None."""
    if not model_path:
        return None
    directory = os.path.dirname(os.path.abspath(model_path))
    return directory if os.path.exists(os.path.join(directory, "config.json")) else None


# Flags that only shape a model built with --task.
_TASK_MODEL_FLAGS = ("pooling", "normalize", "layer", "max_seq_length")


def _check_task_flags():
    if FLAGS.init_checkpoint and not FLAGS.task:
        raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint} needs --task: the task "
                        "(one that needs no training) whose model is built on its encoder")
    given = [f"--{name}" for name in _TASK_MODEL_FLAGS if FLAGS[name].present]
    if given and not FLAGS.task:
        raise UserError(f"{', '.join(given)}: only for a model built with --task; a trained "
                        "model is exported as it is")


def _task_model():
    """(task, model, preprocessor, labels, what): --task's model on the chosen encoder."""
    from nlpzoo.zoo.runs import directory as md

    task = untrained_task(FLAGS.task)
    head = {name: FLAGS[name].value for name in task.head_options if name in FLAGS}
    built = md.build_untrained_model(task, FLAGS.init_checkpoint, FLAGS.model_dir, FLAGS.model,
                                     FLAGS.max_seq_length, **head)
    return task, built.model, built.preprocessor, built.labels, built.config["encoder_source"]


def main(argv):
    output = FLAGS.output.rstrip(os.sep) or FLAGS.output
    _check_output(output)
    _check_task_flags()
    import tensorflow as tf

    from nlpzoo.tasks.io.atomic_files import write_directory_atomically
    from nlpzoo.tasks.modeling.serving import SIGNATURE, export_saved_model
    from nlpzoo.zoo.runs import directory as md
    from nlpzoo.zoo.runs.model_card import export_card, write_model_card

    if FLAGS.task:
        task, model, preprocessor, labels, what = _task_model()
        origin = dict(base=FLAGS.init_checkpoint and md.encoder_checkpoint(FLAGS.init_checkpoint))
    else:
        trained = md.load_trained(FLAGS.model_dir, FLAGS.model)
        task, model, preprocessor, labels = (with_stride_override(trained.task), trained.model,
                                             trained.preprocessor, trained.labels)
        what = FLAGS.model_dir or FLAGS.model
        origin = dict(model_dir=FLAGS.model_dir or _training_directory(FLAGS.model),
                      preset=trained.config.get("preset"),
                      base=trained.config.get("init_checkpoint"))
    parent = os.path.dirname(os.path.abspath(output))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as error:
        raise UserError(f"--output={output}: cannot create {parent}: {error.strerror}")
    card = export_card(sys.argv, task.name, labels, preprocessor.max_seq_length,
                       preprocessor.lowercase, what, task.serving_inputs(),
                       task_options=task.options_dict(), **origin)

    def write(directory):
        export_saved_model(task, model, preprocessor, labels, directory)
        write_model_card(directory, card)

    # _check_output has refused anything but an earlier export to replace.
    try:
        write_directory_atomically(output, write, overwrite=True, adopt=_is_export,
                                   what="--output")
    except tf.errors.OpError as error:  # TensorFlow's own file writes (disk full, ...)
        kept = "the previous export is kept" if os.path.lexists(output) else "nothing was written"
        raise UserError(f"cannot write {output}: {error.message}; {kept}")
    print(f"exported the {task.name} model of {what} to {output} (signature {SIGNATURE!r}, "
          f"max_seq_length={preprocessor.max_seq_length})")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
