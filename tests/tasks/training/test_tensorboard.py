"""What training writes for TensorBoard, read back from the event files in-process:
per-step loss and learning rate, per-type scores, decoded examples, the HParams session;
and the CRF tagger's logged token accuracy, which must be that of its Viterbi tags."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import metadata as hparams_metadata

from nlpzoo.tasks.training.callbacks import StepLogger
from nlpzoo.tasks.text.text_readers import ClassificationExample
from nlpzoo.tasks.training.evaluation_callback import EvaluationCallback
from nlpzoo.tasks.training.optimization import WarmupLinearDecay
from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.span_ner.readers import SpanSentence
from nlpzoo.tasks.tagging import TaggedSentence, read_column_file
from nlpzoo.tasks.tagging import task as tagging_task
from nlpzoo.tasks.tagging.pipeline import make_dataset
from nlpzoo.tasks.training.tensorboard_examples import ExampleTextLogger
from nlpzoo.tasks.training.tensorboard_hparams import write_hparams
from nlpzoo.tasks.training.tensorboard_scores import entity_type_scalars
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from nlpzoo.zoo import build_model
from tests.helpers.paths import ROOT

SAMPLES = os.path.join(ROOT, "samples", "conll2003")


def _events(log_dir):
    """{tag: {step: value}} of every tensor summary under log_dir (numbers or text)."""
    accumulator = EventAccumulator(log_dir, size_guidance={"tensors": 0})
    accumulator.Reload()
    found = {}
    for tag in accumulator.Tags()["tensors"]:
        if tag == hparams_metadata.SESSION_START_INFO_TAG:  # an empty tensor; see its metadata
            continue
        values = {}
        for event in accumulator.Tensors(tag):
            value = tf.make_ndarray(event.tensor_proto)
            values[event.step] = value.item().decode() if value.dtype == object else float(value)
        found[tag] = values
    return found


class _BatchLosses(keras.callbacks.Callback):
    """Each step's own loss, recovered from Keras's running epoch mean (equal batches)."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_epoch_begin(self, epoch, logs=None):
        self._previous = 0.0

    def on_train_batch_end(self, batch, logs=None):
        mean = float(logs["loss"])
        self.losses.append(mean * (batch + 1) - self._previous * batch)
        self._previous = mean


def test_step_logger_writes_every_n_steps_and_each_epochs_last(tmp_path):
    peak, warmup, total = 1e-2, 3, 8
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.AdamW(WarmupLinearDecay(peak, warmup, total)),
                  loss="mse")
    rng = np.random.default_rng(0)
    batch_losses = _BatchLosses()
    # 2 epochs of 4 steps, every 3 steps: steps 3, 4 (epoch end), 6, 8 (epoch end).
    model.fit(rng.normal(size=(8, 4)), rng.normal(size=(8, 2)), batch_size=2, epochs=2,
              shuffle=False, verbose=0,
              callbacks=[batch_losses, StepLogger(str(tmp_path), every_steps=3)])
    events = _events(str(tmp_path))
    rates, losses = events[StepLogger.tag], events[StepLogger.loss_tag]
    assert sorted(rates) == sorted(losses) == [3, 4, 6, 8]
    for step, rate in rates.items():  # the rate applied by step s: the schedule at s - 1
        t = step - 1
        assert rate == pytest.approx(peak * (t / warmup if t < warmup
                                             else (total - t) / (total - warmup)))
    own = batch_losses.losses  # each window's mean of the steps' own losses
    for step, window in {3: own[0:3], 4: own[3:4], 6: own[4:6], 8: own[6:8]}.items():
        assert losses[step] == pytest.approx(np.mean(window), rel=1e-5)
    assert losses[4] != pytest.approx(np.mean(own[:4]))  # not Keras's running epoch mean
    with pytest.raises(ValueError, match="every_steps"):
        StepLogger(str(tmp_path), every_steps=0)


