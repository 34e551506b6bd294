"""Decoded validation examples as a TensorBoard text summary, once per epoch.

Each task decides what one example looks like (`Task.describe_predictions`);
this module holds the callback that writes them and the Markdown helpers the
tasks share.
"""

import keras
import numpy as np
import tensorflow as tf


def markdown_escape(text):
    """`text` with the characters Markdown would read as markup escaped.

    Examples:
    >>> markdown_escape("a*b [c]")
    'a\\\\*b \\\\[c\\\\]'
    """
    return "".join("\\" + c if c in "\\`*_[]<>|" else c for c in str(text))


def bracketed(words, spans):
    """The words with each entity as bold `[words]` and its italic type, in Markdown.

    Spans are `(start, end, type)` with an inclusive `end`.

    Spans that overlap an earlier one (nested decoding) are listed after the
    sentence instead of being bracketed in it.

    Examples:
    >>> bracketed(["EU", "rejects", "German", "call"], [(0, 0, "ORG"), (2, 2, "MISC")])
    '**[EU]**_ORG_ rejects **[German]**_MISC_ call'
    >>> bracketed(["New", "York", "City"], [(0, 2, "LOC"), (0, 1, "LOC")])
    '**[New York City]**_LOC_ (also: New York/LOC)'
    """
    words = [markdown_escape(word) for word in words]
    parts, nested, position = [], [], 0
    for start, end, label in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start < position:
            nested.append(f"{' '.join(words[start:end + 1])}/{markdown_escape(label)}")
            continue
        parts.extend(words[position:start])
        parts.append(f"**[{' '.join(words[start:end + 1])}]**_{markdown_escape(label)}_")
        position = end + 1
    parts.extend(words[position:])
    text = " ".join(parts)
    return f"{text} (also: {', '.join(nested)})" if nested else text


def entity_comparison(words, gold, predicted):
    """Markdown of one sentence's gold and predicted entities, one line each.

    Examples:
    >>> print(entity_comparison(["Paris", "is", "big"], [(0, 0, "LOC")], []))
    - gold: **[Paris]**_LOC_ is big
    - predicted: Paris is big ✗
    """
    verdict = "✓" if sorted(map(tuple, gold)) == sorted(map(tuple, predicted)) else "✗"
    return f"- gold: {bracketed(words, gold)}\n- predicted: {bracketed(words, predicted)} {verdict}"


def first_batch(dataset, count):
    """`(features, number of rows to show)` of the first batch of an order-preserving dataset.

    Examples:
    >>> dataset = tf.data.Dataset.from_tensor_slices(({"x": [1, 2, 3]}, [0, 1, 0])).batch(2)
    >>> features, rows = first_batch(dataset, count=5)
    >>> features["x"].numpy().tolist(), rows
    ([1, 2], 2)
    """
    for features, _ in dataset.take(1):
        return features, min(count, int(tf.shape(tf.nest.flatten(features)[0])[0]))
    return None, 0


class ExampleTextLogger(keras.callbacks.Callback):
    """Writes `describe(model)` (Markdown lines) as one TensorBoard text summary per epoch.

    The summary goes to `log_dir` under `tag` at step `epoch` (0-based, the
    step Keras's `TensorBoard` callback gives epoch scalars), so the text of
    an epoch sits beside its curves.

    Args:
        describe: `describe(model) -> [markdown, ...]`, one entry per example.
        log_dir: the folder of the event file (e.g. `logs/validation`).
        tag: the summary's tag.

    Examples:
    >>> import tempfile
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> logger = ExampleTextLogger(lambda model: ["*one*", "two"], tempfile.mkdtemp())
    >>> logger.set_model(model)
    >>> logger.on_train_begin(); logger.on_epoch_end(0); logger.on_train_end()
    >>> logger.last_text
    '*one*\\n\\n---\\n\\ntwo'
    """

    def __init__(self, describe, log_dir, tag="examples"):
        super().__init__()
        self.describe = describe
        self.log_dir = log_dir
        self.tag = tag
        self.last_text = None
        self._writer = None

    def on_train_begin(self, logs=None):
        self._writer = tf.summary.create_file_writer(self.log_dir)

    def on_epoch_end(self, epoch, logs=None):
        # Between examples a rule: TensorBoard renders one Markdown document per step.
        self.last_text = "\n\n---\n\n".join(self.describe(self.model)) or "(no examples)"
        with self._writer.as_default():
            tf.summary.text(self.tag, self.last_text, step=epoch)
        self._writer.flush()

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def label_comparison(texts, gold, predicted):
    """Markdown of one example: its text(s) → gold label / predicted label.

    Examples:
    >>> print(label_comparison(["What is a cat ?"], "DESC", "ENTY"))
    What is a cat ? → gold **DESC** / predicted **ENTY** ✗
    """
    verdict = "✓" if str(gold) == str(predicted) else "✗"
    text = " / ".join(markdown_escape(text) for text in texts)
    return f"{text} → gold **{markdown_escape(gold)}** / predicted **{markdown_escape(predicted)}** {verdict}"


def predicted_labels(outputs, labels):
    """Per row: the arg-max label of class scores [N, C], else the rounded score.

    Examples:
    >>> predicted_labels(np.array([[0.1, 0.9], [2.0, -1.0]]), ["no", "yes"])
    ['yes', 'no']
    >>> predicted_labels(np.array([0.25, 0.5]), [])
    ['0.25', '0.5']
    """
    outputs = np.asarray(outputs, np.float64)
    if outputs.ndim == 2 and labels and outputs.shape[1] == len(labels):
        return [str(labels[i]) for i in outputs.argmax(-1)]
    return [f"{value:.4g}" for value in outputs.reshape(len(outputs), -1)[:, 0]]
