import numpy as np
import pytest

from nlpzoo.tasks.tagging import TaggedSentence
from nlpzoo.tasks.tagging.pipeline import continuation_ids, make_dataset
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer

VOCAB = list(RESERVED_TOKENS) + ["john", "lives", "in", "new", "york", "##s", "."]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def _batches(sentences, **options):
    tokenizer = WordPieceTokenizer(VOCAB)
    dataset = make_dataset(sentences, tokenizer, LABELS, batch_size=8, **options)
    return [({k: v.numpy() for k, v in f.items()}, l.numpy()) for f, l in dataset]


def test_first_subword_alignment():
    sentence = TaggedSentence(("John", "lives", "in", "New", "Yorks", "."),
                              ("B-PER", "O", "O", "B-LOC", "I-LOC", "O"))
    [(features, labels)] = _batches([sentence], max_seq_length=16)
    ids = features["token_ids"][0]
    #             [CLS] john lives in new york ##s . [SEP]
    assert list(ids[:9]) == [2, 5, 6, 7, 8, 9, 10, 11, 3]
    assert ids.shape == (16,)
    starts = features["word_starts"][0]
    assert list(starts[:6]) == [1, 2, 3, 4, 5, 7]
    assert list(features["word_mask"][0]) == [1] * 6 + [0] * 10
    assert list(labels[0][:7]) == [3, 0, 0, 1, 2, 0, -1]
    # Each word's first subword is the word's own first piece.
    for start, word in zip(starts[:6], ["john", "lives", "in", "new", "york", "."]):
        assert VOCAB[ids[start]] == word


def test_label_all_subwords_continues_b_as_i():
    sentence = TaggedSentence(("Yorks", "lives"), ("B-LOC", "O"))
    [(features, labels)] = _batches([sentence], max_seq_length=16, training=True,
                                    label_all_subwords=True)
    assert list(features["word_starts"][0][:3]) == [1, 2, 3]
    assert list(labels[0][:4]) == [1, 2, 0, -1]
    assert continuation_ids(LABELS).tolist() == [0, 2, 2, 4, 4]


def test_truncation_keeps_whole_words_only():
    sentence = TaggedSentence(("New", "Yorks", "."), ("B-LOC", "I-LOC", "O"))
    # budget 3 subwords: "new york ##s" fits, "." does not.
    [(features, labels)] = _batches([sentence], max_seq_length=5)
    assert features["word_mask"][0].sum() == 2
    assert list(labels[0][:3]) == [1, 2, -1]


def test_word_without_pieces_becomes_unk():
    sentence = TaggedSentence(("\u200b", "John"), ("O", "B-PER"))
    [(features, labels)] = _batches([sentence], max_seq_length=16)
    assert list(features["token_ids"][0][:4]) == [2, 1, 5, 3]
    assert list(features["word_starts"][0][:2]) == [1, 2]


def test_unknown_tag_names_file_and_line():
    sentence = TaggedSentence(("John",), ("B-ORG",), source="dev.txt", line=12)
    with pytest.raises(ValueError, match=r"dev.txt:12: tag 'B-ORG' was not seen in training"):
        _batches([sentence])


def test_order_is_kept_and_buckets_are_static():
    sentences = [TaggedSentence(("john",) * n, ("B-PER",) + ("I-PER",) * (n - 1))
                 for n in (3, 40, 5, 20)]
    batches = _batches(sentences, max_seq_length=64)
    [(features, labels)] = batches
    assert features["token_ids"].shape[1] == 64
    np.testing.assert_array_equal(features["word_mask"].sum(1), [3, 40, 5, 20])


# --- word ends (subword_aggregation other than "first") ----------------------------------

SPAN_VOCAB = VOCAB + ["##er"]  # "yorkers": york ##er ##s


def _span_batches(sentences, max_seq_length, **options):
    from nlpzoo.tasks.tagging.task import TaggingTask

    task = TaggingTask(subword_aggregation="mean", **options)
    preprocessor = task.make_preprocessor(SPAN_VOCAB, max_seq_length=max_seq_length)
    examples = task.prediction_examples(sentences, preprocessor)  # windows, context
    dataset = task.make_dataset(examples, preprocessor, LABELS, batch_size=64)
    [(features, _)] = [({k: v.numpy() for k, v in f.items()}, l) for f, l in dataset]
    return preprocessor, examples, features


def _assert_spans_spell_the_words(preprocessor, examples, features):
    """Every kept word's [start, end) tokens are its own subwords, all of them."""
    from nlpzoo.tasks.words.pipeline import ragged_words

    for row, example in enumerate(examples):
        kept = int(features["word_mask"][row].sum())
        pieces = preprocessor.word_pieces(ragged_words([example.words[:kept]])).to_list()[0]
        starts, ends = features["word_starts"][row], features["word_ends"][row]
        tokens = features["token_ids"][row]
        for w in range(kept):
            assert tokens[starts[w]:ends[w]].tolist() == pieces[w], (row, w)
        assert not ends[kept:].any() and not starts[kept:].any()  # padded words: empty


def test_word_ends_of_a_word_in_three_pieces():
    sentence = TaggedSentence(("John", "Yorkers", "."), ("B-PER", "B-LOC", "O"))
    preprocessor, examples, features = _span_batches([sentence], max_seq_length=16)
    #             [CLS] john york ##er ##s . [SEP]
    assert features["token_ids"][0][:7].tolist() == [2, 5, 9, 12, 10, 11, 3]
    assert features["word_starts"][0][:4].tolist() == [1, 2, 5, 0]
    assert features["word_ends"][0][:4].tolist() == [2, 5, 6, 0]
    _assert_spans_spell_the_words(preprocessor, examples, features)


def test_word_ends_when_truncation_cuts_a_word():
    # Training cuts at the window: "yorkers" (3 pieces) does not fit in 4, nor any word after.
    sentence = TaggedSentence(("John", "lives", "Yorkers", "."), ("B-PER", "O", "B-LOC", "O"))
    from nlpzoo.tasks.tagging.task import TaggingTask

    task = TaggingTask(subword_aggregation="max")
    preprocessor = task.make_preprocessor(SPAN_VOCAB, max_seq_length=6)
    [(features, labels)] = list(task.make_dataset([sentence], preprocessor, LABELS,
                                                  batch_size=1, training=True))
    assert features["word_mask"].numpy()[0].tolist() == [1, 1, 0, 0, 0, 0]
    assert features["word_ends"].numpy()[0].tolist() == [2, 3, 0, 0, 0, 0]
    assert features["token_ids"].numpy()[0][3] == 3  # [SEP] right after the kept words


@pytest.mark.parametrize("context_sentences", [0, 1])
def test_word_ends_in_windows_and_document_context(context_sentences):
    from nlpzoo.tasks.words.document_context import add_document_context

    words = ("Yorkers", "john", "Yorkers") * 4  # windows of 7 subwords leave room for context
    long = TaggedSentence(words, ("O",) * len(words), document=0)
    short = TaggedSentence(("Yorkers", "john"), ("B-LOC", "B-PER"), document=0)
    sentences = add_document_context([short, long, short], context_sentences)
    preprocessor, examples, features = _span_batches(sentences, max_seq_length=10, stride=4)
    assert len(examples) > 3  # the long sentence is read in windows
    assert any(example.window is not None and example.window.start > 0 for example in examples)
    # Context subwords come before some sentences' or windows' first word.
    assert (features["word_starts"][:, 0] > 1).any()
    _assert_spans_spell_the_words(preprocessor, examples, features)