def test_crf_token_accuracy_is_that_of_the_viterbi_tags():
    sentences = read_column_file(os.path.join(SAMPLES, "train.txt"))
    labels = sorted({t for s in sentences for t in s.tags}, key=lambda t: (t != "O", t))
    # Whole words as tokens (learning a WordPiece vocabulary would take seconds).
    words = sorted({word.lower() for s in sentences for word in s.words})
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)
    dataset = make_dataset(sentences, tokenizer, labels, max_seq_length=32, batch_size=8)
    keras.utils.set_random_seed(1)
    tagger = build_model("bert_tiny_crf_tagger", labels=labels, tag_scheme="IOB2",
                         vocabulary_size=tokenizer.vocabulary_size, num_layers=1)
    tagger.run_eagerly = True  # the same train/test steps, without seconds of tracing
    # Strong transitions, so that Viterbi's path differs from each word's best score.
    tagger.crf.transitions.assign(np.random.default_rng(0).normal(
        0, 3, tagger.crf.transitions.shape))
    logged = tagger.evaluate(dataset, return_dict=True, verbose=0)["token_accuracy"]
    viterbi, argmax, words = 0, 0, 0
    for features, gold in dataset:
        gold = gold.numpy()
        real = gold >= 0
        viterbi += (np.asarray(tagger.predict_on_batch(features)) == gold)[real].sum()
        argmax += (np.asarray(tagger(features)).argmax(-1) == gold)[real].sum()
        words += real.sum()
    assert viterbi != argmax, "the test needs a case where the two disagree"
    assert logged == pytest.approx(viterbi / words, abs=1e-6)


def test_per_type_scores_go_to_tensorboard_grouped_by_type(tmp_path):
    assert entity_type_scalars(
        {"span_f1": 0.5, "span_recall": 0.4, "LOC_f1": 0.25, "LOC_precision": 0.5,
         "LOC_recall": 1 / 6, "threshold": 0.3, "sentences": 6},
        overall=("span_precision", "span_recall", "span_f1")) == {
        "entity/all/recall": 0.4, "entity/all/f1": 0.5, "entity/LOC/f1": 0.25,
        "entity/LOC/precision": 0.5, "entity/LOC/recall": 1 / 6}
    epochs = iter([{"entity_f1": 0.5, "PER_f1": 0.25, "PER_precision": 1.0,
                    "PER_recall": 1 / 7, "sentences": 3},
                   {"entity_f1": 0.75, "PER_f1": 0.5, "PER_precision": 0.5,
                    "PER_recall": 0.5, "sentences": 3}])
    callback = EvaluationCallback(lambda model: next(epochs), logged=("entity_f1",),
                                  log_dir=str(tmp_path))
    callback.on_train_begin()
    logs = [{}, {}]
    for epoch in range(2):
        callback.on_epoch_end(epoch, logs[epoch])
    callback.on_train_end()
    assert logs == [{"val_entity_f1": 0.5}, {"val_entity_f1": 0.75}]
    events = _events(str(tmp_path))
    assert events["entity/PER/f1"] == {0: 0.25, 1: 0.5}
    assert events["entity/PER/recall"] == pytest.approx({0: 1 / 7, 1: 0.5})
    assert events["entity/all/f1"] == {0: 0.5, 1: 0.75}
    assert "entity/sentences" not in str(sorted(events))


def _fixed_model(outputs):
    """A stand-in whose `predict_on_batch` returns `outputs` (the first rows of them)."""

    class Fixed:
        def predict_on_batch(self, features):
            rows = int(tf.shape(tf.nest.flatten(features)[0])[0])
            return np.asarray(outputs)[:rows]

    return Fixed()


