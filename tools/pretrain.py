"""Pretrains an encoder preset on unlabeled text: MLM, MLM + NSP, or SpanBERT span + SBO.

    python tools/pretrain.py --preset=bert_mini --objective=span_sbo \
        --corpus=wiki.train.txt --vocab=runs/vocab.txt --model_dir=runs/pretrain \
        --max_steps=2000 --batch_size=32 --learning_rate=5e-4

Writes into --model_dir the resolved config (before training), the
vocabulary, TensorBoard logs (logs/train, logs/validation: each loss, the
masked-token accuracies, the learning rate), and at the end the encoder
checkpoint `encoder/` that `tools/train.py --init_checkpoint=<model_dir>/encoder`
fine-tunes for any task, plus `metrics.json` (validation losses) and the
model card README.md.
Training state is saved every --steps_per_checkpoint steps; an interrupted
run started again with the same flags resumes from the last save.
"""

import logging
import math
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import flags  # noqa: E402

from tasks.atomic_files import FailedWrite  # noqa: E402
from tasks.callbacks import AtomicBackupAndRestore  # noqa: E402
from tasks.errors import DataFormatError  # noqa: E402
from tasks.optimization import create_optimizer  # noqa: E402
from tasks.pretraining import unigram_distribution  # noqa: E402
from tasks.pretraining.corpus import CORPUS_FORMATS, read_corpus  # noqa: E402
from tasks.pretraining.model import Pretrainer  # noqa: E402
from tasks.pretraining.packing import (  # noqa: E402
    continuation_flags,
    pack_sentence_pairs,
    pack_single_segments,
    tokenize_documents,
)
from tasks.pretraining.pipeline import (  # noqa: E402
    OBJECTIVES,
    default_max_predictions,
    make_pretraining_dataset,
)
from tasks.tokenizer import WordPieceTokenizer, build_vocabulary, read_vocabulary  # noqa: E402
from tools import distribution  # noqa: E402
from tools import model_directory as md  # noqa: E402
from tools.errors import UserError, run  # noqa: E402
from tools.flags import define_hardware_flags  # noqa: E402
from tools.model_card import pretraining_card, write_model_card  # noqa: E402
from zoo import ENCODER_PRESETS, build_encoder  # noqa: E402
from zoo.checkpoints.native import save_encoder_checkpoint  # noqa: E402
from zoo.hardware import (  # noqa: E402
    resolve_jit_compile,
    resolve_mixed_precision,
)

FLAGS = flags.FLAGS
flags.DEFINE_string("preset", "bert_mini", "Encoder preset to pretrain.")
flags.DEFINE_enum("objective", "mlm", OBJECTIVES, "mlm: masked LM; mlm_nsp: masked LM + next "
                  "sentence prediction; span_sbo: SpanBERT span masking + span boundary "
                  "objective.")
flags.DEFINE_list("corpus", None, "Text file(s), comma-separated: one sentence or paragraph "
                  "per line, documents separated by blank lines or WikiText headings.")
flags.DEFINE_enum("corpus_format", "auto", CORPUS_FORMATS, "How documents are separated.")
flags.DEFINE_string("vocab", None, "vocab.txt (tools/build_vocab.py); learned from the corpus "
                    "when omitted.")
flags.DEFINE_integer("vocab_size", 8000, "Size of a vocabulary learned from the corpus.",
                     lower_bound=100)
flags.DEFINE_boolean("lowercase", True, "Lower-case and strip accents before WordPiece.")
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
define_hardware_flags()
distribution.define_distribution_flags()
flags.mark_flags_as_required(["corpus", "model_dir"])

