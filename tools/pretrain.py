"""Pretrains an encoder preset on unlabeled text: MLM, MLM + NSP, or SpanBERT span + SBO.

    python tools/pretrain.py --preset=bert_mini --objective=span_sbo \
        --corpus=wiki.train.txt --vocab=runs/vocab.txt --model_dir=runs/pretrain \
        --max_steps=2000 --batch_size=32 --learning_rate=5e-4

Continued (domain-adaptive) pretraining starts from a checkpoint instead, with
its vocabulary and lower-casing:

    python tools/pretrain.py --init_checkpoint=<checkpoint dir> --objective=mlm \
        --corpus=my_domain.txt --model_dir=runs/adapted --max_steps=500 \
        --learning_rate=5e-5

The MLM decoder is tied to the checkpoint's word embeddings; the MLM (and
NSP) head of a Hugging Face checkpoint that has one (`cls.predictions.*`,
`cls.seq_relationship.*`) is loaded, any other head starts at random and the
log says so (`zoo.checkpoints.load_pretrainer`).

Writes into --model_dir the resolved config (before training), the
vocabulary, TensorBoard logs (logs/train, logs/validation: per checkpoint
interval each loss, each objective's accuracy, the learning rate; in
logs/train also the total loss and the learning rate every --log_every_steps
steps), and at the end the encoder
checkpoint `encoder/` that `tools/train.py --init_checkpoint=<model_dir>/encoder`
fine-tunes for any task, plus `metrics.json` (validation losses) and the
model card README.md.
Training state is saved every --steps_per_checkpoint steps; an interrupted
run (killed, or stopped with Ctrl-C) started again with the same flags resumes
from the last save, on the same batches and masks as an uninterrupted run.
"""

import logging
import math
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.tasks.training.callbacks import StepLogger  # noqa: E402
from nlpzoo.tasks.io.errors import DataFormatError  # noqa: E402
from nlpzoo.tasks.training.optimization import create_optimizer  # noqa: E402
from nlpzoo.layers import transformer_of  # noqa: E402
from nlpzoo.tasks.pretraining.corpus import CORPUS_FORMATS, read_corpus  # noqa: E402
from nlpzoo.tasks.pretraining.corpus_datasets import masked_datasets, pack_corpus  # noqa: E402
from nlpzoo.tasks.pretraining.model import Pretrainer  # noqa: E402
from nlpzoo.tasks.pretraining.pipeline import OBJECTIVES  # noqa: E402
from nlpzoo.tasks.text.masking import default_max_predictions  # noqa: E402
from nlpzoo.tasks.training.training_state import TrainingState  # noqa: E402
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, build_vocabulary, read_vocabulary  # noqa: E402
from nlpzoo.tasks.training import distribution  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_hardware_flags,
    define_progress_flag,
    vocabulary_progress,
)
from nlpzoo.zoo.runs.model_card import pretraining_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import fit_or_exit  # noqa: E402
from nlpzoo.zoo import ENCODER_PRESETS, build_encoder  # noqa: E402
from nlpzoo.zoo.checkpoints import (  # noqa: E402
    load_pretrainer,
    matching_encoder_preset,
    read_tokenizer_settings,
)
from nlpzoo.zoo.checkpoints.native import save_encoder_checkpoint  # noqa: E402
from nlpzoo.zoo.hardware import (  # noqa: E402
    resolve_jit_compile,
    resolve_mixed_precision,
)

FLAGS = flags.FLAGS
flags.DEFINE_string("preset", "bert_mini", "Encoder preset to pretrain; with "
                    "--init_checkpoint, the preset of the checkpoint's shape (the default "
                    "then).")
flags.DEFINE_string("init_checkpoint", None, "Continue pretraining from this checkpoint "
                    "directory, with its vocabulary and lower-casing: Hugging Face BERT, a "
                    "KerasHub BertBackbone preset, or ours (a tools/pretrain.py run directory "
                    "stands for its encoder/).")
