r"""Pretrains an encoder preset on unlabeled text: MLM, MLM + NSP or SOP, or SpanBERT + SBO.

    python tools/pretrain.py --preset=bert_mini --objective=span_sbo \
        --corpus=wiki.train.txt --vocab=runs/vocab.txt --model_dir=runs/pretrain \
        --max_steps=2000 --batch_size=32 --learning_rate=5e-4

Continued (domain-adaptive) pretraining starts from a checkpoint instead, with
its vocabulary and lower-casing:

    python tools/pretrain.py --init_checkpoint=<checkpoint dir> --objective=mlm \
        --corpus=my_domain.txt --model_dir=runs/adapted --max_steps=500 \
        --learning_rate=5e-5

The MLM decoder is tied to the checkpoint's word embeddings; the MLM (and
NSP, or SOP) head of a checkpoint that has one (`cls.predictions.*`,
`cls.seq_relationship.*`, `sop_classifier.classifier.*`; another family's
masked-LM head, RoBERTa's `lm_head.*`, ...) is loaded, any other head starts at random and the
log says so (`zoo.checkpoints.load_pretrainer`). The checkpoint's tokenizer may be
of any kind (WordPiece, byte-level BPE, SentencePiece): its own mask token is
used, and --whole_word finds words by its word-start pieces
(`SubwordTokenizer.word_start_pieces`); the encoder checkpoint keeps it.

Writes into --model_dir the resolved config (before training), the
vocabulary, TensorBoard logs (logs/train, logs/validation: per checkpoint
interval each loss, each objective's accuracy, the learning rate; in
logs/train also the total loss and the learning rate every --log_every_steps
steps), and at the end the encoder
checkpoint `encoder/` that `tools/train.py --init_checkpoint=<model_dir>/encoder`
fine-tunes for any task (with the trained MLM head beside it, which the fill_mask
task reads: `tools/predict.py --task=fill_mask --init_checkpoint=<model_dir>`), plus `metrics.json` (validation losses) and the
model card README.md.
Training state is saved every --steps_per_checkpoint steps (`zoo.runs.training_loop`,
as tools/train.py does); an interrupted
run (killed, or stopped with Ctrl-C) started again with the same flags resumes
from the last save, on the same batches and masks as an uninterrupted run.
"""

import math
import os
import shutil
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.tasks.io.errors import DataFormatError  # noqa: E402
from nlpzoo.tasks.training.optimization import create_optimizer  # noqa: E402
from nlpzoo.layers import transformer_of  # noqa: E402
from nlpzoo.tasks.text.corpus import CORPUS_FORMATS, read_corpus  # noqa: E402
from nlpzoo.tasks.pretraining.corpus_datasets import masked_datasets, pack_corpus  # noqa: E402
from nlpzoo.tasks.pretraining.model import Pretrainer  # noqa: E402
from nlpzoo.tasks.pretraining.pair_objectives import pair_objective  # noqa: E402
from nlpzoo.tasks.pretraining.pipeline import OBJECTIVES  # noqa: E402
from nlpzoo.tasks.text.masking import default_max_predictions  # noqa: E402
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer  # noqa: E402
from nlpzoo.tasks.training import distribution  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import (  # noqa: E402
    define_hardware_flags,
    define_progress_flag,
    define_training_loop_flags,
)
from nlpzoo.tools.cli import run_setup  # noqa: E402
from nlpzoo.zoo.runs.model_card import pretraining_card, write_model_card  # noqa: E402
from nlpzoo.zoo.runs.training_loop import train_resumably  # noqa: E402
from nlpzoo.zoo import ENCODER_PRESETS, build_encoder  # noqa: E402
from nlpzoo.zoo.checkpoints import (  # noqa: E402
    head_tensors,
    load_pretrainer,
    matching_encoder_preset,
)
from nlpzoo.zoo.checkpoints.native import save_encoder_checkpoint  # noqa: E402

FLAGS = flags.FLAGS
run_setup.define_run_flags()
run_setup.define_encoder_flags(preset_default="bert_mini")
run_setup.define_vocabulary_flags()
run_setup.define_schedule_flags(learning_rate=1e-4, warmup_fraction=0.1, max_seq_length=128)
flags.DEFINE_enum("objective", "mlm", OBJECTIVES, "mlm: masked LM; mlm_nsp: masked LM + next "
                  "sentence prediction (BERT: is segment b the one after a, or from another "
                  "document?); mlm_sop: masked LM + sentence-order prediction (ALBERT: are "
                  "two consecutive segments of one document in their order, or swapped?); "
                  "span_sbo: SpanBERT span masking + span boundary objective.")
