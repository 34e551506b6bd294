"""Prediction over examples sorted by length: dense batches, outputs back in input order.

In input order, each batch is padded to the bucket of its longest example
(`tasks.batching`), so one long sentence makes its whole batch pay for its
length. `predict_in_length_order` sorts the examples by their token count
after preprocessing (longest first), batches them in that order with the
task's own order-preserving dataset (each batch padded to the bucket of its
longest, as before), and gives the outputs back in input order. Padding is
masked, so an example's output does not depend on its batch neighbours: the
predictions are those of an unsorted run, up to float rounding.

Longest first: a batch too large for the accelerator's memory fails at the
first step, not at the end of a long run. Equal lengths keep their input order.

The whole input is sorted at once: prediction input is read whole into memory
(`tasks.prediction_io`) and predictions are written after the last batch, so
nothing streams and sorting within chunks would only make batches less dense.

`text_token_counts` and `word_token_counts` give the lengths: they run the
preprocessor's own `encode`, the transform the datasets use, so the order
follows what the model really sees (truncation and document context included).

Examples:
>>> examples = ["a", "a b c d e", "b", "b c d e f"]
>>> lengths = [len(text.split()) for text in examples]
>>> def make_dataset(texts):  # batches of 2, each padded to its longest
...     return [(texts[i:i + 2], None) for i in range(0, len(texts), 2)]
>>> def predict_rows(batch):
...     width = max(len(text.split()) for text in batch)
...     return [f"{text} (padded to {width})" for text in batch]
>>> predict_in_length_order(examples, lengths, make_dataset, predict_rows, progress=False)
['a (padded to 1)', 'a b c d e (padded to 5)', 'b (padded to 1)', 'b c d e f (padded to 5)']

(In input order both batches would be padded to 5.)
"""

import numpy as np
import tensorflow as tf

from tasks.document_context import context_lists
from tasks.progress import track

# Examples tokenized at a time to count their tokens (the pipelines' order of magnitude).
_COUNT_BATCH = 1024


def length_order(lengths):
    """The positions of the examples, longest first; equal lengths keep input order.

    Examples:
    >>> length_order([3, 9, 3, 5]).tolist()
    [1, 3, 0, 2]
    """
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise ValueError(f"expected one length per example (a flat list), got shape "
                         f"{lengths.shape}")
    return np.argsort(-lengths, kind="stable")


def restore_order(values, order):
    """`values` in input order, from `values[k]` being the output of example `order[k]`.

    Examples:
    >>> restore_order(["b", "d", "a", "c"], [1, 3, 0, 2])
    ['a', 'b', 'c', 'd']
    """
    values = list(values)
    order = np.asarray(order)
    if len(values) != len(order):
        raise ValueError(f"{len(values)} outputs for {len(order)} examples")
    if sorted(order.tolist()) != list(range(len(order))):
        raise ValueError("order must be a permutation of 0 .. n-1")
    restored = [None] * len(values)
    for value, position in zip(values, order.tolist()):
        restored[position] = value
    return restored


def predict_in_length_order(examples, lengths, make_dataset, predict_rows,
                            what="predicting", progress=True):
    """Runs `predict_rows` over `examples` in dense batches; one output per example, in order.

    Args:
        examples: what the model predicts on (for word tasks: the windows of
            `Task.prediction_examples`), in input order.
        lengths: the token count of each example after preprocessing
            (`text_token_counts`, `word_token_counts`); only the batching
            order depends on it.
        make_dataset: `make_dataset(examples)` → the order-preserving batched
            `(features, labels)` of those examples (a task's `make_dataset`
            with `training=False`).
        predict_rows: `predict_rows(features)` → one output per row of the batch.
        what: the progress line's label.
        progress: report progress (`tasks.progress.track`).

    Returns:
        A list with the output of every example, in the order of `examples`.

    Raises:
        ValueError: `lengths` or the outputs do not match the examples.
    """
    examples = list(examples)
    if len(lengths) != len(examples):
        raise ValueError(f"{len(lengths)} lengths for {len(examples)} examples")
    if not examples:
        return []
    order = length_order(lengths)
    batches = make_dataset([examples[i] for i in order])
    outputs = []
    for features, _ in track(batches, what, enabled=progress):
        outputs.extend(predict_rows(features))
    if len(outputs) != len(examples):
        raise ValueError(f"the batches gave {len(outputs)} outputs for {len(examples)} examples")
    return restore_order(outputs, order)


def text_token_counts(preprocessor, texts, text_pairs=None):
    """The tokens of each text (or text pair), `[CLS]` and `[SEP]` included, as
    `preprocessor.encode` packs them (truncated to `max_seq_length`).

    Examples:
    >>> from tasks.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open"],
    ...                                 max_seq_length=6)
    >>> text_token_counts(preprocessor, ["open", "open open open open open"])
    [3, 6]
    >>> text_token_counts(preprocessor, ["open"], ["open open"])
    [6]
    """
    texts = list(texts)
    if text_pairs is not None and len(text_pairs) != len(texts):
        raise ValueError(f"{len(text_pairs)} second texts for {len(texts)} texts")
    counts = []
    for start in range(0, len(texts), _COUNT_BATCH):
        batch = {"text": tf.constant(texts[start:start + _COUNT_BATCH], tf.string)}
        if text_pairs is not None:
            batch["text_pair"] = tf.constant(list(text_pairs[start:start + _COUNT_BATCH]),
                                             tf.string)
        counts.extend(_row_lengths(preprocessor.encode(**batch)))
    return counts


def word_token_counts(preprocessor, sentences):
    """The tokens of each word sentence, `[CLS]`, `[SEP]` and document context included,
    as `WordPreprocessor.encode_words` packs them.

    Args:
        preprocessor: a `WordPreprocessor`.
        sentences: objects with `words` (and `left_context`, `right_context`).

    Examples:
    >>> from tasks.tagging.readers import TaggedSentence
    >>> from tasks.word_preprocessor import WordPreprocessor
    >>> preprocessor = WordPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s"])
    >>> word_token_counts(preprocessor, [TaggedSentence(("opens", "open"), ("O", "O")),
    ...                                  TaggedSentence(("open",), ("O",))])
    [5, 3]
    """
    sentences = list(sentences)
    left, right = context_lists(sentences)
    counts = []
    for start in range(0, len(sentences), _COUNT_BATCH):
        end = start + _COUNT_BATCH
        context = {} if left is None else {"left_context": _ragged_words(left[start:end]),
                                           "right_context": _ragged_words(right[start:end])}
        words = _ragged_words([s.words for s in sentences[start:end]])
        counts.extend(_row_lengths(preprocessor.encode(words, **context)))
    return counts


def _row_lengths(features):
    return features["token_ids"].row_lengths().numpy().tolist()


def _ragged_words(word_lists):
    """String RaggedTensor [sentences, (words)] from flat values (typed even when all empty)."""
    flat = [word for words in word_lists for word in words]
    return tf.RaggedTensor.from_row_lengths(tf.constant(flat, tf.string, shape=[len(flat)]),
                                            [len(words) for words in word_lists])
