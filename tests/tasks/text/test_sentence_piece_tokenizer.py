"""SentencePieceTokenizer against transformers 5.x (fixtures from
tests/fixtures/make_sentencepiece_reference.py), serialization, errors, tf.data and SavedModel."""

import functools
import gzip
import json
import os
import pickle

import pytest
import sentencepiece
import tensorflow as tf

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.sentence_piece_tokenizer import FAMILIES as SPECS
from nlpzoo.tasks.text.sentence_piece_tokenizer import SentencePieceTokenizer, unigram_model_proto
from nlpzoo.tasks.text.subword_tokenizer import tokenizer_config, tokenizer_from_assets

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tokenizers")
FAMILIES = {"xlm_roberta": "xlm-roberta", "albert": "albert", "deberta_v3": "deberta-v2"}
LAYOUTS = ("legacy", "tokenizer_json")
CASES = [(family, layout) for family in FAMILIES for layout in LAYOUTS]


@functools.lru_cache(maxsize=None)
def reference():
    with gzip.open(os.path.join(FIXTURES, "sentencepiece_reference.json.gz"), "rb") as file:
        return json.loads(file.read().decode("utf-8"))


def directory(family, layout):
    return os.path.join(FIXTURES, f"{family}_spm", layout)


@functools.lru_cache(maxsize=None)
def load(family, layout):
    return SentencePieceTokenizer.from_hf_directory(directory(family, layout))


def mismatches(ours, theirs, inputs):
    assert len(ours) == len(theirs) == len(inputs)
    return [(inputs[i], ours[i], theirs[i]) for i in range(len(inputs)) if ours[i] != theirs[i]]


@pytest.mark.parametrize("family, layout", CASES)
def test_texts_match_transformers(family, layout):
    tokenizer, ref = load(family, layout), reference()
    texts = ref["texts"]
    pieces = tokenizer.tokenize_flat(tf.constant(texts)).to_list()
    ours = [[tokenizer.cls_id] + row + [tokenizer.sep_id] for row in pieces]
    assert mismatches(ours, ref["families"][family]["texts"], texts) == []
    assert len(texts) >= 1000 and {"conll2003", "wikitext2", "hostile"} <= set(ref["text_sets"])


@pytest.mark.parametrize("family, layout", CASES)
def test_pairs_match_transformers(family, layout):
    tokenizer, ref = load(family, layout), reference()
    pairs = ref["pairs"]
    first = tokenizer.tokenize_flat(tf.constant([a for a, _ in pairs]))
    second = tokenizer.tokenize_flat(tf.constant([b for _, b in pairs]))
    token_ids, segment_ids = tokenizer.pack([first, second], max_length=100_000)
    expected = ref["families"][family]
    # transformers reads an empty `text_pair` as no pair: `pack` keeps the empty segment.
    paired = [i for i, (_, second_text) in enumerate(pairs) if second_text]
    assert len(paired) >= 100

    def keep(rows):
        return [rows[i] for i in paired]

    assert mismatches(keep(token_ids.to_list()), keep(expected["pairs"]), keep(pairs)) == []
    assert mismatches(keep(segment_ids.to_list()), keep(expected["pair_type_ids"]),
                      keep(pairs)) == []
    for i, (first_text, second_text) in enumerate(pairs):
        if not second_text:
            assert expected["pairs"][i] == tokenizer.encode(first_text)


@pytest.mark.parametrize("family, layout", CASES)
def test_word_pieces_match_is_split_into_words(family, layout):
    tokenizer, ref = load(family, layout), reference()
    word_lists = ref["word_lists"]
    words = [word for words in word_lists for word in words]
    pieces = tokenizer.word_pieces(tf.constant(words)).to_list()
    expected = [ids for per_word in ref["families"][family]["word_lists"] for ids in per_word]
    # transformers gives a word with no piece ("", "\u200b") no token; ours is the unknown token.
    expected = [ids or [tokenizer.unk_id] for ids in expected]
    assert mismatches(pieces, expected, words) == []
    assert sum(1 for words in word_lists if len(words) > 1) > 200


def test_albert_keep_accents_matches_transformers():
    ref = reference()
    tokenizer = SentencePieceTokenizer.from_sentencepiece_model(
        os.path.join(directory("albert", "legacy"), "spiece.model"), "albert", keep_accents=True)
    pieces = tokenizer.tokenize_flat(tf.constant(ref["texts"])).to_list()
    ours = [[tokenizer.cls_id] + row + [tokenizer.sep_id] for row in pieces]
    assert mismatches(ours, ref["albert_keep_accents"], ref["texts"]) == []
    assert ours != ref["families"]["albert"]["texts"]  # accents do change some ids