flags.DEFINE_enum("objective", "mlm", OBJECTIVES, "mlm: masked LM; mlm_nsp: masked LM + next "
                  "sentence prediction; span_sbo: SpanBERT span masking + span boundary "
                  "objective.")
flags.DEFINE_list("corpus", None, "Text file(s), comma-separated: one sentence or paragraph "
                  "per line, documents separated by blank lines or WikiText headings.")
flags.DEFINE_enum("corpus_format", "auto", CORPUS_FORMATS, "How documents are separated.")
flags.DEFINE_string("vocab", None, "vocab.txt (tools/build_vocab.py); learned from the corpus "
                    "when omitted (not with --init_checkpoint).")
flags.DEFINE_integer("vocab_size", 8000, "Size of a vocabulary learned from the corpus.",
                     lower_bound=100)
flags.DEFINE_boolean("lowercase", True, "Lower-case and strip accents before WordPiece "
                     "(--init_checkpoint: the checkpoint's).")
flags.DEFINE_string("model_dir", None, "Output directory.")
flags.DEFINE_boolean("overwrite", False, "Replace a finished run in --model_dir.")
flags.DEFINE_integer("max_steps", None, "Training steps; or give --epochs.", lower_bound=1)
flags.DEFINE_integer("epochs", None, "Passes over the packed corpus (when --max_steps is not "
                     "given).", lower_bound=1)
flags.DEFINE_integer("steps_per_checkpoint", 250, "Steps between saves of the training state, "
                     "validation and TensorBoard points.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Sequences per batch: the global batch, split over "
                     "the replicas of --distribution_strategy.", lower_bound=1)
flags.DEFINE_integer("max_seq_length", 128, "Packed sequence length, in wordpieces.",
                     lower_bound=8)
flags.DEFINE_integer("max_predictions", None, "Predictions per sequence; by default 15% of "
                     "--max_seq_length, rounded up.", lower_bound=1)
flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.", lower_bound=0.0)
flags.DEFINE_float("warmup_fraction", 0.1, "Fraction of steps of linear warm-up, then linear "
                   "decay to 0.", lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay.", lower_bound=0.0)
flags.DEFINE_float("dropout", None, "Dropout rate; the preset's when omitted.",
                   lower_bound=0.0, upper_bound=0.99)
flags.DEFINE_boolean("whole_word", False, "MLM objectives: mask whole words.")
flags.DEFINE_boolean("uniform_replacement", False, "Draw the 10% random replacements "
                     "uniformly instead of from the corpus unigram distribution.")
flags.DEFINE_float("short_sequence_probability", 0.1, "Share of sequences packed to a random "
                   "shorter length, as in BERT.", lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float("eval_fraction", 0.02, "Share of packed sequences held out for validation.",
                   lower_bound=0.0, upper_bound=0.5)
flags.DEFINE_integer("seed", 42, "Random seed (packing, masking, initialisation).")
flags.DEFINE_integer("log_every_steps", 50, "Write the training loss and learning rate to "
                     "TensorBoard every this many steps (and at each checkpoint interval's "
                     "end).", lower_bound=1)
define_hardware_flags()
define_progress_flag()
distribution.define_distribution_flags()
flags.mark_flags_as_required(["corpus", "model_dir"])

# Settings that shape the model or the data: a resumed run must not change them.
_RESUME_KEYS = ("preset", "init_checkpoint", "objective", "corpus", "vocabulary_size",
                "lowercase", "max_seq_length", "max_predictions", "batch_size", "total_steps",
                "learning_rate", "seed", "whole_word")


def _read_documents():
    documents = []
    for path in FLAGS.corpus:
        documents.extend(read_corpus(path, FLAGS.corpus_format))
    return documents


def _vocabulary(documents, resuming):
    if FLAGS.vocab:
        try:
            return read_vocabulary(FLAGS.vocab)
        except ValueError as error:
            raise UserError(f"--vocab: {error}")
    if resuming and os.path.exists(md.path(FLAGS.model_dir, md.VOCAB)):
        return md.load_vocabulary(FLAGS.model_dir)
    logging.info("learning a %d-token vocabulary from the corpus", FLAGS.vocab_size)
    try:
        with vocabulary_progress(FLAGS.progress):
            return build_vocabulary((line for document in documents for line in document),
                                    FLAGS.vocab_size, FLAGS.lowercase)
    except ValueError as error:  # e.g. below the minimum size for the corpus's characters
        raise UserError(f"--vocab_size={FLAGS.vocab_size}: {error}")


def _checkpoint_tokenizer():
    """(vocabulary, lowercase) of --init_checkpoint; flags that would contradict it fail."""
    for name in ("vocab", "vocab_size"):
        if FLAGS[name].present:
            raise UserError(f"--{name} cannot be combined with --init_checkpoint: continued "
                            "pretraining keeps the checkpoint's vocabulary")
    try:
        tokens, lowercase = read_tokenizer_settings(FLAGS.init_checkpoint)
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: {error}")
    if FLAGS["lowercase"].present and FLAGS.lowercase != lowercase:
        raise UserError(f"--lowercase={FLAGS.lowercase} contradicts --init_checkpoint, whose "
                        f"tokenizer has lowercase={lowercase}; leave --lowercase out")
    return tokens, lowercase


def _load_checkpoint(encoder_overrides):
    """(Pretrainer on --init_checkpoint, heads it loaded, its encoder preset name)."""
    try:
        model, loaded = load_pretrainer(FLAGS.init_checkpoint, FLAGS.objective,
                                        **encoder_overrides)
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: {error}")
    preset = matching_encoder_preset(transformer_of(model.encoder))
    if FLAGS["preset"].present and FLAGS.preset != preset:
        raise UserError(f"--preset={FLAGS.preset} does not have the shape of --init_checkpoint "
                        f"(that is {preset}); leave --preset out, the checkpoint gives it")
    return model, loaded, preset


def _pack(documents, tokenizer, max_seq_length):
    try:
        return pack_corpus(documents, tokenizer, FLAGS.objective, max_seq_length,
                           seed=FLAGS.seed, eval_fraction=FLAGS.eval_fraction,
                           short_sequence_probability=FLAGS.short_sequence_probability)
    except ValueError as error:
        raise UserError(f"--corpus: {error}")


def main(argv):
    strategy = distribution.make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    # Only the chief writes --model_dir; other workers write to a temporary directory.
    FLAGS.model_dir = distribution.worker_model_dir(FLAGS.model_dir, strategy)
    if FLAGS.preset not in ENCODER_PRESETS:
        raise UserError(f"--preset={FLAGS.preset} is not an encoder preset; expected one of "
                        f"{', '.join(sorted(ENCODER_PRESETS))}")
    if (FLAGS.max_steps is None) == (FLAGS.epochs is None):
        raise UserError("give exactly one of --max_steps and --epochs")
    lowercase = FLAGS.lowercase
    if FLAGS.init_checkpoint:  # a tools/pretrain.py run directory stands for its encoder/
        FLAGS.init_checkpoint = md.encoder_checkpoint(FLAGS.init_checkpoint)
        checkpoint_tokens, lowercase = _checkpoint_tokenizer()
    policy = resolve_mixed_precision(FLAGS.mixed_precision)
    jit_compile = resolve_jit_compile(FLAGS.jit_compile)
    distribution.check_jit_compile(strategy, jit_compile)
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(FLAGS.seed)

    encoder_overrides = {}
    if FLAGS.dropout is not None:
        encoder_overrides.update(dropout=FLAGS.dropout, attention_dropout=FLAGS.dropout)
    preset_name, loaded_heads = FLAGS.preset, ()
    if FLAGS.init_checkpoint:
        with strategy.scope():  # mirrored variables
            model, loaded_heads, preset_name = _load_checkpoint(encoder_overrides)
        positions = transformer_of(model.encoder).max_sequence_length
        source = "--init_checkpoint"
    else:
        positions, source = ENCODER_PRESETS[FLAGS.preset].max_sequence_length, FLAGS.preset
    if FLAGS.max_seq_length > positions:
        raise UserError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the "
                        f"{positions} positions of {source}")

    try:
        documents = _read_documents()
    except DataFormatError as error:
        raise UserError(f"--corpus: {error}")
    resuming = md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    if FLAGS.init_checkpoint:
        tokens = checkpoint_tokens
        if transformer_of(model.encoder).vocabulary_size != len(tokens):
            raise UserError(f"--init_checkpoint: its vocabulary has {len(tokens)} tokens but "
                            f"its encoder {transformer_of(model.encoder).vocabulary_size} "
                            "token embeddings")
    else:
        tokens = _vocabulary(documents, resuming)
    tokenizer = WordPieceTokenizer(tokens, lowercase=lowercase)
    if "[MASK]" not in tokens:
        raise UserError("the vocabulary has no [MASK] token")
    train_arrays, eval_arrays = _pack(documents, tokenizer, FLAGS.max_seq_length)
    num_train = len(train_arrays["token_ids"])
    if num_train < FLAGS.batch_size:
        raise UserError(f"the corpus packs into {num_train} training sequences, fewer than "
                        f"--batch_size={FLAGS.batch_size}")
    steps_per_pass = num_train // FLAGS.batch_size
    total_steps = FLAGS.max_steps or FLAGS.epochs * steps_per_pass
    steps_per_checkpoint = min(FLAGS.steps_per_checkpoint, total_steps)
    num_checkpoints = math.ceil(total_steps / steps_per_checkpoint)
    total_steps = num_checkpoints * steps_per_checkpoint  # whole checkpoint intervals
    max_predictions = FLAGS.max_predictions or default_max_predictions(FLAGS.max_seq_length)

    config = {
        "preset": preset_name, "objective": FLAGS.objective,
        "init_checkpoint": FLAGS.init_checkpoint and os.path.abspath(FLAGS.init_checkpoint),
        "heads_from_checkpoint": list(loaded_heads),
        "corpus": [os.path.abspath(path) for path in FLAGS.corpus],
        "corpus_format": FLAGS.corpus_format, "vocab": FLAGS.vocab,
        "vocabulary_size": len(tokens), "lowercase": lowercase,
        "max_seq_length": FLAGS.max_seq_length, "max_predictions": max_predictions,
        "batch_size": FLAGS.batch_size, "total_steps": total_steps,
        "steps_per_checkpoint": steps_per_checkpoint, "learning_rate": FLAGS.learning_rate,
        "warmup_fraction": FLAGS.warmup_fraction, "weight_decay": FLAGS.weight_decay,
        "dropout": FLAGS.dropout, "whole_word": FLAGS.whole_word,
        "uniform_replacement": FLAGS.uniform_replacement,
        "short_sequence_probability": FLAGS.short_sequence_probability,
        "train_sequences": num_train, "eval_sequences": len(eval_arrays["token_ids"]),
        "seed": FLAGS.seed, "mixed_precision": policy, "jit_compile": jit_compile,
        "log_every_steps": FLAGS.log_every_steps,
    }
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    md.save_vocabulary(FLAGS.model_dir, tokens)

    train_dataset, eval_dataset = masked_datasets(
        train_arrays, eval_arrays, tokenizer, objective=FLAGS.objective,
        batch_size=FLAGS.batch_size, max_predictions=max_predictions, seed=FLAGS.seed,
        uniform_replacement=FLAGS.uniform_replacement, whole_word=FLAGS.whole_word)
    if eval_dataset is not None:
        eval_dataset = distribution.shard_by_data(eval_dataset)

    with strategy.scope():  # mirrored variables, optimizer and metrics
        if not FLAGS.init_checkpoint:
            encoder = build_encoder(FLAGS.preset, vocabulary_size=len(tokens),
                                    **encoder_overrides)
            model = Pretrainer(encoder, objective=FLAGS.objective, name="pretrainer")
        encoder = model.encoder
        # The pooler is trained only by NSP; other objectives leave it unused.
        transformer_of(encoder).pooler.trainable = FLAGS.objective == "mlm_nsp"
        model.compile(
            optimizer=create_optimizer(FLAGS.learning_rate, total_steps,
                                       int(FLAGS.warmup_fraction * total_steps),
                                       FLAGS.weight_decay),
            jit_compile=jit_compile,
        )
    logs = md.path(FLAGS.model_dir, md.LOGS)
    # An "epoch" here is one checkpoint interval of the endless, re-masked stream; the
    # state is saved at each interval's end and kept until the encoder is saved.
    state = TrainingState(md.path(FLAGS.model_dir, md.CHECKPOINTS), steps_per_checkpoint)
    saved = state.read()
    callbacks = [
        keras.callbacks.TensorBoard(logs),
        StepLogger(os.path.join(logs, "train"), FLAGS.log_every_steps),
    ]
    if FLAGS.init_checkpoint:
        fresh = [layer.name for layer in model.layers
                 if layer.name.endswith("_head") and layer.name not in loaded_heads]
        print(f"continuing from {FLAGS.init_checkpoint}: encoder"
              + "".join(f", {name}" for name in loaded_heads) + " loaded"
              + (f"; {', '.join(fresh)} initialised at random (not in the checkpoint)"
                 if fresh else ""), flush=True)
    print(f"pretraining {preset_name} with {FLAGS.objective} ({policy}, jit_compile="
          f"{jit_compile}): {num_train} sequences of {FLAGS.max_seq_length}, {total_steps} "
          f"steps of {FLAGS.batch_size} ({total_steps / steps_per_pass:.1f} passes); "
          f"{distribution.describe(strategy)}", flush=True)
    if saved:
        print(f"resuming from step {saved['step']} of {total_steps}, saved "
              f"{saved.get('date', 'earlier')}", flush=True)
    start = time.time()
    distribution.build_for_fit(model, strategy, train_dataset)

    def training_stream(skip):  # a pure function of the seed: resumes replay its batches
        return distribution.shard_by_data(train_dataset.skip(skip))

    fit_or_exit(model, training_stream, steps_per_checkpoint, num_checkpoints, state,
                callbacks=callbacks, validation_data=eval_dataset, what="pretraining")
    if strategy.num_replicas_in_sync > 1:
        print(f"final weights: {distribution.weights_fingerprint(model)}", flush=True)
    metrics = {"training_seconds": round(time.time() - start, 1), "steps": total_steps}
    if eval_dataset is not None:
        metrics.update(model.evaluate(eval_dataset, return_dict=True, verbose=0))
    transformer_of(encoder).pooler.trainable = True  # fine-tuning trains it
    save_encoder_checkpoint(encoder, md.path(FLAGS.model_dir, md.ENCODER), tokens,
                            lowercase, overwrite=True)
    md.write_json(metrics, md.path(FLAGS.model_dir, md.METRICS))
    write_model_card(FLAGS.model_dir, pretraining_card(FLAGS.model_dir, sys.argv))
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)
    print({key: round(float(value), 4) for key, value in metrics.items()})
    print(f"encoder checkpoint: {os.path.abspath(md.path(FLAGS.model_dir, md.ENCODER))} "
          f"(tools/train.py --init_checkpoint=...)")
    print(f"TensorBoard: tensorboard --logdir {os.path.abspath(logs)}")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
