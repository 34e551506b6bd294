"""Prediction over examples sorted by length: dense batches, outputs back in input order.

In input order, each batch is padded to the bucket of its longest example
(`tasks.text.batching`), so one long sentence makes its whole batch pay for its
length. `predict_encoded_in_length_order` takes examples encoded once by the
preprocessor's own `encode` (`encode_word_sentences`, `encode_texts`: the
transform the datasets use, so truncation and document context are those the
model sees), batches examples of similar token counts together
(`batch_order`), pads each batch in NumPy to its longest rounded up to a
multiple of 8, and gives the outputs back in input order. Padding is masked,
so an example's output does not depend on its batch neighbours: the
predictions are those of an input-order run, up to float rounding.

The order: full batches of consecutive lengths, longest first (a batch too
large for the accelerator's memory fails early), then the one short batch
(when the batch size does not divide the count), made of whichever run of
consecutive lengths costs least there. A plain sort would put it at the short
end, and could then pad more than input order does: 100 texts in batches of
64 (max_seq_length 128), one of 100 tokens in the second batch and the others
under 32 tokens, pad to 64·32 + 36·128 = 6,656 positions in input order but to
64·128 + 36·32 = 9,344 sorted longest first. `batch_order` gives the least
padding (`padded_size`) of every way to cut the examples into batches of those
sizes, input order among them (here 6,656 again).

The whole input is ordered at once: prediction input is read whole into memory
(`tasks.text.prediction_io`) and predictions are written after the last batch, so
nothing streams and ordering within chunks would only make batches less dense.

Encoding once and batching in NumPy, instead of a `tf.data` pipeline that
tokenizes again, halved `write_predictions`' time on 3,453 CoNLL-2003 test
sentences (MiniLM tagger, AMD EPYC, 2026-11-23): 27 s → 13.5 s, of which
12.6 s is the model's.

Examples:
>>> features = {"token_ids": [np.array([2, 5, 3]), np.array([2, 5, 5, 5, 5, 5, 5, 5, 5, 3]),
...                           np.array([2, 3]), np.array([2, 5, 5, 5, 5, 5, 5, 5, 3])]}
>>> def predict_rows(batch):
...     return [f"{int((row > 0).sum())} tokens, padded to {len(row)}"
...             for row in batch["token_ids"]]
>>> predict_encoded_in_length_order(features, predict_rows, batch_size=2, padding_values={},
...                                 max_length=16, progress=False)
['3 tokens, padded to 8', '10 tokens, padded to 16', '2 tokens, padded to 8', '9 tokens, padded to 16']

(In input order both batches would be padded to 16.)
"""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.batching import bucket_lengths
from nlpzoo.tasks.words.document_context import context_lists
from nlpzoo.tasks.io.progress import track
from nlpzoo.tasks.words.pipeline import ragged_words

# Examples tokenized at a time (the pipelines' order of magnitude).
_ENCODE_BATCH = 1024


def padded_lengths(lengths, max_length=None):
    """The length each example is padded to when it is the longest of its batch: its
    bucket (`tasks.text.batching.bucket_lengths(max_length)`), or itself when `max_length` is None.

    Examples:
    >>> padded_lengths([3, 17, 100], max_length=100).tolist()
    [16, 32, 100]
    """
    lengths = np.asarray(lengths, np.int64)
    if max_length is None:
        return lengths
    buckets = np.asarray(bucket_lengths(max_length), np.int64)
    return buckets[np.minimum(np.searchsorted(buckets, lengths), len(buckets) - 1)]


def padded_size(lengths, batch_size, max_length=None):
    """Token positions (real and padding) of the batches of `lengths`, in the order given:
    consecutive batches of `batch_size`, each padded to its longest's `padded_lengths`.

    Examples:
    >>> padded_size([1, 5, 1, 5], batch_size=2), padded_size([5, 5, 1, 1], batch_size=2)
    (20, 12)
    """
    lengths = np.asarray(lengths, np.int64)
    _check_batch_size(batch_size)
    return int(sum(len(lengths[i:i + batch_size]) *
                   padded_lengths([lengths[i:i + batch_size].max()], max_length)[0]
                   for i in range(0, len(lengths), batch_size)))