def test_tagging_examples_show_gold_and_decoded_entities_and_the_callback_writes_them(
        tmp_path):
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    sentences = [TaggedSentence(("John", "Smith", "visits", "Paris"),
                                ("B-PER", "I-PER", "O", "B-LOC")),
                 TaggedSentence(("in", "Rome", "now"), ("O", "B-LOC", "O")),
                 TaggedSentence(("Bye",), ("O",))]
    word_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])  # "now" was cut off
    dataset = tf.data.Dataset.from_tensors(({"word_mask": word_mask}, np.zeros((3, 4)))).concatenate(
        tf.data.Dataset.from_tensors(({"word_mask": word_mask}, np.zeros((3, 4)))))
    model = _fixed_model([[1, 2, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    task = get_task("tagging")
    described = task.describe_predictions(model, dataset, sentences, labels, count=2)
    assert described == [
        "- gold: **[John Smith]**_PER_ visits **[Paris]**_LOC_\n"
        "- predicted: **[John Smith]**_PER_ visits Paris ✗",
        "- gold: in **[Rome]**_LOC_ now\n- predicted: in **[Rome]**_PER_ now ✗"]
    # Through Task.callbacks with a log folder: one text summary per epoch.
    callbacks = task.callbacks(dataset, sentences, labels, log_dir=str(tmp_path))
    [logger] = [c for c in callbacks if isinstance(c, ExampleTextLogger)]
    assert any(isinstance(c, EvaluationCallback) for c in callbacks)
    logger.set_model(model)
    logger.on_train_begin()
    logger.on_epoch_end(0)
    logger.on_epoch_end(1)
    logger.on_train_end()
    text = _events(str(tmp_path))["examples"]
    assert sorted(text) == [0, 1]
    assert text[1].count("- gold:") == 3 and "**[John Smith]**_PER_" in text[1]


def test_span_ner_examples_decode_at_the_task_threshold():
    labels = ["NONE", "PER", "LOC"]
    sentence = SpanSentence(("Ann", "met", "Bob"), ((0, 0, "PER"), (2, 2, "PER")))
    width = 2  # spans of the [3 words x 2 widths] grid: (0,0) (0,1) (1,1) (1,2) (2,2) (2,3)
    probabilities = np.full((1, 6, 3), [0.9, 0.05, 0.05])
    probabilities[0, 0] = [0.1, 0.8, 0.1]  # Ann: PER
    probabilities[0, 4] = [0.4, 0.2, 0.4]  # Bob: LOC at 0.4, below 0.5 but above 0.3
    dataset = tf.data.Dataset.from_tensors(({"word_mask": np.ones((1, 3))}, np.zeros((1, 6))))
    model = _fixed_model(probabilities)
    task = get_task("span_ner", max_span_width=width)
    [strict] = task.describe_predictions(model, dataset, [sentence], labels)
    [lenient] = task.with_options(threshold=0.3).describe_predictions(
        model, dataset, [sentence], labels)
    assert strict == ("- gold: **[Ann]**_PER_ met **[Bob]**_PER_\n"
                      "- predicted: **[Ann]**_PER_ met Bob ✗")
    assert lenient.endswith("- predicted: **[Ann]**_PER_ met **[Bob]**_LOC_ ✗")


def test_classification_examples_show_text_gold_and_predicted_label():
    labels = ["DESC", "ENTY", "HUM"]
    examples = [ClassificationExample("What is a *cat* ?", "DESC"),
                ClassificationExample("Who wrote it ?", "HUM")]
    dataset = tf.data.Dataset.from_tensors(({"x": np.zeros((2, 1))}, np.zeros(2)))
    model = _fixed_model([[0.1, 2.0, 0.3], [0.0, 0.0, 5.0]])
    assert get_task("classification").describe_predictions(model, dataset, examples, labels) == [
        "What is a \\*cat\\* ? → gold **DESC** / predicted **ENTY** ✗",
        "Who wrote it ? → gold **HUM** / predicted **HUM** ✓"]


def test_hparams_session_holds_the_settings_and_final_metrics(tmp_path):
    config = {"max_seq_length": 64, "learning_rate": 3e-5, "batch_size": 16,
              "preset": "bert_tiny_crf_tagger", "freeze_encoder": False, "dropout": None,
              "labels": ["O", "B-PER"], "task_options": {"stride": 8},
              "train_data": "/data/conll/train.txt"}
    log_dir = tmp_path / "pretrained" / "logs"
    (log_dir / "validation").mkdir(parents=True)  # as Keras's TensorBoard callback leaves it
    folder = write_hparams(str(log_dir), config, {"entity_f1": 0.75, "PER_f1": 0.5})
    # Into the validation run: no run of its own.
    assert folder == str(log_dir / "validation") and sorted(os.listdir(log_dir)) == ["validation"]
    accumulator = EventAccumulator(folder, size_guidance={"tensors": 0})
    accumulator.Reload()
    [start] = accumulator.Tensors(hparams_metadata.SESSION_START_INFO_TAG)
    content = accumulator.summary_metadata[hparams_metadata.SESSION_START_INFO_TAG]
    info = hparams_metadata.parse_session_start_info_plugin_data(
        content.plugin_data.content)
    hparams = {name: value.WhichOneof("kind") and getattr(value, value.WhichOneof("kind"))
               for name, value in info.hparams.items()}
    assert hparams == {"learning_rate": 3e-5, "batch_size": 16.0,
                       "preset": "bert_tiny_crf_tagger", "freeze_encoder": False,
                       "task_options.stride": 8.0, "max_seq_length": 64.0,
                       "train_data": "train.txt"}  # a path by its file name
    assert info.group_name == "pretrained"  # the run directory's name, not a hash
    assert start.step == 0
    events = _events(folder)
    assert events["final/entity_f1"] == {0: 0.75} and events["final/PER_f1"] == {0: 0.5}


def test_hparams_order_usually_varying_settings_first():
    from nlpzoo.tasks.training.tensorboard_hparams import hparams_of

    config = {"max_seq_length": 128, "adapter_size": 0, "batch_size": 32, "epochs": 3,
              "learning_rate": 2e-5, "init_checkpoint": "/ckpt/minilm", "preset": "bert_mini",
              "head": "crf", "lowercase": True, "seed": 42}
    assert list(hparams_of(config)) == ["preset", "init_checkpoint", "learning_rate", "epochs",
                                        "batch_size", "head", "adapter_size", "lowercase",
                                        "max_seq_length", "seed"]


def test_padding_fraction_goes_to_tensorboard_debug_only(tmp_path):
    from nlpzoo.tasks.training.callbacks import PaddingFractionLogger

    model = build_model("bert_tiny_classifier", num_classes=2, vocabulary_size=50,
                        num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32)
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0]], "int32")  # 4 real of 8: half padding
    x = {"token_ids": mask * 7, "segment_ids": np.zeros_like(mask), "padding_mask": mask}
    y = np.array([0, 1], "int32")
    full = np.ones((2, 4), "int32")  # validation: no padding
    validation = ({"token_ids": full * 7, "segment_ids": np.zeros_like(full),
                   "padding_mask": full}, y)
    logs = str(tmp_path / "logs")
    history = model.fit(x, y, epochs=2, batch_size=2, verbose=0, validation_data=validation,
                        callbacks=[keras.callbacks.TensorBoard(logs),
                                   PaddingFractionLogger(logs)])
    assert not [name for name in history.history if "padding" in name]  # no log, no bar
    assert "padding_fraction" not in model.evaluate(*validation, verbose=0, return_dict=True)
    train, val = _events(os.path.join(logs, "train")), _events(os.path.join(logs, "validation"))
    assert train["debug/padding_fraction"] == {0: 0.5, 1: 0.5}
    assert val["debug/padding_fraction"] == {0: 0.0, 1: 0.0}
    assert not [tag for tag in list(train) + list(val)
                if "padding" in tag and not tag.startswith("debug/")]


