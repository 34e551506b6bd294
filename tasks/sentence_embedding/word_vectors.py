"""Words in context: one vector per word occurrence, and its nearest neighbours.

A contextual encoder gives the same word a different vector in every
sentence: the textbook's example (SLP3 §11.3) is that the vectors of one word
form clusters by sense, so that the nearest neighbours of "bank" in "money at
the bank" are other uses of the money sense, not "the river bank". Here a
word's vector is the mean (or first, last, max: `layers.SubwordPooling`) of
its subwords' vectors at one hidden layer or mix (`parse_layer`), the words
being split as BERT's basic tokenizer splits text (`tasks.words.raw_sentences.split_text`).
`tools/embed.py --words` is the command.

Examples:
>>> from nlpzoo.layers import Encoder
>>> from nlpzoo.tasks.text.sentences import Sentence
>>> from nlpzoo.tasks.words.preprocessor import WordPreprocessor
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "bank", "river", "##s"]
>>> encoder = Encoder(vocabulary_size=len(vocabulary), num_layers=1, num_heads=2,
...                   hidden_dim=8, intermediate_dim=16)
>>> model = ContextualWordEmbedder(encoder, layer=-1)
>>> preprocessor = WordPreprocessor(vocabulary, word_ends=True)
>>> occurrences, vectors = embed_words(model, preprocessor,
...                                    [Sentence("the banks"), Sentence("river bank")])
>>> [(o.word, o.line_index) for o in occurrences], vectors.shape
([('the', 0), ('banks', 0), ('river', 1), ('bank', 1)], (4, 8))
>>> occurrences[1].in_context()
'the [banks]'
"""

import dataclasses

import keras
import numpy as np

from nlpzoo.layers import Encoder, SubwordPooling, transformer_of
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel
from nlpzoo.tasks.sentence_embedding.model import parse_layer, token_vectors
from nlpzoo.tasks.sentence_embedding.similarity import top_k
from nlpzoo.tasks.words.length_sorting import (
    compiles_each_shape,
    encode_word_sentences,
    predict_encoded_in_length_order,
)
from nlpzoo.tasks.words.preprocessor import WORD_ENDS
from nlpzoo.tasks.words.raw_sentences import split_text

WORD_INPUTS = Encoder.INPUTS + ("word_starts", WORD_ENDS)


