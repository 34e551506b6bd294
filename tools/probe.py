r"""Probing classifiers: how well each layer of an encoder linearly encodes a word-level column.

    python tools/probe.py --init_checkpoint=/path/to/all-MiniLM-L6-v2 \
        --train_data=eng.train --eval_data=eng.testa --column=2 --column_name=pos \
        --output_dir=runs/probe_pos

Columns count from 1 with the word as column 1: in CoNLL-2003
(`word POS chunk NER`) `--column=2` is part-of-speech, `3` chunks, `4`
entity tags. Every word is represented by its first subword at each of the
encoder's hidden states (layer 0 = the embeddings, then every block); one
forward pass per batch of sentences gives all layers, and a linear softmax
probe per layer is trained on these frozen vectors (Adam, --epochs) and
scored by accuracy on the --eval_data words. Labels seen only in the
evaluation data count as errors.

With --init_checkpoint (any checkpoint format; its vocabulary and
lower-casing are used) the pretrained encoder is probed and, unless
--nocontrol, a control: the same architecture with random weights. With
--preset instead, only a random encoder of that preset's shape is probed
(the vocabulary: --vocab, or one learned from the training words).

Prints a table (layer, pretrained, control) and one JSON line; writes
probe.json, probe.png (accuracy by layer) and TensorBoard logs (scalars
probe/<column_name>/pretrained and .../control with step = layer, and the
plot) under --output_dir/logs; a rerun into the same --output_dir replaces them.
"""

import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402

from nlpzoo.layers import transformer_of  # noqa: E402
from nlpzoo.tasks.io.atomic_files import write_json_atomically  # noqa: E402
from nlpzoo.tasks.io.errors import DataFormatError  # noqa: E402
from nlpzoo.tasks.io.ownership import NotOurDirectory, check_output, claim  # noqa: E402
from nlpzoo.tasks.probing import (  # noqa: E402
    CONLL2003_COLUMNS,
    accuracy_plot,
    extract_word_features,
    label_ids,
    majority_accuracy,
    probe_accuracies,
    probing_labels,
    random_encoder_like,
    read_probing_column,
    save_png,
    train_probes,
)
from nlpzoo.tasks.text.tokenizer import build_vocabulary, read_vocabulary  # noqa: E402
from nlpzoo.tasks.words.pipeline import make_word_dataset  # noqa: E402
from nlpzoo.tasks.words.preprocessor import WordPreprocessor  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli import run_setup  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.zoo import build_encoder  # noqa: E402
from nlpzoo.zoo.checkpoints import load_encoder, read_tokenizer_settings  # noqa: E402

FLAGS = flags.FLAGS
_CONLL_NAMES = ", ".join(f"{number} {name}" for number, name in CONLL2003_COLUMNS.items())
flags.DEFINE_string("train_data", None, "Column file whose words train the probes.")
flags.DEFINE_string("eval_data", None, "Column file whose words score the probes.")
flags.DEFINE_integer("column", None, "The column to probe for, counting from 1 with the word "
                     f"as column 1 (CoNLL-2003: {_CONLL_NAMES}).")
flags.DEFINE_string("column_name", None, "Name of the column in the outputs and TensorBoard "
                    "tags (pos, chunk, ner, ...); column<N> when omitted.")
flags.DEFINE_string("init_checkpoint", None, "The pretrained encoder to probe, with its "
                    "vocabulary and lower-casing: a Hugging Face BERT directory, a KerasHub "
                    "BertBackbone preset, or ours (a tools/pretrain.py run directory stands "
                    "for its encoder/).")
flags.DEFINE_boolean("control", True, "Also probe a randomly initialised encoder of the same "
                     "shape (the control).")
flags.DEFINE_string("preset", None, "Without --init_checkpoint: probe only a random encoder "
                    "of this encoder preset's shape (bert_tiny, minilm_l6_h384, ...).")
flags.DEFINE_string("vocab", None, "With --preset: the vocab.txt; by default one learned from "
                    "the training words.")
flags.DEFINE_integer("vocab_size", 8000, "With --preset and no --vocab: size of the vocabulary "
                     "learned from the training words.", lower_bound=100)
flags.DEFINE_boolean("lowercase", True, "With --preset: lower-case and strip accents before "
                     "WordPiece (a checkpoint brings its own setting).")
flags.DEFINE_integer("max_train_words", 20000, "Train on the first sentences of --train_data "
                     "that fit in this many words (features of every layer are kept in "
                     "memory: words x (layers + 1) x hidden x 4 bytes).", lower_bound=1)
flags.DEFINE_integer("max_eval_words", None, "Score on the first sentences of --eval_data that "
                     "fit in this many words; all when omitted.", lower_bound=1)
flags.DEFINE_integer("max_sentences", None, "Read at most this many sentences of each file.",
                     lower_bound=1)
flags.DEFINE_integer("epochs", 10, "Epochs of probe training.", lower_bound=1)
flags.DEFINE_integer("batch_size", 256, "Words per probe training step.", lower_bound=1)
flags.DEFINE_float("learning_rate", 3e-3, "Adam's learning rate for the probes.",
                   lower_bound=0.0)