def test_family_ids_and_templates():
    xlmr, albert = load("xlm_roberta", "legacy"), load("albert", "legacy")
    assert (xlmr.cls_id, xlmr.pad_id, xlmr.sep_id, xlmr.unk_id) == (0, 1, 2, 3)
    assert xlmr.mask_id == xlmr.vocabulary_size - 1 == 3001
    assert (albert.pad_id, albert.unk_id, albert.cls_id, albert.sep_id,
            albert.mask_id) == (0, 1, 2, 3, 4)
    assert xlmr.encode("<mask>", "<mask>") == [0, 3001, 2, 2, 3001, 2]
    assert albert.encode("[MASK]", "[MASK]") == [2, 4, 3, 4, 3]
    assert albert.lowercase and not albert.keep_accents and not xlmr.lowercase


def test_deberta_v3_ids_and_template():
    for layout in LAYOUTS:
        deberta = load("deberta_v3", layout)
        assert (deberta.pad_id, deberta.cls_id, deberta.sep_id, deberta.unk_id) == (0, 1, 2, 3)
        assert deberta.mask_id == deberta.vocabulary_size - 1 == 2500  # after the pieces
        assert deberta.encode("[MASK]", "[MASK]") == [1, 2500, 2, 2500, 2]
        assert not deberta.lowercase and deberta.family == "deberta-v2"


def test_deberta_v3_from_the_hub_layout(tmp_path):
    """microsoft/deberta-v3-*: spm.model, a tokenizer_config.json naming no class, and
    config.json's model_type."""
    source = directory("deberta_v3", "legacy")
    with open(os.path.join(source, "spm.model"), "rb") as file:
        (tmp_path / "spm.model").write_bytes(file.read())
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": false, "vocab_type": "spm"}')
    (tmp_path / "config.json").write_text('{"model_type": "deberta-v2"}')
    text = "Café  naïve\tZürich [MASK]"
    assert SentencePieceTokenizer.from_hf_directory(tmp_path).encode(text) == load(
        "deberta_v3", "legacy").encode(text)


def test_tokenize_gives_words_of_running_text():
    tokenizer = load("xlm_roberta", "tokenizer_json")
    words = tokenizer.tokenize(tf.constant(["Paris  is\tthe<mask>of France", ""])).to_list()
    assert len(words[0]) == 6 and words[1] == []
    assert words[0][3] == [tokenizer.mask_id]
    flat = [piece for word in words[0] for piece in word]
    assert flat == tokenizer.tokenize_flat(["Paris is the <mask> of France"]).to_list()[0]
    for word in words[0]:
        assert word == [tokenizer.mask_id] or tokenizer.vocabulary[word[0]].startswith("\u2581")


@pytest.mark.parametrize("family, layout", CASES)
def test_assets_round_trip_keeps_ids(family, layout, tmp_path):
    tokenizer = load(family, layout)
    config = json.loads(json.dumps(tokenizer_config(tokenizer)))
    tokenizer.save_assets(str(tmp_path))
    assert os.listdir(tmp_path) == [SentencePieceTokenizer.ASSET_FILE]
    rebuilt = tokenizer_from_assets(config, str(tmp_path))
    assert isinstance(rebuilt, SentencePieceTokenizer)
    texts = reference()["texts"][::7]
    assert rebuilt.tokenize(texts).to_list() == tokenizer.tokenize(texts).to_list()
    assert rebuilt.vocabulary == tokenizer.vocabulary
    assert rebuilt.get_config() == tokenizer.get_config()


@pytest.mark.parametrize("family", FAMILIES)
def test_legacy_model_reads_back_to_the_same_ids(family, tmp_path):
    """`legacy_model` is `from_sentencepiece_model` read backwards (the model's own ids:
    XLM-R's without fairseq's offset), here of a tokenizer built from a tokenizer.json;
    the fixture's legacy file has the same pieces at the same ids."""
    tokenizer = load(family, "tokenizer_json")
    path = tmp_path / "legacy.model"
    path.write_bytes(tokenizer.legacy_model())
    options = dict(lowercase=tokenizer.lowercase, keep_accents=tokenizer.keep_accents)
    rebuilt = SentencePieceTokenizer.from_sentencepiece_model(str(path), FAMILIES[family],
                                                              **options)
    assert rebuilt.vocabulary == tokenizer.vocabulary
    texts = reference()["texts"][::7]
    assert rebuilt.tokenize(texts).to_list() == tokenizer.tokenize(texts).to_list()
    original = sentencepiece.SentencePieceProcessor(model_file=os.path.join(
        directory(family, "legacy"), SPECS[FAMILIES[family]].legacy_file))
    written = sentencepiece.SentencePieceProcessor(model_proto=tokenizer.legacy_model())
    count = original.get_piece_size()
    assert [written.id_to_piece(i) for i in range(count)] == [
        original.id_to_piece(i) for i in range(count)]


def test_both_layouts_build_the_same_model():
    for family in FAMILIES:
        legacy, from_json = load(family, "legacy"), load(family, "tokenizer_json")
        assert legacy.vocabulary == from_json.vocabulary
        assert legacy.get_config() == from_json.get_config()