def batch_order(lengths, batch_size, max_length=None):
    """The positions of the examples in the order to batch them in: the least padding.

    Full batches of consecutive lengths, longest batch first, then the one
    short batch (`len(lengths) % batch_size` examples, if any): the run of
    consecutive lengths where it saves most. No other way of cutting the
    examples into batches of these sizes pads less (`padded_size`): the
    batch holding the longest example pays for it with every row, so it
    holds the next longest too, and so on down; the only choice left is where
    the short batch goes, and every place is tried.

    Args:
        lengths: the token count of each example.
        batch_size: examples per batch.
        max_length: the bucket lengths' maximum (`tasks.text.batching`); None:
            batches are padded to their longest exactly.

    Examples:
    >>> batch_order([1, 9, 1, 9], batch_size=2).tolist()  # the 9s together
    [3, 1, 2, 0]
    >>> batch_order([1, 1, 1, 1, 9], batch_size=2).tolist()  # the 9 alone in the short batch
    [3, 2, 1, 0, 4]
    """
    lengths = np.asarray(lengths, np.int64)
    if lengths.ndim != 1:
        raise ValueError(f"expected one length per example (a flat list), got shape "
                         f"{lengths.shape}")
    _check_batch_size(batch_size)
    ascending = np.argsort(lengths, kind="stable")
    full, rest = divmod(len(lengths), batch_size)
    if rest == 0:
        return ascending[::-1]
    padded = padded_lengths(lengths[ascending], max_length)
    # With the short batch at ascending[j*B : j*B + rest], full batch m ends at position
    # (m + 1)*B - 1 below it (m < j) and at (m + 1)*B + rest - 1 above it (m >= j).
    ends = np.arange(1, full + 1) * batch_size - 1
    below = np.concatenate([[0], np.cumsum(padded[ends])])  # m < j, for j = 0 .. full
    above = np.concatenate([np.cumsum(padded[ends + rest][::-1])[::-1], [0]])  # m >= j
    cost = batch_size * (below + above) + rest * padded[np.arange(full + 1) * batch_size +
                                                        rest - 1]
    j = full - int(np.argmin(cost[::-1]))  # ties: the short batch nearest the long end
    short = ascending[j * batch_size:j * batch_size + rest]
    others = np.concatenate([ascending[:j * batch_size], ascending[j * batch_size + rest:]])
    return np.concatenate([others[::-1], short[::-1]])