flags.DEFINE_integer("encoder_batch_size", 32, "Sentences per forward pass of the encoder.",
                     lower_bound=1)
flags.DEFINE_integer("max_seq_length", 128, "Longest [CLS] subwords [SEP] sequence; words of "
                     "a longer sentence past it are left out.", lower_bound=8)
flags.DEFINE_integer("seed", 42, "Random seed (the control's weights, the probes' shuffling).")
flags.DEFINE_string("output_dir", None, "Where probe.json, probe.png and logs/ go.")
flags.mark_flags_as_required(["train_data", "eval_data", "column", "output_dir"])

PRETRAINED, CONTROL = "pretrained", "control"


_OUTPUTS = ("probe.json", "probe.png", "logs")  # what a run writes; a rerun replaces them


def _check_flags():
    try:  # only a new or empty directory, or one of our earlier probes, is written into
        check_output(FLAGS.output_dir, "--output_dir", overwrite=True, own_names=_OUTPUTS,
                     adopt=lambda directory: set(os.listdir(directory)) <= set(_OUTPUTS))
    except NotOurDirectory as error:
        raise UserError(str(error))
    if bool(FLAGS.init_checkpoint) == bool(FLAGS.preset):
        raise UserError("give --init_checkpoint (a pretrained encoder, and its random control) "
                        "or --preset (a random encoder of that shape only), not both or neither")
    if FLAGS.preset and not FLAGS.control:
        raise UserError("--preset probes the random control only; --nocontrol leaves nothing "
                        "to probe")
    if FLAGS.init_checkpoint and FLAGS.vocab:
        raise UserError("--vocab is for --preset: --init_checkpoint brings its own vocabulary")


def _read(path, max_words):
    try:
        sentences = read_probing_column(path, FLAGS.column, FLAGS.max_sentences, max_words)
    except DataFormatError:
        raise  # names the file and line
    except ValueError as error:
        raise UserError(f"--column={FLAGS.column}: {error}")
    if not sentences:
        raise UserError(f"{path}: no whole sentence fits in {max_words} words "
                        "(--max_train_words, --max_eval_words)")
    return sentences


def _tokenizer_settings(train):
    """(vocabulary, lowercase) of the checkpoint, --vocab, or learned from the training words."""
    if FLAGS.init_checkpoint:
        try:
            return read_tokenizer_settings(FLAGS.init_checkpoint)
        except (ValueError, OSError) as error:
            raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: {error}")
    if FLAGS.vocab:
        return read_vocabulary(FLAGS.vocab), FLAGS.lowercase
    texts = [" ".join(sentence.words) for sentence in train]
    return build_vocabulary(texts, FLAGS.vocab_size, FLAGS.lowercase), FLAGS.lowercase


def _encoders(tokens):
    """[(name, make_encoder)]: the pretrained encoder and/or the control, built when needed."""
    if FLAGS.preset:
        def control():
            try:
                return build_encoder(FLAGS.preset, vocabulary_size=len(tokens))
            except ValueError as error:
                raise UserError(f"--preset: {error}")
        return [(CONTROL, control)]
    try:
        pretrained = load_encoder(FLAGS.init_checkpoint)
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: {error}")
    if transformer_of(pretrained).vocabulary_size != len(tokens):
        raise UserError(f"--init_checkpoint={FLAGS.init_checkpoint}: its vocabulary has "
                        f"{len(tokens)} tokens but its encoder "
                        f"{transformer_of(pretrained).vocabulary_size} token embeddings")
    encoders = [(PRETRAINED, lambda: pretrained)]
    if FLAGS.control:
        encoders.append((CONTROL, lambda: random_encoder_like(pretrained)))
    return encoders


def _datasets(preprocessor, labels, *sentence_lists):
    """A cached dataset of each list of sentences, tokenized once for every encoder."""
    return [make_word_dataset([s.words for s in sentences], label_ids(sentences, labels),
                              preprocessor, batch_size=FLAGS.encoder_batch_size)
            for sentences in sentence_lists]


def _probe(encoder, train_dataset, eval_dataset, num_classes):
    """(accuracy per layer, details) of one encoder."""
    positions = transformer_of(encoder).max_sequence_length
    if FLAGS.max_seq_length > positions:
        raise UserError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the encoder's "
                        f"{positions} positions")
    start = time.perf_counter()
    train_features = extract_word_features(encoder, train_dataset)
    eval_features = extract_word_features(encoder, eval_dataset)
    extracted = time.perf_counter()
    probes = train_probes(train_features.vectors, train_features.labels, num_classes,
                          FLAGS.epochs, FLAGS.batch_size, FLAGS.learning_rate, FLAGS.seed)
    accuracies = probe_accuracies(probes, eval_features.vectors, eval_features.labels)
    details = dict(
        train_words=len(train_features), eval_words=len(eval_features),
        unseen_eval_words=int((eval_features.labels >= num_classes).sum()),
        majority=majority_accuracy(train_features.labels, eval_features.labels),
        extract_seconds=round(extracted - start, 1),
        train_seconds=round(time.perf_counter() - extracted, 1))
    return accuracies, details