flags.DEFINE_list("corpus", None, "Text file(s), comma-separated: one sentence or paragraph "
                  "per line, documents separated by blank lines or WikiText headings.")
flags.DEFINE_enum("corpus_format", "auto", CORPUS_FORMATS, "How documents are separated.")
flags.DEFINE_integer("max_steps", None, "Training steps; or give --epochs.", lower_bound=1)
flags.DEFINE_integer("steps_per_checkpoint", 250, "Steps between saves of the training state, "
                     "validation and TensorBoard points.", lower_bound=1)
flags.DEFINE_integer("max_predictions", None, "Predictions per sequence; by default 15% of "
                     "--max_seq_length, rounded up.", lower_bound=1)
flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay.", lower_bound=0.0)
flags.DEFINE_boolean("whole_word", False, "MLM objectives: mask whole words.")
flags.DEFINE_boolean("uniform_replacement", False, "Draw the 10% random replacements "
                     "uniformly instead of from the corpus unigram distribution.")
flags.DEFINE_float("short_sequence_probability", 0.1, "Share of sequences packed to a random "
                   "shorter length, as in BERT.", lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float("eval_fraction", 0.02, "Share of packed sequences held out for validation.",
                   lower_bound=0.0, upper_bound=0.5)
define_hardware_flags()
define_training_loop_flags(resumable=False)
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


def _checkpoint_tokenizer():
    """(tokenizer, lowercase) of --init_checkpoint, a tokenizer of any kind (WordPiece,
    byte-level BPE, SentencePiece); flags that would contradict it fail."""
    for name in ("vocab", "vocab_size"):
        if FLAGS[name].present:
            raise UserError(f"--{name} cannot be combined with --init_checkpoint: continued "
                            "pretraining keeps the checkpoint's vocabulary")
    tokenizer = run_setup.checkpoint_tokenizer(FLAGS.init_checkpoint)
    lowercase = tokenizer.lowercase
    if FLAGS["lowercase"].present and FLAGS.lowercase != lowercase:
        raise UserError(f"--lowercase={FLAGS.lowercase} contradicts --init_checkpoint, whose "
                        f"tokenizer has lowercase={lowercase}; leave --lowercase out")
    return tokenizer, lowercase


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


def _check_flags():
    if FLAGS.preset not in ENCODER_PRESETS:
        raise UserError(f"--preset={FLAGS.preset} is not an encoder preset; expected one of "
                        f"{', '.join(sorted(ENCODER_PRESETS))}")
    if (FLAGS.max_steps is None) == (FLAGS.epochs is None):
        raise UserError("give exactly one of --max_steps and --epochs")


def _starting_model(setup, strategy):
    """(the checkpoint's Pretrainer or None, its loaded heads); sets setup.preset and checks
    --max_seq_length against the encoder's positions."""
    model, loaded_heads, setup.preset = None, (), FLAGS.preset
    if FLAGS.init_checkpoint:
        with strategy.scope():  # mirrored variables
            model, loaded_heads, setup.preset = _load_checkpoint(setup.encoder_overrides)
    encoder = model.encoder if model is not None else None
    run_setup.resolve_max_seq_length(FLAGS.max_seq_length, encoder, setup.preset,
                                     default=FLAGS.max_seq_length)
    return model, loaded_heads


def _tokenizer(setup, model, documents, resuming):
    """The checkpoint's tokenizer (of any kind), or a WordPiece one of --vocab or the corpus."""
    if FLAGS.init_checkpoint:
        tokenizer = setup.checkpoint_tokenizer
        tokens = tokenizer.vocabulary
        if transformer_of(model.encoder).vocabulary_size != len(tokens):
            raise UserError(f"--init_checkpoint: its vocabulary has {len(tokens)} tokens but "
                            f"its encoder {transformer_of(model.encoder).vocabulary_size} "
                            "token embeddings")
    else:
        tokens = list(run_setup.resolve_tokenizer(
            FLAGS, lambda: (line for document in documents for line in document), resuming,
            learned_from="the corpus").vocabulary)
        tokenizer = WordPieceTokenizer(tokens, lowercase=setup.lowercase)
    mask = tokenizer.special_tokens["mask"]
    if mask not in tokenizer.vocabulary:
        raise UserError(f"the vocabulary has no {mask} token")
    return tokenizer


def _steps(num_train):
    """(total steps, steps per checkpoint interval, intervals): whole intervals."""
    if num_train < FLAGS.batch_size:
        raise UserError(f"the corpus packs into {num_train} training sequences, fewer than "
                        f"--batch_size={FLAGS.batch_size}")
    total_steps = FLAGS.max_steps or FLAGS.epochs * (num_train // FLAGS.batch_size)
    steps_per_checkpoint = min(FLAGS.steps_per_checkpoint, total_steps)
    num_checkpoints = math.ceil(total_steps / steps_per_checkpoint)
    return num_checkpoints * steps_per_checkpoint, steps_per_checkpoint, num_checkpoints


def _config(setup, tokens, loaded_heads, num_train, num_eval):
    return {
        "preset": setup.preset, "objective": FLAGS.objective,
        "init_checkpoint": run_setup.checkpoint_reference(FLAGS.init_checkpoint),
        "heads_from_checkpoint": list(loaded_heads),
        "corpus": [os.path.abspath(path) for path in FLAGS.corpus],
        "corpus_format": FLAGS.corpus_format, "vocab": FLAGS.vocab,
        "vocabulary_size": len(tokens), "lowercase": setup.lowercase,
        "max_seq_length": FLAGS.max_seq_length, "max_predictions": setup.max_predictions,
        "batch_size": FLAGS.batch_size, "total_steps": setup.total_steps,
        "steps_per_checkpoint": setup.steps_per_checkpoint,
        "learning_rate": FLAGS.learning_rate,
        "warmup_fraction": FLAGS.warmup_fraction, "weight_decay": FLAGS.weight_decay,
        "clip_norm": FLAGS.clip_norm,
        "dropout": FLAGS.dropout, "whole_word": FLAGS.whole_word,
        "uniform_replacement": FLAGS.uniform_replacement,
        "short_sequence_probability": FLAGS.short_sequence_probability,
        "train_sequences": num_train, "eval_sequences": num_eval,
        "seed": FLAGS.seed, "mixed_precision": setup.hardware.policy,
        "jit_compile": setup.hardware.jit_compile, "log_every_steps": FLAGS.log_every_steps,
    }


def _compiled(setup, model, tokens, strategy):
    """The compiled Pretrainer: the checkpoint's, or a new one of --preset."""
    with strategy.scope():  # mirrored variables, optimizer and metrics
        if model is None:
            encoder = build_encoder(FLAGS.preset, vocabulary_size=len(tokens),
                                    **setup.encoder_overrides)
            model = Pretrainer(encoder, objective=FLAGS.objective, name="pretrainer")
        # The pooler is trained only by NSP or SOP; other objectives leave it unused.
        transformer_of(model.encoder).pooler.trainable = (
            pair_objective(FLAGS.objective) is not None)
        model.compile(
            optimizer=create_optimizer(FLAGS.learning_rate, setup.total_steps,
                                       int(FLAGS.warmup_fraction * setup.total_steps),
                                       FLAGS.weight_decay, clip_norm=FLAGS.clip_norm),
            jit_compile=setup.hardware.jit_compile,
        )
    return model


def _announce(setup, model, loaded_heads, num_train, steps_per_pass, strategy):
    if FLAGS.init_checkpoint:
        fresh = [layer.name for layer in model.layers
                 if layer.name.endswith("_head") and layer.name not in loaded_heads]
        print(f"continuing from {FLAGS.init_checkpoint}: encoder"
              + "".join(f", {name}" for name in loaded_heads) + " loaded"
              + (f"; {', '.join(fresh)} initialised at random (not in the checkpoint)"
                 if fresh else ""), flush=True)
    print(f"pretraining {setup.preset} with {FLAGS.objective} ({setup.hardware.policy}, "
          f"jit_compile={setup.hardware.jit_compile}): {num_train} sequences of "
          f"{FLAGS.max_seq_length}, {setup.total_steps} steps of {FLAGS.batch_size} "
          f"({setup.total_steps / steps_per_pass:.1f} passes); "
          f"{distribution.describe(strategy)}", flush=True)


def _save_encoder(setup, model, tokenizer, metrics):
    transformer_of(model.encoder).pooler.trainable = True  # fine-tuning trains it
    save_encoder_checkpoint(model.encoder, md.path(FLAGS.model_dir, md.ENCODER), tokenizer,
                            setup.lowercase, overwrite=True, heads=head_tensors(model))
    md.write_json(metrics, md.path(FLAGS.model_dir, md.METRICS))
    write_model_card(FLAGS.model_dir, pretraining_card(FLAGS.model_dir, sys.argv))
    shutil.rmtree(md.path(FLAGS.model_dir, md.CHECKPOINTS), ignore_errors=True)


def main(argv):
    strategy = distribution.make_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    run_setup.check_gradient_accumulation(FLAGS, binary="tools/pretrain.py")
    # Only the chief writes --model_dir; other workers write to a temporary directory.
    FLAGS.model_dir = distribution.worker_model_dir(FLAGS.model_dir, strategy)
    _check_flags()
    setup = types.SimpleNamespace(lowercase=FLAGS.lowercase)
    if run_setup.normalize_init_checkpoint():
        setup.checkpoint_tokenizer, setup.lowercase = _checkpoint_tokenizer()
    setup.hardware = run_setup.apply_hardware_flags(FLAGS, strategy)
    setup.encoder_overrides = run_setup.dropout_overrides(FLAGS.dropout)
    model, loaded_heads = _starting_model(setup, strategy)
    try:
        documents = _read_documents()
    except DataFormatError as error:
        raise UserError(f"--corpus: {error}")
    resuming = md.prepare(FLAGS.model_dir, FLAGS.overwrite)
    tokenizer = _tokenizer(setup, model, documents, resuming)
    tokens = list(tokenizer.vocabulary)
    train_arrays, eval_arrays = _pack(documents, tokenizer, FLAGS.max_seq_length)
    num_train = len(train_arrays["token_ids"])
    setup.total_steps, setup.steps_per_checkpoint, num_checkpoints = _steps(num_train)
    setup.max_predictions = (FLAGS.max_predictions
                           or default_max_predictions(FLAGS.max_seq_length))
    config = _config(setup, tokens, loaded_heads, num_train, len(eval_arrays["token_ids"]))
    if resuming:
        md.check_resumable(FLAGS.model_dir, config, _RESUME_KEYS)
    md.write_json(config, md.path(FLAGS.model_dir, md.CONFIG))
    md.save_run_tokenizer(FLAGS.model_dir, tokenizer)

    train_dataset, eval_dataset = masked_datasets(
        train_arrays, eval_arrays, tokenizer, objective=FLAGS.objective,
        batch_size=FLAGS.batch_size, max_predictions=setup.max_predictions, seed=FLAGS.seed,
        uniform_replacement=FLAGS.uniform_replacement, whole_word=FLAGS.whole_word)
    model = _compiled(setup, model, tokens, strategy)
    _announce(setup, model, loaded_heads, num_train, num_train // FLAGS.batch_size, strategy)
    start = time.time()
    distribution.build_for_fit(model, strategy, train_dataset)
    # An "epoch" here is one checkpoint interval of the endless, re-masked stream (a pure
    # function of the seed: resumes replay its batches); the state is saved at each end.
    train_resumably(model, model_dir=FLAGS.model_dir, make_stream=train_dataset.skip,
                    steps_per_epoch=setup.steps_per_checkpoint, epochs=num_checkpoints,
                    validation_data=eval_dataset, checkpoint_every_steps=0,
                    log_every_steps=FLAGS.log_every_steps, shard=distribution.shard_by_data,
                    what="pretraining")
    # One process and every worker print it: the same run on each agrees (docs/distributed.md).
    print(distribution.fingerprint_line(model), flush=True)
    metrics = {"training_seconds": round(time.time() - start, 1), "steps": setup.total_steps}
    if eval_dataset is not None:
        metrics.update(model.evaluate(distribution.shard_by_data(eval_dataset),
                                      return_dict=True, verbose=0))
    _save_encoder(setup, model, tokenizer, metrics)
    print({key: round(float(value), 4) for key, value in metrics.items()})
    print(f"encoder checkpoint: {os.path.abspath(md.path(FLAGS.model_dir, md.ENCODER))} "
          f"(tools/train.py --init_checkpoint=...)")
    print(f"TensorBoard: tensorboard --logdir {os.path.abspath(md.path(FLAGS.model_dir, md.LOGS))}")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