def _check_batch_size(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or \
            batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


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


def encode_texts(preprocessor, texts, text_pairs=None):
    """The model features of texts (or text pairs), one NumPy int32 array per text and
    feature, as `preprocessor.encode` makes them: the features a text task's
    prediction dataset holds, before padding.

    Examples:
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open"])
    >>> encode_texts(preprocessor, ["open"], ["open open"])["segment_ids"][0].tolist()
    [0, 0, 0, 1, 1, 1]
    """
    texts = list(texts)
    if text_pairs is not None and len(text_pairs) != len(texts):
        raise ValueError(f"{len(text_pairs)} second texts for {len(texts)} texts")
    encoded = {}
    for start in range(0, len(texts), _ENCODE_BATCH):
        batch = {"text": tf.constant(texts[start:start + _ENCODE_BATCH], tf.string)}
        if text_pairs is not None:
            batch["text_pair"] = tf.constant(list(text_pairs[start:start + _ENCODE_BATCH]),
                                             tf.string)
        for name, ragged in preprocessor.encode(**batch).items():
            encoded.setdefault(name, []).extend(_numpy_rows(ragged))
    return encoded


def encode_word_sentences(preprocessor, sentences):
    """The model features of word sentences, one NumPy int32 array per sentence and feature,
    as `WordPreprocessor.encode_words` makes them (document context included): the
    features a word task's prediction dataset holds, before padding.

    Args:
        preprocessor: a `WordPreprocessor`.
        sentences: objects with `words` (and `left_context`, `right_context`).

    Returns:
        {feature name: [one int32 array per sentence]}.

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> from nlpzoo.tasks.words.preprocessor import WordPreprocessor
    >>> preprocessor = WordPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s"])
    >>> features = encode_word_sentences(preprocessor, [TaggedSentence(("opens",), ("O",))])
    >>> features["token_ids"][0].tolist(), features["word_starts"][0].tolist()
    ([2, 4, 5, 3], [1])
    """
    sentences = list(sentences)
    left, right = context_lists(sentences)
    encoded = {}
    for start in range(0, len(sentences), _ENCODE_BATCH):
        end = start + _ENCODE_BATCH
        context = {} if left is None else {"left_context": ragged_words(left[start:end]),
                                           "right_context": ragged_words(right[start:end])}
        words = ragged_words([s.words for s in sentences[start:end]])
        for name, ragged in preprocessor.encode(words, **context).items():
            encoded.setdefault(name, []).extend(_numpy_rows(ragged))
    return encoded


def compiles_each_shape(model):
    """Whether `model` predicts through XLA, which compiles every input shape anew: then
    `predict_encoded_in_length_order` should pad to the few bucket lengths.

    Examples:
    >>> import keras
    >>> model = keras.Sequential([keras.layers.Dense(1)])
    >>> model.compile(jit_compile=True)
    >>> compiles_each_shape(model), compiles_each_shape(object())
    (True, False)
    """
    # Keras's compile() resolves "auto" to a bool; objects without it are not compiled.
    return getattr(model, "jit_compile", False) is True


def predict_encoded_in_length_order(features, predict_rows, batch_size, padding_values,
                                    max_length, pad_to_buckets=False, multiple=8,
                                    what="predicting", progress=None):
    """Runs `predict_rows` over encoded examples in dense batches; one output per example,
    in input order.

    The features are encoded once (`encode_word_sentences`, `encode_texts`);
    the examples are ordered by token count (`batch_order`) and
    each batch is padded to its longest example rounded up to `multiple`
    (capped at `max_length`), which pads less than the buckets of
    `tasks.text.batching`. Without XLA a predict function traced for two shapes
    takes any shape (Keras traces with `reduce_retracing`); an XLA-compiled
    model compiles each shape, so `pad_to_buckets=True` keeps the buckets.

    Args:
        features: {name: one array per example}; every feature is padded to
            the batch's width (word-level features are never longer than the
            tokens, `token_ids`, whose lengths order the examples).
        predict_rows: `predict_rows(batch)` → one output per row of the
            batch, a {name: int32 [rows, width]} dict.
        batch_size: examples per batch.
        padding_values: {name: the value padding takes} (0 otherwise).
        max_length: the longest width (the preprocessor's `max_seq_length`).
        pad_to_buckets: pad to `tasks.text.batching.bucket_lengths(max_length)`.
        multiple: without buckets, widths are multiples of this.
        what, progress: the progress line's label; report progress (None: if the
            program turned progress on, `tasks.io.progress.set_enabled`).

    Returns:
        A list with the output of every example, in input order.

    Examples:
    >>> features = {"token_ids": [np.array([2, 5, 3]), np.array([2, 5, 5, 5, 5, 3])]}
    >>> predict_encoded_in_length_order(
    ...     features, lambda batch: batch["token_ids"].tolist(), batch_size=1,
    ...     padding_values={}, max_length=16, multiple=4, progress=False)
    [[2, 5, 3, 0], [2, 5, 5, 5, 5, 3, 0, 0]]
    """
    _check_batch_size(batch_size)
    # No examples: the encoders give no features at all.
    lengths = np.asarray([len(row) for row in features.get("token_ids", [])], np.int64)
    if any(len(rows) != len(lengths) for rows in features.values()):
        raise ValueError("every feature needs one row per example")
    if not len(lengths):
        return []
    order = batch_order(lengths, batch_size, max_length if pad_to_buckets else None)

    def batches():
        for start in range(0, len(order), batch_size):
            members = order[start:start + batch_size]
            longest = int(lengths[members].max())
            if pad_to_buckets:
                width = int(padded_lengths([longest], max_length)[0])
            else:
                width = min(-(-longest // multiple) * multiple, max(max_length, longest))
            batch = {}
            for name, rows in features.items():
                padded = np.full((len(members), width), padding_values.get(name, 0), np.int32)
                for row, member in enumerate(members):
                    padded[row, :len(rows[member])] = rows[member]
                batch[name] = padded
            yield batch

    outputs = []
    for batch in track(batches(), what, total=-(-len(order) // batch_size), enabled=progress):
        outputs.extend(predict_rows(batch))
    if len(outputs) != len(order):
        raise ValueError(f"the batches gave {len(outputs)} outputs for {len(order)} examples")
    return restore_order(outputs, order)


def _numpy_rows(ragged):
    """[rows, (length)] RaggedTensor → one NumPy array per row."""
    values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
    return np.split(values, splits[1:-1])
