"""A task defined here, and nowhere else, goes through every binary: the one-door promise.

`KeywordSentimentTask` reads its own TSV format, puts its own model (a
mean-pooled classifier, registered for loading) on a `bert_tiny` encoder
preset (no task preset), and writes its own predictions and serving outputs.
The binaries find it with `--task_module=tests.tasks.test_custom_task`; no file
outside this one knows it exists.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers import Encoder
from nlpzoo.tasks.io.atomic_files import write_text_atomically
from nlpzoo.tasks.text.batching import shuffle_batch_and_count
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.labels import LabelSet
from nlpzoo.tasks.text.prediction_io import read_text_lines
from nlpzoo.tasks.registry import get_task, register_task, task_from_metadata, task_names
from nlpzoo.tasks.modeling.serving import first_max_index
from nlpzoo.tasks.task import Task
from tests.helpers.paths import ROOT

REPO = ROOT
MODULE = "tests.tasks.test_custom_task"


@keras.saving.register_keras_serializable(package="custom_task_test")
class MeanPooledClassifier(EncoderTaskModel):
    """Mean of the encoder's token vectors (padding left out) → class logits."""

    def __init__(self, encoder, num_classes, **kwargs):
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in Encoder.INPUTS}
        sequence = encoder(inputs)["sequence_output"]
        pooled = keras.layers.GlobalAveragePooling1D(name="mean")(
            sequence, mask=keras.ops.cast(inputs["padding_mask"], "bool"))
        logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")(pooled)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.num_classes = int(num_classes)

    def _task_config(self):
        return {"num_classes": self.num_classes}


class Review:
    def __init__(self, text, label, source, line):
        self.text, self.label, self.source, self.line = text, label, source, line