@keras.saving.register_keras_serializable(package="nlpzoo")
class ContextualWordEmbedder(EncoderTaskModel):
    """Encoder inputs and word spans → one float32 vector per word ([batch, words, hidden_dim]).

    Each word's subword vectors at `layer` (`parse_layer`: None for the
    encoder's `sequence_output`, an index into its hidden states, "last" or
    "mean_last_4") are pooled by `layers.SubwordPooling` (`aggregation`:
    "mean" by default, or "first", "last", "max"). Inputs are
    `Encoder.INPUTS` and `word_starts`, `word_ends` [batch, words]
    (`WordPreprocessor(word_ends=True)`); a padded word (`word_ends` ≤
    `word_starts`) gets zeros. The model has no weights of its own.

    Args:
        encoder: an `Encoder`.
        layer: which hidden layer is read (see above).
        aggregation: how a word's subwords become one vector.

    Examples:
    >>> encoder = Encoder(vocabulary_size=50, num_layers=2, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> ContextualWordEmbedder(encoder, layer="mean_last_4").output_shape
    (None, None, 8)
    """

    reads_pooled_output = False

    def __init__(self, encoder, layer=None, aggregation="mean", **kwargs):
        layer = parse_layer(layer, transformer_of(encoder).num_layers)
        kwargs.setdefault("name", "contextual_word_embedder")

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in WORD_INPUTS}
        tokens = token_vectors(encoder({name: inputs[name] for name in Encoder.INPUTS}), layer)
        words = SubwordPooling(aggregation, dtype="float32", name="subword_pooling")(
            tokens, inputs["word_starts"], inputs[WORD_ENDS])
        super().__init__(inputs=inputs, outputs=words, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.layer = layer
        self.aggregation = aggregation

    def _task_config(self):
        return {"layer": self.layer, "aggregation": self.aggregation}


@dataclasses.dataclass(frozen=True)
class WordOccurrence:
    """One word of one text: `words[index]` of `sentence` (a `readers.Sentence`).

    Examples:
    >>> from nlpzoo.tasks.text.sentences import Sentence
    >>> occurrence = WordOccurrence(Sentence("on the river bank", "in.txt", 4),
    ...                             ("on", "the", "river", "bank"), 3, line_index=0)
    >>> occurrence.word, occurrence.in_context()
    ('bank', 'on the river [bank]')
    """

    sentence: object
    words: tuple
    index: int
    line_index: int = 0  # which text of the input it belongs to

    @property
    def word(self):
        return self.words[self.index]

    def in_context(self, width=12):
        """The text's words around this one (at most `width` on each side), the word in brackets."""
        before = self.words[max(0, self.index - width):self.index]
        after = self.words[self.index + 1:self.index + 1 + width]
        return " ".join([*before, f"[{self.word}]", *after])


@dataclasses.dataclass(frozen=True)
class _Words:
    """A text's words, as the word encoders read sentences (no document context)."""

    words: tuple
    left_context: tuple = ()
    right_context: tuple = ()


def embed_words(model, preprocessor, sentences, batch_size=64):
    """The vector of every word of every text, in text then word order.

    Args:
        model: a `ContextualWordEmbedder`.
        preprocessor: a `WordPreprocessor(word_ends=True)` with the encoder's vocabulary.
        sentences: `readers.Sentence`s (anything with `text`).
        batch_size: texts per batch (batched by length: `tasks.words.length_sorting`).

    Returns:
        `(occurrences, vectors)`: a `WordOccurrence` per word and float32
        [len(occurrences), hidden_dim]. A text longer than the preprocessor's
        `max_seq_length` keeps only the words whose subwords fit (its first ones).
    """
    if not preprocessor.word_ends:
        raise ValueError("embed_words needs a WordPreprocessor(word_ends=True): a word's "
                         "vector pools all of its subwords")
    sentences = list(sentences)
    split = [_Words(split_text(sentence.text)) for sentence in sentences]
    features = encode_word_sentences(preprocessor, split)
    features = {name: features[name] for name in WORD_INPUTS if name in features}

    def predict_rows(batch):
        vectors = np.asarray(model.predict_on_batch(batch), np.float32)
        kept = (batch[WORD_ENDS] > batch["word_starts"]).sum(axis=1)
        return [row[:count] for row, count in zip(vectors, kept)]

    rows = predict_encoded_in_length_order(
        features, predict_rows, batch_size, preprocessor.padding_values,
        preprocessor.max_seq_length, pad_to_buckets=compiles_each_shape(model),
        what="embedding words")
    occurrences = [WordOccurrence(sentence, words.words, index, line_index)
                   for line_index, (sentence, words, row) in enumerate(zip(sentences, split, rows))
                   for index in range(len(row))]
    width = int(model.output_shape[-1])
    vectors = np.concatenate(rows, axis=0) if occurrences else np.zeros((0, width), np.float32)
    return occurrences, vectors


def occurrences_of(occurrences, word):
    """The positions in `occurrences` of `word` (compared case-insensitively).

    >>> from nlpzoo.tasks.text.sentences import Sentence
    >>> words = ("Bank", "of", "the", "bank")
    >>> occurrences_of([WordOccurrence(Sentence(""), words, i) for i in range(4)], "BANK")
    [0, 3]
    """
    wanted = word.casefold()
    return [position for position, occurrence in enumerate(occurrences)
            if occurrence.word.casefold() == wanted]


def nearest_occurrences(query_vectors, vectors, k=5, candidates=None):
    """The `k` rows of `vectors` most cosine-similar to each query, best first.

    Args:
        query_vectors: [Q, H].
        vectors: [N, H] word vectors (`embed_words`).
        k: neighbours per query.
        candidates: row indices of `vectors` to search (e.g. `occurrences_of`
            one word); None: all rows.

    Returns:
        `(indices, scores)`, [Q, min(k, candidates)]: indices into `vectors`.

    Examples:
    >>> vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    >>> indices, scores = nearest_occurrences(np.array([[1.0, 0.0]]), vectors, k=1,
    ...                                       candidates=[1, 2])
    >>> indices.tolist()
    [[2]]
    """
    if candidates is None:
        return top_k(query_vectors, vectors, k)
    candidates = np.asarray(candidates, np.int64)
    if not len(candidates):
        empty = np.zeros((len(query_vectors), 0))
        return empty.astype(np.int64), empty
    indices, scores = top_k(query_vectors, vectors[candidates], k)
    return candidates[indices], scores