# Settings that shape the model or the data: a resumed run must not change them.
_RESUME_KEYS = ("preset", "objective", "corpus", "vocabulary_size", "lowercase",
                "max_seq_length", "max_predictions", "batch_size", "total_steps",
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
        return build_vocabulary((line for document in documents for line in document),
                                FLAGS.vocab_size, FLAGS.lowercase)
    except ValueError as error:  # e.g. below the minimum size for the corpus's characters
        raise UserError(f"--vocab_size={FLAGS.vocab_size}: {error}")


def _pack(documents, tokenizer, max_seq_length):
    rng = np.random.default_rng(FLAGS.seed)
    options = dict(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id,
                   continuation=continuation_flags(tokenizer.vocabulary), rng=rng,
                   short_sequence_probability=FLAGS.short_sequence_probability)
    tokenized = tokenize_documents(documents, tokenizer)
    if FLAGS.objective == "mlm_nsp":
        if len(tokenized) < 2:
            raise UserError("--objective=mlm_nsp needs at least two documents in --corpus")
        arrays = pack_sentence_pairs(tokenized, max_seq_length, **options)
    else:
        arrays = pack_single_segments(tokenized, max_seq_length, **options)
    # Held-out sequences: a fixed random subset.
    order = rng.permutation(len(arrays["token_ids"]))
    num_eval = int(round(FLAGS.eval_fraction * len(order)))
    if FLAGS.eval_fraction > 0:
        num_eval = max(num_eval, 1)
    if num_eval >= len(order):
        raise UserError(f"the corpus packs into only {len(order)} sequences: too few to hold "
                        f"out {FLAGS.eval_fraction:.0%} for validation")
    train = {key: value[order[num_eval:]] for key, value in arrays.items()}
    held_out = {key: value[order[:num_eval]] for key, value in arrays.items()}
    return train, held_out


def main(argv):
    strategy = distribution.make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    # Only the chief writes --model_dir; other workers write to a temporary directory.
    FLAGS.model_dir = distribution.worker_model_dir(FLAGS.model_dir, strategy)
    if FLAGS.preset not in ENCODER_PRESETS:
        raise UserError(f"--preset={FLAGS.preset} is not an encoder preset; expected one of "
                        f"{', '.join(sorted(ENCODER_PRESETS))}")
    if (FLAGS.max_steps is None) == (FLAGS.epochs is None):
        raise UserError("give exactly one of --max_steps and --epochs")
    preset = ENCODER_PRESETS[FLAGS.preset]
    if FLAGS.max_seq_length > preset.max_sequence_length:
        raise UserError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the "
                        f"{preset.max_sequence_length} positions of {FLAGS.preset}")
    policy = resolve_mixed_precision(FLAGS.mixed_precision)
    jit_compile = resolve_jit_compile(FLAGS.jit_compile)
    distribution.check_jit_compile(strategy, jit_compile)
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(FLAGS.seed)

    try:
        documents = _read_documents()
    except DataFormatError as error:
        raise UserError(f"--corpus: {error}")
    resuming = md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    tokens = _vocabulary(documents, resuming)
    tokenizer = WordPieceTokenizer(tokens, lowercase=FLAGS.lowercase)
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
        "preset": FLAGS.preset, "objective": FLAGS.objective,
        "corpus": [os.path.abspath(path) for path in FLAGS.corpus],
        "corpus_format": FLAGS.corpus_format, "vocab": FLAGS.vocab,
        "vocabulary_size": len(tokens), "lowercase": FLAGS.lowercase,
        "max_seq_length": FLAGS.max_seq_length, "max_predictions": max_predictions,
        "batch_size": FLAGS.batch_size, "total_steps": total_steps,
        "steps_per_checkpoint": steps_per_checkpoint, "learning_rate": FLAGS.learning_rate,
        "warmup_fraction": FLAGS.warmup_fraction, "weight_decay": FLAGS.weight_decay,
        "dropout": FLAGS.dropout, "whole_word": FLAGS.whole_word,
        "uniform_replacement": FLAGS.uniform_replacement,
        "short_sequence_probability": FLAGS.short_sequence_probability,
        "train_sequences": num_train, "eval_sequences": len(eval_arrays["token_ids"]),
        "seed": FLAGS.seed, "mixed_precision": policy, "jit_compile": jit_compile,
    }
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    md.save_vocabulary(FLAGS.model_dir, tokens)

    special_ids = (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
                   tokenizer.mask_id)
    unigram = None
    if not FLAGS.uniform_replacement:
        unigram = unigram_distribution(train_arrays["token_ids"], len(tokens), special_ids)
    options = dict(objective=FLAGS.objective, continuation=continuation_flags(tokens),
                   special_ids=special_ids, mask_id=tokenizer.mask_id,
                   batch_size=FLAGS.batch_size, max_predictions=max_predictions,
                   unigram_probabilities=unigram, whole_word=FLAGS.whole_word,
                   seed=FLAGS.seed)
    train_dataset = make_pretraining_dataset(train_arrays, training=True, **options)
    eval_dataset = None
    if len(eval_arrays["token_ids"]):
        eval_dataset = distribution.shard_by_data(
            make_pretraining_dataset(eval_arrays, training=False, **options))

    encoder_overrides = {"vocabulary_size": len(tokens)}
    if FLAGS.dropout is not None:
        encoder_overrides.update(dropout=FLAGS.dropout, attention_dropout=FLAGS.dropout)
    with strategy.scope():  # mirrored variables, optimizer and metrics
        encoder = build_encoder(FLAGS.preset, **encoder_overrides)
        # The pooler is trained only by NSP; other objectives leave it unused.
        encoder.transformer.pooler.trainable = FLAGS.objective == "mlm_nsp"
        model = Pretrainer(encoder, objective=FLAGS.objective, name="pretrainer")
        model.compile(
            optimizer=create_optimizer(FLAGS.learning_rate, total_steps,
                                       int(FLAGS.warmup_fraction * total_steps),
                                       FLAGS.weight_decay),
            jit_compile=jit_compile,
        )
    callbacks = [
        # Kept until the encoder is saved: a failed save must not lose the run.
        AtomicBackupAndRestore(md.path(FLAGS.model_dir, md.CHECKPOINTS),
                               delete_checkpoint=False),
        keras.callbacks.TensorBoard(md.path(FLAGS.model_dir, md.LOGS)),
    ]
    print(f"pretraining {FLAGS.preset} with {FLAGS.objective} ({policy}, jit_compile="
          f"{jit_compile}): {num_train} sequences of {FLAGS.max_seq_length}, {total_steps} "
          f"steps of {FLAGS.batch_size} ({total_steps / steps_per_pass:.1f} passes); "
          f"{distribution.describe(strategy)}", flush=True)
    start = time.time()
    distribution.build_for_fit(model, strategy, train_dataset)
    # An "epoch" here is one checkpoint interval of the endless, re-masked stream.
    try:
        model.fit(distribution.shard_by_data(train_dataset), epochs=num_checkpoints,
                  steps_per_epoch=steps_per_checkpoint, validation_data=eval_dataset,
                  callbacks=callbacks, shuffle=False, verbose=2)
    except FailedWrite as error:
        raise UserError(f"{error}; pretraining stopped: once that is fixed, the same command "
                        "resumes from the last checkpoint")
    if strategy.num_replicas_in_sync > 1:
        print(f"final weights: {distribution.weights_fingerprint(model)}", flush=True)
    metrics = {"training_seconds": round(time.time() - start, 1), "steps": total_steps}
    if eval_dataset is not None:
        metrics.update(model.evaluate(eval_dataset, return_dict=True, verbose=0))
    encoder.transformer.pooler.trainable = True  # fine-tuning trains it
    save_encoder_checkpoint(encoder, md.path(FLAGS.model_dir, md.ENCODER), tokens,
                            FLAGS.lowercase, overwrite=True)
    md.write_json(metrics, md.path(FLAGS.model_dir, md.METRICS))
    write_model_card(FLAGS.model_dir, pretraining_card(FLAGS.model_dir, sys.argv))
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)
    print({key: round(float(value), 4) for key, value in metrics.items()})
    print(f"encoder checkpoint: {os.path.abspath(md.path(FLAGS.model_dir, md.ENCODER))} "
          f"(tools/train.py --init_checkpoint=...)")
    print(f"TensorBoard: tensorboard --logdir {os.path.abspath(md.path(FLAGS.model_dir, md.LOGS))}")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