def _write_tensorboard(log_dir, column_name, layers, curves, image):
    # A rerun replaces the last run's curves rather than adding a second set of points.
    for old_events in glob.glob(os.path.join(log_dir, "events.out.tfevents.*")):
        os.remove(old_events)
    writer = tf.summary.create_file_writer(log_dir)
    with writer.as_default():
        for name, values in curves.items():
            for layer, value in zip(layers, values or ()):
                tf.summary.scalar(f"probe/{column_name}/{name}", value, step=layer)
        tf.summary.image(f"probe/{column_name}", image[None], step=0)
    writer.close()


def _print_table(layers, curves):
    names = [name for name, values in curves.items() if values is not None]
    print("layer  " + "  ".join(f"{name:>10}" for name in names))
    for layer in layers:
        cells = "  ".join(f"{curves[name][layer]:>10.4f}" for name in names)
        print(f"{layer:>5}  {cells}")


def main(argv):
    _check_flags()
    if FLAGS.init_checkpoint:  # a tools/pretrain.py run directory stands for its encoder/
        FLAGS.init_checkpoint = md.encoder_checkpoint(FLAGS.init_checkpoint)
    keras.mixed_precision.set_global_policy("float32")
    column_name = FLAGS.column_name or f"column{FLAGS.column}"
    train = _read(FLAGS.train_data, FLAGS.max_train_words)
    evaluation = _read(FLAGS.eval_data, FLAGS.max_eval_words)
    labels = probing_labels(train)
    if len(labels) < 2:
        raise UserError(f"{FLAGS.train_data}: column {FLAGS.column} has one label only "
                        f"({labels[0]!r}) in the words read: nothing to probe")
    tokens, lowercase = _tokenizer_settings(train)
    preprocessor = WordPreprocessor(tokens, lowercase=lowercase,
                                    max_seq_length=FLAGS.max_seq_length)
    claim(FLAGS.output_dir, "tools/probe.py")
    print(f"probing column {FLAGS.column} ({column_name}, {len(labels)} labels): "
          f"{sum(map(len, train))} training words, {sum(map(len, evaluation))} evaluation "
          "words", flush=True)

    train_dataset, eval_dataset = _datasets(preprocessor, labels, train, evaluation)
    curves, details = {PRETRAINED: None, CONTROL: None}, {}
    for name, make_encoder in _encoders(tokens):
        keras.utils.set_random_seed(FLAGS.seed)  # the control's weights do not depend on order
        curves[name], details[name] = _probe(make_encoder(), train_dataset, eval_dataset,
                                             len(labels))
        print(f"{name}: features in {details[name]['extract_seconds']} s, probes trained in "
              f"{details[name]['train_seconds']} s", flush=True)
    first = details[next(iter(details))]
    layers = list(range(len(next(c for c in curves.values() if c is not None))))

    _print_table(layers, curves)
    print(f"majority-label baseline {first['majority']:.4f}; {first['unseen_eval_words']} "
          "evaluation words have a label unseen in training (counted as errors)")
    result = {
        "column": FLAGS.column, "column_name": column_name, "layers": layers,
        PRETRAINED: curves[PRETRAINED], CONTROL: curves[CONTROL], "labels": labels,
        "majority": first["majority"], "train_words": first["train_words"],
        "eval_words": first["eval_words"], "unseen_eval_words": first["unseen_eval_words"],
        "dropped_words": (sum(map(len, train)) - first["train_words"]
                          + sum(map(len, evaluation)) - first["eval_words"]),
        "init_checkpoint": run_setup.checkpoint_reference(FLAGS.init_checkpoint),
        "preset": FLAGS.preset, "train_data": os.path.abspath(FLAGS.train_data),
        "eval_data": os.path.abspath(FLAGS.eval_data), "epochs": FLAGS.epochs,
        "batch_size": FLAGS.batch_size, "learning_rate": FLAGS.learning_rate,
        "max_seq_length": FLAGS.max_seq_length, "seed": FLAGS.seed,
        "seconds": {name: {key: value for key, value in d.items() if key.endswith("seconds")}
                    for name, d in details.items()},
    }
    write_json_atomically(result, os.path.join(FLAGS.output_dir, "probe.json"))
    title = f"Linear probe accuracy by layer: column {FLAGS.column} ({column_name})"
    image = accuracy_plot(layers, curves, title, baseline=first["majority"])
    save_png(image, os.path.join(FLAGS.output_dir, "probe.png"))
    _write_tensorboard(os.path.join(FLAGS.output_dir, "logs"), column_name, layers, curves,
                       image)
    print(f"wrote probe.json, probe.png and TensorBoard logs (logs/) to {FLAGS.output_dir}")
    print(json.dumps({key: result[key] for key in (
        "column", "column_name", "layers", PRETRAINED, CONTROL, "majority", "train_words",
        "eval_words")}))


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