def test_in_a_tf_data_map():
    tokenizer = load("albert", "tokenizer_json")
    texts = reference()["texts"][:64]
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(16).map(
        lambda batch: tokenizer.tokenize(batch).merge_dims(1, 2))
    rows = [row for batch in dataset for row in batch.to_list()]
    assert rows == tokenizer.tokenize_flat(texts).to_list()


def test_through_a_saved_model(tmp_path):
    tokenizer = load("xlm_roberta", "tokenizer_json")

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, texts):
            token_ids, segment_ids = tokenizer.pack([tokenizer.tokenize_flat(texts)], 64)
            return {"token_ids": token_ids.to_tensor(tokenizer.pad_id),
                    "segment_ids": segment_ids.to_tensor()}

    tf.saved_model.save(Serving(), str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    texts = ["The capital of France is <mask>.", "Ｆｕｌｌ－ｗｉｄｔｈ café", ""]
    outputs = loaded(tf.constant(texts))
    expected = [tokenizer.encode(text) for text in texts]
    rows = outputs["token_ids"].numpy().tolist()
    assert [row[:len(ids)] for row, ids in zip(rows, expected)] == expected


# --- errors ---

def test_refuses_a_pickle(tmp_path):
    path = tmp_path / "spiece.model"
    path.write_bytes(pickle.dumps({"pieces": ["a"]}))
    with pytest.raises(DataFormatError, match=r"spiece\.model: a Python pickle"):
        SentencePieceTokenizer.from_sentencepiece_model(path, "albert")


def test_rejects_garbage_model(tmp_path):
    path = tmp_path / "sentencepiece.bpe.model"
    path.write_bytes(b"\x0a\xff\xff not a protobuf")
    with pytest.raises(DataFormatError,
                       match=r"sentencepiece\.bpe\.model: not a SentencePiece model"):
        SentencePieceTokenizer.from_sentencepiece_model(path, "xlm-roberta")


@pytest.mark.parametrize("content, message", [
    ("{not json", "tokenizer.json:1: not valid JSON"),
    ('{"model": {"type": "BPE", "vocab": {}, "merges": []}}', "expected a Unigram"),
    ('{"model": {"type": "Unigram", "vocab": [["a"]], "unk_id": 0}}', "not a list of"),
    ('{"model": {"type": "Unigram", "vocab": [["<unk>", 0.0]], "unk_id": 5}}', "unk_id 5"),
])
def test_rejects_malformed_tokenizer_json(tmp_path, content, message):
    (tmp_path / "tokenizer.json").write_text(content)
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "XLMRobertaTokenizer"}')
    with pytest.raises(DataFormatError, match=message) as error:
        SentencePieceTokenizer.from_hf_directory(tmp_path)
    assert "tokenizer.json" in str(error.value) and "\n" not in str(error.value)


def test_directory_errors(tmp_path):
    with pytest.raises(DataFormatError, match="cannot tell the tokenizer family"):
        SentencePieceTokenizer.from_hf_directory(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "AlbertTokenizer"}')
    with pytest.raises(FileNotFoundError, match="no tokenizer.json nor spiece.model"):
        SentencePieceTokenizer.from_hf_directory(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "DebertaV2Tokenizer"}')
    with pytest.raises(FileNotFoundError, match="no tokenizer.json nor spm.model"):
        SentencePieceTokenizer.from_hf_directory(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(
        '{"tokenizer_class": "DebertaV2Tokenizer", "split_by_punct": true}')
    with pytest.raises(DataFormatError, match="split_by_punct=True is not supported"):
        SentencePieceTokenizer.from_hf_directory(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("[1]")
    with pytest.raises(DataFormatError, match=r"tokenizer_config.json: expected the file to hold a JSON object \(\{\.\.\.\}\), found a list"):
        SentencePieceTokenizer.from_hf_directory(tmp_path)


def test_family_from_config_json(tmp_path):
    source = directory("albert", "tokenizer_json")
    with open(os.path.join(source, "tokenizer.json"), "rb") as file:
        (tmp_path / "tokenizer.json").write_bytes(file.read())
    (tmp_path / "config.json").write_text('{"model_type": "albert"}')
    assert SentencePieceTokenizer.from_hf_directory(tmp_path).encode("Hello") == load(
        "albert", "tokenizer_json").encode("Hello")


def test_unknown_family_and_missing_split_token():
    model = unigram_model_proto([("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("<pad>", 0.0),
                                 ("\u2581a", -1.0)], 0)
    with pytest.raises(ValueError, match="unknown SentencePiece family 'bert'"):
        SentencePieceTokenizer(model, "bert")
    with pytest.raises(ValueError, match=r"split tokens \['<mask>'\]"):
        SentencePieceTokenizer(model, "xlm-roberta", split_tokens=["<mask>"])
