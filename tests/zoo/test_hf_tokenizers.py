"""A Hugging Face directory's tokenizer, read from `tokenizer.json` or the legacy files,
gives transformers' ids (fixtures: tests/fixtures/make_wordpiece_reference.py)."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from nlpzoo.zoo import load_tokenizer
from nlpzoo.zoo.checkpoints.hf_tokenizers import tokenizer_scheme

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tokenizers")
WORDPIECE = ("bert_uncased_wordpiece", "bert_cased_wordpiece")


def _reference(name):
    with open(os.path.join(FIXTURES, name, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


def batch_ids(tokenizer, texts, pairs=None, max_length=100_000):
    """`encode` of every text (or pair) at once, as lists."""
    first = tokenizer.tokenize_flat(tf.constant(texts))
    segments = [first] if pairs is None else [first, tokenizer.tokenize_flat(tf.constant(pairs))]
    token_ids, _ = tokenizer.pack(segments, max_length)
    return token_ids.to_list()


def word_ids(tokenizer, sentences):
    """`[CLS] pieces of each word [SEP]`, the words tokenized as pre-split words."""
    words = tf.ragged.constant(sentences)
    pieces = tokenizer.word_pieces(words.flat_values)
    rows = tf.RaggedTensor.from_row_splits(pieces.values, tf.gather(
        pieces.row_splits, words.row_splits))
    token_ids, _ = tokenizer.pack([rows], 100_000)
    return token_ids.to_list()


@pytest.mark.parametrize("name", WORDPIECE)
def test_wordpiece_from_tokenizer_json_gives_transformers_ids(name):
    reference = _reference(name)
    directory = os.path.join(FIXTURES, name)
    assert not os.path.exists(os.path.join(directory, "vocab.txt"))  # transformers 5.x layout
    tokenizer = load_tokenizer(directory)
    assert isinstance(tokenizer, WordPieceTokenizer)
    assert tokenizer.lowercase == (name == "bert_uncased_wordpiece")
    assert len(reference["texts"]) >= 1000
    ours = batch_ids(tokenizer, reference["texts"])
    mismatches = [(text, mine, theirs) for text, mine, theirs
                  in zip(reference["texts"], ours, reference["ids"]) if mine != theirs]
    assert not mismatches, mismatches[:3]
    first, second = zip(*reference["pairs"])
    assert batch_ids(tokenizer, list(first), list(second)) == reference["pair_ids"]
    assert word_ids(tokenizer, reference["words"]) == reference["word_ids"]
    assert tokenizer.encode(*reference["pairs"][0]) == reference["pair_ids"][0]


def test_cased_and_uncased_tokenizers_differ_on_capitals():
    cased = load_tokenizer(os.path.join(FIXTURES, "bert_cased_wordpiece"))
    uncased = load_tokenizer(os.path.join(FIXTURES, "bert_uncased_wordpiece"))
    assert cased.encode("The") != cased.encode("the")
    assert uncased.encode("The") == uncased.encode("the")


def test_tokenizer_json_and_vocab_txt_read_alike(tmp_path):
    """The same WordPiece vocabulary written both ways gives the same tokenizer."""
    source = os.path.join(FIXTURES, "bert_uncased_wordpiece")
    tokenizer = load_tokenizer(source)
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "vocab.txt").write_text("".join(f"{token}\n" for token in tokenizer.vocabulary),
                                      encoding="utf-8")
    (legacy / "tokenizer_config.json").write_text('{"do_lower_case": true}')
    assert tokenizer_scheme(legacy) == "wordpiece"
    texts = _reference("bert_uncased_wordpiece")["texts"][:50]
    assert batch_ids(load_tokenizer(legacy), texts) == batch_ids(tokenizer, texts)


def test_bad_tokenizer_files_name_the_file(tmp_path):
    directory = tmp_path / "bad"
    shutil.copytree(os.path.join(FIXTURES, "bert_cased_wordpiece"), directory)
    path = directory / "tokenizer.json"
    content = json.loads(path.read_text(encoding="utf-8"))
    content["model"]["vocab"]["[PAD]"] = 7  # two tokens with id 7
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer.json: the vocabulary's ids"):
        load_tokenizer(directory)
    content["model"]["type"] = "WordLevel"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer.json: model type 'WordLevel'"):
        load_tokenizer(directory)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer.json"):
        load_tokenizer(directory)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="not a checkpoint directory"):
        load_tokenizer(empty)
