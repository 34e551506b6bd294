"""Every layer's vector of every word, from one forward pass per batch of sentences.

A word is represented by its first subword (as the taggers read it), at each
of the encoder's `hidden_states`: the embeddings output (layer 0), then each
block's output (layers 1 to `num_layers`). The vectors of all layers come from
the same forward pass and are kept in memory as one float32 array
`[words, num_layers + 1, hidden_dim]`, which bounds how many words to extract
(`tasks.probing.data.take_sentences`). A word whose subwords do not fit in the
preprocessor's `max_seq_length` is left out, with the rest of its sentence.
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from nlpzoo.layers import Encoder, PositionGather, encoder_config

WORD_STARTS = "word_starts"


@dataclasses.dataclass(frozen=True)
class WordFeatures:
    """Word vectors of every layer and the words' label ids.

    Attributes:
        vectors: float32 [words, num_layers + 1, hidden_dim]; `vectors[:, 0]` are the
            embeddings, `vectors[:, l]` the output of block `l`.
        labels: int32 [words], in the order of the words in their sentences.
    """

    vectors: np.ndarray
    labels: np.ndarray

    @property
    def num_layers(self):
        """Layers of vectors: the encoder's blocks + 1 (the embeddings)."""
        return self.vectors.shape[1]

    def __len__(self):
        return len(self.labels)


def word_vector_model(encoder):
    """A model: encoder inputs + `word_starts` → first-subword vectors of every layer.

    Args:
        encoder: an encoder with a `hidden_states` output (`layers.Encoder`, or
            any encoder loaded by `zoo.load_encoder`).

    Returns:
        A `keras.Model` whose inputs are `Encoder.INPUTS` and `word_starts`
        (int32 [B, W], each word's first subword) and whose output is
        [B, W, num_layers + 1, hidden_dim]: `hidden_states[l][b, word_starts[b, w]]`
        at `[b, w, l]`.

    Examples:
    >>> import numpy as np
    >>> encoder = Encoder(vocabulary_size=20, num_layers=2, num_heads=2, hidden_dim=8,
    ...                   intermediate_dim=16, max_sequence_length=16)
    >>> model = word_vector_model(encoder)
    >>> ids = np.array([[2, 5, 6, 7, 3]])
    >>> out = model({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...              "padding_mask": np.ones_like(ids), "word_starts": np.array([[1, 3]])})
    >>> tuple(out.shape)
    (1, 2, 3, 8)
    """
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
              for name in Encoder.INPUTS + (WORD_STARTS,)}
    hidden_states = encoder({name: inputs[name] for name in Encoder.INPUTS})["hidden_states"]
    gather = PositionGather(name="first_subwords")
    per_layer = [gather(states, inputs[WORD_STARTS]) for states in hidden_states]
    return keras.Model(inputs, ops.stack(per_layer, axis=2), name="word_vectors")


def extract_word_features(encoder, dataset):
    """Runs `encoder` once over a dataset and keeps every layer's vector of every word.

    Args:
        encoder: an encoder with `hidden_states` (run in inference mode: no dropout).
        dataset: `(features, label ids)` batches in sentence order, from
            `tasks.words.pipeline.make_word_dataset(words, label_ids, preprocessor)`
            (it tokenizes once and caches: the same dataset feeds every encoder).

    Returns:
        `WordFeatures`: one row per word kept (words past `max_seq_length` are
        not), float32 whatever the dtype policy.

    Examples:
    >>> import numpy as np
    >>> from nlpzoo.tasks.words.pipeline import make_word_dataset
    >>> from nlpzoo.tasks.words.preprocessor import WordPreprocessor
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "open", "##s", "cafe"]
    >>> encoder = Encoder(vocabulary_size=len(vocabulary), num_layers=2, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    >>> dataset = make_word_dataset([["cafe", "opens"], ["opens"]],
    ...     [np.array([0, 1]), np.array([1])], WordPreprocessor(vocabulary, max_seq_length=16))
    >>> features = extract_word_features(encoder, dataset)
    >>> features.vectors.shape, features.labels.tolist(), features.num_layers
    ((3, 3, 8), [0, 1, 1], 3)
    """
    model = word_vector_model(encoder)
    names = Encoder.INPUTS + (WORD_STARTS,)

    # One trace for every padded shape.
    @tf.function(input_signature=[{name: tf.TensorSpec([None, None], tf.int32)
                                   for name in names}])
    def word_vectors(inputs):
        return tf.cast(model(inputs, training=False), tf.float32)

    vectors, kept_labels = [], []
    for features, batch_labels in dataset:
        out = word_vectors({name: tf.cast(features[name], tf.int32) for name in names})
        mask = features["word_mask"].numpy().astype(bool)
        vectors.append(out.numpy()[mask])
        kept_labels.append(batch_labels.numpy()[mask])
    if not vectors:
        raise ValueError("no sentences to extract word vectors from")
    return WordFeatures(np.concatenate(vectors, axis=0),
                        np.concatenate(kept_labels, axis=0).astype(np.int32))


def random_encoder_like(encoder):
    """A new encoder of `encoder`'s shape and settings with freshly initialised weights.

    The control of a probing experiment: what the same architecture gives
    before any pretraining (the global Keras seed decides the weights).

    Examples:
    >>> encoder = Encoder(vocabulary_size=20, num_layers=1, num_heads=2, hidden_dim=8,
    ...                   intermediate_dim=16)
    >>> control = random_encoder_like(encoder)
    >>> control.count_params() == encoder.count_params(), control is encoder
    (True, False)
    """
    return Encoder.from_config(encoder_config(encoder))