def test_scalar_mix_weights_go_to_tensorboard_each_epoch_as_the_model_holds_them(tmp_path):
    from nlpzoo.tasks.training.layer_mix_logger import LayerMixLogger

    shape = dict(num_classes=2, vocabulary_size=50, num_layers=2, hidden_dim=16, num_heads=2,
                 intermediate_dim=32, learning_rate=1e-2)
    mixed = build_model("bert_tiny_classifier", layer_mix="scalar_mix", **shape)
    rng = np.random.default_rng(0)
    ids = rng.integers(4, 50, (16, 6)).astype("int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    y = (ids[:, 0] > 25).astype("int32")
    logs = str(tmp_path / "mixed")
    held = []  # the weights the model holds at each epoch's end, by hand: softmax(w), γ
    at_epoch_end = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: held.append(
        (np.exp(np.asarray(mixed.encoder.get_layer("layer_mix").logits))
         / np.exp(np.asarray(mixed.encoder.get_layer("layer_mix").logits)).sum(),
         float(np.asarray(mixed.encoder.get_layer("layer_mix").scale)))))
    mixed.fit(x, y, epochs=2, batch_size=4, verbose=0,
              callbacks=[at_epoch_end, LayerMixLogger(logs)])
    events = _events(os.path.join(logs, "train"))
    assert sorted(events) == ["layer_mix/layer_0", "layer_mix/layer_1", "layer_mix/layer_2",
                              "layer_mix/scale"]  # the embeddings and both blocks, and γ
    for epoch, (weights, scale) in enumerate(held):
        logged = [events[f"layer_mix/layer_{j}"][epoch] for j in range(3)]
        np.testing.assert_allclose(logged, weights, rtol=1e-5)
        assert events["layer_mix/scale"][epoch] == pytest.approx(scale, rel=1e-5)
    assert not np.allclose(held[-1][0], 1 / 3)  # the mix learned: not the starting mean

    plain = build_model("bert_tiny_classifier", **shape)  # no scalar mix: nothing written
    plain.fit(x, y, epochs=1, batch_size=8, verbose=0,
              callbacks=[LayerMixLogger(str(tmp_path / "plain"))])
    assert not os.path.exists(tmp_path / "plain")