@register_task
class KeywordSentimentTask(Task):
    """`label<TAB>text` lines; a mean-pooled classifier; JSONL predictions."""

    name = "keyword_sentiment"
    formats = ("tsv",)
    head_options = ("num_classes", "labels")

    def read(self, path, data_format=None):
        reviews = []
        for number, line in read_text_lines(path):
            label, tab, text = line.partition("\t")
            if not tab or not text.strip():
                raise DataFormatError(f"{path}:{number}: expected label<TAB>text")
            reviews.append(Review(text, label, path, number))
        return reviews

    def label_names(self, reviews):
        return sorted({review.label for review in reviews})

    def texts(self, reviews):
        return (review.text for review in reviews)

    def make_dataset(self, reviews, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        label_set = LabelSet(labels)
        ids = [label_set.id(r.label, f"{r.source}:{r.line}") for r in reviews]
        dataset = (tf.data.Dataset.from_tensor_slices(([r.text for r in reviews], ids))
                   .batch(64)
                   .map(lambda text, label: (preprocessor.encode(text), label))
                   .unbatch()
                   .map(lambda features, label: (features, label)))
        return shuffle_batch_and_count(dataset, len(reviews), batch_size,
                                       preprocessor.max_seq_length,
                                       preprocessor.padding_values, training, seed)

    def build_model(self, encoder, num_classes=2, labels=None, dropout=0.1):
        return MeanPooledClassifier(encoder, len(labels) if labels else num_classes)

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def metrics(self, model):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def monitor(self, num_classes):
        return ("val_accuracy", "max")

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        return [Review(line, None, path, number) for number, line in read_text_lines(path)]

    def write_predictions(self, model, preprocessor, reviews, labels, output,
                          output_format="auto", batch_size=64):
        logits = model.predict(preprocessor(tf.constant([r.text for r in reviews])), verbose=0)
        write_text_atomically(output, [
            json.dumps({"text": review.text, "label": labels[int(np.argmax(row))]}) + "\n"
            for review, row in zip(reviews, logits)])
        return f"{len(reviews)} reviews"

    def serving_outputs(self, model, preprocessor, labels, text):
        logits = model(preprocessor(text), training=False)
        return {"label": tf.gather(tf.constant(labels), first_max_index(logits))}


def _tools(*commands):
    """Runs `(tool, *arguments)` commands at the same time; their standard outputs."""
    processes = [subprocess.Popen(
        [sys.executable, os.path.join(REPO, "tools", name), f"--task_module={MODULE}",
         *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}) for name, *arguments in commands]
    outputs = [process.communicate() for process in processes]
    for process, (_, stderr) in zip(processes, outputs):
        assert process.returncode == 0, stderr[-3000:]
    return [stdout for stdout, _ in outputs]


def _tool(name, *arguments):
    return _tools((name, *arguments))[0]


def _write_reviews(path, count, seed):
    random = np.random.default_rng(seed)
    filler = ["the", "film", "was", "a", "plot", "with", "actors", "and", "music"]
    lines = []
    for _ in range(count):
        label = str(random.choice(["pos", "neg"]))
        words = list(random.choice(filler, size=5))
        words.insert(int(random.integers(0, 5)), "wonderful" if label == "pos" else "dreadful")
        lines.append(f"{label}\t{' '.join(words)}\n")
    with open(path, "w") as f:
        f.writelines(lines)


def test_the_task_registers_itself_when_its_module_is_imported():
    assert "keyword_sentiment" in task_names()
    assert isinstance(get_task("keyword_sentiment"), KeywordSentimentTask)


@pytest.mark.slow  # four binaries on a task of the test's own: over a minute on 2 cores
def test_a_task_defined_in_a_test_trains_evaluates_predicts_and_exports(tmp_path):
    train, dev = str(tmp_path / "train.tsv"), str(tmp_path / "dev.tsv")
    _write_reviews(train, 96, seed=0)
    _write_reviews(dev, 32, seed=1)
    model_dir = str(tmp_path / "run")
    _tool("train.py", "--task=keyword_sentiment", "--preset=bert_tiny", f"--train_data={train}",
          f"--eval_data={dev}", f"--model_dir={model_dir}", "--epochs=4", "--batch_size=16",
          "--learning_rate=1e-3", "--vocab_size=100", "--max_seq_length=16")
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config["task"] == "keyword_sentiment" and config["preset"] == "bert_tiny"
    assert config["labels"] == ["neg", "pos"]

    texts = str(tmp_path / "texts.txt")
    gold = []
    with open(dev) as f, open(texts, "w") as out:
        for line in f:
            label, _, text = line.rstrip("\n").partition("\t")
            gold.append(label)
            out.write(text + "\n")
    output, exported = str(tmp_path / "predictions.jsonl"), str(tmp_path / "export")
    evaluated, _, _ = _tools(  # all three read the finished model directory
        ("evaluate.py", f"--model_dir={model_dir}", f"--data={dev}"),
        ("predict.py", f"--model={model_dir}/best_model.keras", f"--input={texts}",
         f"--output={output}"),
        ("export.py", f"--model_dir={model_dir}", f"--output={exported}"))
    metrics = json.loads(evaluated.strip().splitlines()[-1])
    with open(output) as f:
        predicted = [json.loads(line)["label"] for line in f]
    # evaluate.py and predict.py agree: the accuracy is the share of correct predictions.
    agreement = np.mean([p == g for p, g in zip(predicted, gold)])
    assert metrics["accuracy"] == pytest.approx(agreement, abs=1e-6)
    assert metrics["accuracy"] > 0.8  # the keyword decides the label: it is learnable

    with open(texts) as f:
        sentences = [line.strip() for line in f]
    served = subprocess.run(
        [sys.executable, "-c", (
            "import json, sys, tensorflow as tf, tensorflow_text\n"
            f"serve = tf.saved_model.load({exported!r}).signatures['serving_default']\n"
            "out = serve(text=tf.constant(json.load(sys.stdin)))\n"
            "print(json.dumps([x.decode() for x in out['label'].numpy()]))")],
        input=json.dumps(sentences), capture_output=True, text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert served.returncode == 0, served.stderr[-2000:]
    assert json.loads(served.stdout.strip().splitlines()[-1]) == predicted


def test_a_model_of_an_unimported_task_says_which_module_to_import():
    with pytest.raises(ValueError, match=r"--task_module=my_tasks\.reviews"):
        task_from_metadata({"task": "reviews", "task_module": "my_tasks.reviews"})


def test_an_unknown_task_module_is_a_one_line_error():
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "evaluate.py"),
         "--task_module=no_such_module_here", "--model=x.keras", "--data=y"],
        capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "error: --task_module: cannot import task module 'no_such_module_here': "
        "No module named 'no_such_module_here'")
