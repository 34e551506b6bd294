"""Sentence embeddings as a `Task`: texts in, one vector per text out; no training."""

import json

import numpy as np

from nlpzoo.tasks.io.atomic_files import write_binary_atomically
from nlpzoo.tasks.text.text_pipeline import make_dataset as make_classification_dataset
from nlpzoo.tasks.text.text_readers import ClassificationExample
from nlpzoo.tasks.text.prediction_io import write_output
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.text import sentences as readers
from nlpzoo.tasks.sentence_embedding.model import SentenceEmbedder
from nlpzoo.tasks.sentence_embedding.serving import embedding_outputs
from nlpzoo.tasks.task import Task

# What embeddings are written as: a NumPy array, or JSON lines with their texts.
OUTPUT_KINDS = ("npy", "jsonl")
# The pipeline is the single-text one (`tasks.text.text_pipeline`, classification's too);
# the label it carries is unused.
_NO_LABEL = ""


@register_task
class SentenceEmbeddingTask(Task):
    """One vector per text from a pretrained (or fine-tuned) encoder, as it is.

    The model is a `SentenceEmbedder` (a pooling of one hidden layer, by
    default sentence-transformers' normalised mean) and needs no training:
    `trainable` is False, so tools/train.py refuses the task, while
    tools/embed.py, tools/predict.py and tools/export.py (`--task`) use it on
    any encoder. Input: plain text (one text per line) or JSON lines with a
    "text" field (`readers.read_sentences`); the preprocessor and `tf.data`
    pipeline are classification's single-text ones. Predictions: a `.npy`
    array [texts, hidden_dim] in input order, or JSON lines
    `{"text": ..., "embedding": [...]}`. Serving: `text` → `embedding`.

    Examples:
    >>> task = SentenceEmbeddingTask()
    >>> task.trainable, task.serving_inputs(), task.output_kind("vectors.npy")
    (False, ('text',), 'npy')
    """

    name = "sentence_embedding"
    pipeline_tag = "feature-extraction"
    formats = readers.FORMATS
    head_options = ("pooling", "normalize", "layer")
    trainable = False

    # === Data ===

    def read(self, path, data_format=None):
        return readers.read_sentences(path, data_format)

    def label_names(self, examples):
        return []

    def texts(self, examples):
        return (example.text for example in examples)

    def make_dataset(self, examples, preprocessor, labels=(), batch_size=32, training=False,
                     seed=None):
        """Batched `(features, unused label)`, in input order unless `training`."""
        texts = [ClassificationExample(e.text, _NO_LABEL, source=e.source, line=e.line)
                 for e in examples]
        return make_classification_dataset(texts, preprocessor, [_NO_LABEL],
                                           batch_size=batch_size, training=training, seed=seed)

    # === Model ===

    def model_head_options(self, labels):
        return {}

    def build_model(self, encoder, pooling="mean", normalize=True, layer=None, dropout=None):
        """A `SentenceEmbedder` (`dropout` is unused: nothing trains)."""
        return SentenceEmbedder(encoder, pooling=pooling, normalize=normalize, layer=layer)

    def monitor(self, num_classes):
        raise ValueError(f"the {self.name} task has no training and no validation metric")

    # === Prediction ===

    def embed(self, model, preprocessor, examples, batch_size=64, progress=None):
        """The embeddings of `examples`, float32 [len(examples), hidden_dim], in their order.

        Args:
            model: a `SentenceEmbedder` (any model from encoder inputs to [B, H]).
            preprocessor: its `TextPreprocessor`.
            examples: `readers.Sentence`s (anything with `text`, `source`, `line`).
            batch_size: texts per batch.
            progress: optional `progress(done, total)`, called after each batch.
        """
        dataset = self.make_dataset(examples, self.preprocessor_of(preprocessor),
                                    batch_size=batch_size)
        batches, done = [], 0
        for features, _ in dataset:
            batches.append(np.asarray(model.predict_on_batch(features), np.float32))
            done += len(batches[-1])
            if progress is not None:
                progress(done, len(examples))
        return np.concatenate(batches, axis=0)

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        return self.read(path, "text" if input_format == "text" else data_format)

    def output_kind(self, output, output_format="auto"):
        """"npy" or "jsonl": what `write_embeddings` writes to `output` ("-": standard output).

        `output_format` "jsonl" asks for JSON lines; "auto" goes by the file
        name (`.npy`, `.jsonl`, or "-" for JSON lines on standard output).
        """
        if output_format == "jsonl" or (output_format == "auto" and (
                output == "-" or output.endswith(".jsonl"))):
            return "jsonl"
        if output_format == "auto" and output.endswith(".npy"):
            return "npy"
        if output_format not in ("auto", "jsonl"):
            raise ValueError(f"embeddings are written as {' or '.join(OUTPUT_KINDS)}, not "
                             f"{output_format}")
        raise ValueError(f"{output}: embeddings are written to a .npy file (a float32 array, "
                         "one row per text) or a .jsonl file (text and embedding per line)")

    def write_embeddings(self, examples, embeddings, output, output_format="auto",
                         describe=None):
        """Writes `embeddings` (one row per example) to `output` atomically.

        `.npy`: the float32 array [texts, hidden_dim]; JSON lines: one
        `{"text": ..., "embedding": [...]}` per text (each number the shortest
        decimal that reads back as the same float32), in input order.
        `describe(example)` gives the fields before `embedding` (default
        `{"text": example.text}`; word vectors add the word and its index).
        """
        describe = describe or (lambda example: {"text": example.text})
        kind = self.output_kind(output, output_format)
        embeddings = np.asarray(embeddings, np.float32)
        if kind == "npy":
            write_binary_atomically(output, lambda f: np.save(f, embeddings))
            return
        write_output(output, (
            json.dumps({**describe(example),
                        "embedding": [float(value) for value in row.astype(str)]},
                       ensure_ascii=False) + "\n"
            for example, row in zip(examples, embeddings)))

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        self.output_kind(output, output_format)  # a bad output fails before any work
        embeddings = self.embed(model, preprocessor, examples, batch_size)
        self.write_embeddings(examples, embeddings, output, output_format)
        return f"{len(examples)} texts ({embeddings.shape[1]}-dimensional embeddings)"

    # === Serving ===

    def serving_outputs(self, model, preprocessor, labels, text):
        return embedding_outputs(model, preprocessor, text)
