"""ByteLevelBpeTokenizer against `transformers` (tests/fixtures/make_bpe_reference.py's ids)."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.byte_pair_tokenizer import (
    ByteLevelBpeTokenizer, read_hf_directory, split_words)
from nlpzoo.tasks.text.subword_tokenizer import (
    PackTemplate, tokenizer_config, tokenizer_from_assets)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tokenizers",
                        "roberta_bpe")
JSON_DIR = os.path.join(FIXTURES, "tokenizer_json")
LEGACY_DIR = os.path.join(FIXTURES, "legacy")


@pytest.fixture(scope="module")
def reference():
    with open(os.path.join(FIXTURES, "reference.json"), encoding="utf-8") as file:
        return json.load(file)


@pytest.fixture(scope="module")
def tokenizer():
    return ByteLevelBpeTokenizer.from_hf_directory(JSON_DIR)


def packed(tokenizer, texts, pairs=None, max_length=100_000):
    """`input_ids` of `texts` (or of the pairs `texts`, `pairs`) with the special tokens."""
    segments = [tokenizer.tokenize_flat(tf.constant(texts))]
    if pairs is not None:
        segments.append(tokenizer.tokenize_flat(tf.constant(pairs)))
    return tokenizer.pack(segments, max_length)[0].to_list()


def mismatches(ours, theirs, texts):
    assert len(ours) == len(theirs) == len(texts)
    return [(text, mine, reference) for text, mine, reference in zip(texts, ours, theirs)
            if mine != reference]


def byte_level(word):
    """A word as the byte-level pre-tokenizer writes it (GPT-2's byte stand-ins)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return "".join(table[byte] for byte in word)


def test_the_fixture_reads_as_roberta(tokenizer):
    assert tokenizer.vocabulary_size == 3000 and len(tokenizer.merges) == 2739
    assert (tokenizer.cls_id, tokenizer.pad_id, tokenizer.sep_id, tokenizer.unk_id,
            tokenizer.mask_id) == (0, 1, 2, 3, 4)
    assert tokenizer.template == PackTemplate(2, 0)
    assert not tokenizer.add_prefix_space and not tokenizer.lowercase
    assert {token["content"]: token["lstrip"] for token in tokenizer.added_tokens} == {
        "<s>": False, "<pad>": False, "</s>": False, "<unk>": False, "<mask>": True}


@pytest.mark.parametrize("name", ["conll", "wikitext", "hostile"])
def test_single_texts_match_transformers(tokenizer, reference, name):
    texts = reference["single"][name]
    assert mismatches(packed(tokenizer, texts["texts"]), texts["ids"], texts["texts"]) == []


def test_add_prefix_space_matches_transformers(reference):
    tokenizer = ByteLevelBpeTokenizer(**{**read_hf_directory(JSON_DIR), "add_prefix_space": True})
    texts = reference["single"]["prefix_space"]
    assert mismatches(packed(tokenizer, texts["texts"]), texts["ids"], texts["texts"]) == []


def test_encode_matches_transformers(tokenizer, reference):
    texts = reference["single"]["hostile"]
    for text, ids in list(zip(texts["texts"], texts["ids"]))[:10]:
        assert tokenizer.encode(text) == ids


def test_pairs_match_transformers(tokenizer, reference):
    everything = [text for name in ("conll", "wikitext", "hostile")
                  for text in reference["single"][name]["texts"]]
    firsts = [everything[i] for i, _ in reference["pairs"]["index"]]
    seconds = [everything[j] for _, j in reference["pairs"]["index"]]
    assert mismatches(packed(tokenizer, firsts, seconds), reference["pairs"]["ids"],
                      list(zip(firsts, seconds))) == []
    count = reference["pairs_truncated_24"]["count"]
    assert mismatches(packed(tokenizer, firsts[:count], seconds[:count], max_length=24),
                      reference["pairs_truncated_24"]["ids"],
                      list(zip(firsts, seconds))[:count]) == []


def test_words_match_transformers_is_split_into_words(tokenizer, reference):
    word_lists = reference["words"]["words"]
    flat = [word for words in word_lists for word in words]
    pieces = tokenizer.word_pieces(tf.constant(flat)).to_list()
    ours, start = [], 0
    for words in word_lists:
        row = [piece for word in pieces[start:start + len(words)] for piece in word]
        ours.append([tokenizer.cls_id] + row + [tokenizer.sep_id])
        start += len(words)
    expected = [list(ids) for ids in reference["words"]["ids"]]
    # The one deliberate difference: an empty word is the unknown token here (every word
    # has a piece, for the word ↔ subword map); transformers gives it none.
    empty = word_lists.index(["", "empty"])
    expected[empty].insert(1, tokenizer.unk_id)
    assert mismatches(ours, expected, word_lists) == []
    hostile = [word for words in word_lists[-18:] for word in words]
    per_word = [ids or [tokenizer.unk_id] for ids in reference["words"]["hostile_per_word_ids"]]
    assert tokenizer.word_pieces(tf.constant(hostile)).to_list() == per_word


def test_words_of_running_text_are_the_pre_tokenizers(tokenizer, reference):
    specials = [token["content"] for token in tokenizer.added_tokens]
    for name in ("conll", "wikitext", "hostile"):
        texts = reference["single"][name]
        plain = [i for i, text in enumerate(texts["texts"])
                 if not any(special in text for special in specials)]
        words = tokenizer.tokenize(tf.constant([texts["texts"][i] for i in plain])).to_list()
        assert [len(row) for row in words] == [texts["word_counts"][i] for i in plain], name
        if "words" in texts:
            split = split_words(tf.constant([texts["texts"][i] for i in plain])).to_list()
            assert [[byte_level(word) for word in row] for row in split] == [
                texts["words"][i] for i in plain]


def test_unicode_16_letters_and_digits_are_words():
    # Garay letters and digits (Unicode 16.0), which RE2's \p{L} and \p{N} do not know yet.
    texts = ["a\U00010d4a!", "1\U00010d40!", "x\u3000\u3000y", "\u0096\u096c"]
    assert split_words(tf.constant(texts)).to_list() == [
        ["a\U00010d4a".encode(), b"!"], ["1\U00010d40".encode(), b"!"],
        [b"x", "\u3000".encode(), "\u3000".encode(), b"y"],
        ["\u0096".encode(), "\u096c".encode()]]


def test_both_layouts_read_to_the_same_tokenizer(tokenizer, reference):
    legacy = ByteLevelBpeTokenizer.from_hf_directory(LEGACY_DIR)
    assert legacy.vocabulary == tokenizer.vocabulary and legacy.merges == tokenizer.merges
    assert legacy.get_config() == tokenizer.get_config()
    assert sorted(map(dict, legacy.added_tokens), key=str) == sorted(
        map(dict, tokenizer.added_tokens), key=str)
    texts = reference["single"]["hostile"]
    assert packed(legacy, texts["texts"]) == texts["ids"]


def test_save_and_load_keep_the_ids(tokenizer, reference, tmp_path):
    tokenizer.save_assets(str(tmp_path))
    config = json.loads(json.dumps(tokenizer_config(tokenizer)))
    assert len(json.dumps(config)) < 400
    again = tokenizer_from_assets(config, str(tmp_path))
    assert isinstance(again, ByteLevelBpeTokenizer)
    texts = reference["single"]["hostile"]
    assert packed(again, texts["texts"]) == texts["ids"]
    # The assets are a Hugging Face legacy directory too.
    assert ByteLevelBpeTokenizer.from_hf_directory(str(tmp_path)).encode("a <mask>") == \
        tokenizer.encode("a <mask>")


def test_lowercase_and_normalization_from_tokenizer_json(tmp_path):
    with open(os.path.join(JSON_DIR, "tokenizer.json"), encoding="utf-8") as file:
        spec = json.load(file)
    spec["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"},
                                                              {"type": "Lowercase"}]}
    with open(tmp_path / "tokenizer.json", "w", encoding="utf-8") as file:
        json.dump(spec, file)
    lowered = ByteLevelBpeTokenizer.from_hf_directory(str(tmp_path))
    plain = ByteLevelBpeTokenizer.from_hf_directory(JSON_DIR)
    assert lowered.lowercase and lowered.normalization == "NFC"
    assert lowered.encode("The Cafe\u0301") == plain.encode("the caf\u00e9")


def test_a_template_processing_post_processor_gives_the_template(tmp_path):
    with open(os.path.join(JSON_DIR, "tokenizer.json"), encoding="utf-8") as file:
        spec = json.load(file)

    def special(token, type_id=0):
        return {"SpecialToken": {"id": token, "type_id": type_id}}

    def sequence(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    # BERT's (and ModernBERT's) layout: [CLS] a [SEP] b [SEP], b with segment id 1.
    spec["post_processor"] = {"type": "TemplateProcessing", "single": [], "special_tokens": {},
                              "pair": [special("<s>"), sequence("A", 0), special("</s>"),
                                       sequence("B", 1), special("</s>", 1)]}
    write(tmp_path / "tokenizer.json", json.dumps(spec))
    tokenizer = ByteLevelBpeTokenizer.from_hf_directory(str(tmp_path))
    assert tokenizer.template == PackTemplate(1, 1)
    token_ids, segment_ids = tokenizer.pack(
        [tokenizer.tokenize_flat(["a"]), tokenizer.tokenize_flat(["b"])], 16)
    assert token_ids.to_list() == [[0, 69, 2, 70, 2]]
    assert segment_ids.to_list() == [[0, 0, 0, 1, 1]]
    spec["post_processor"]["pair"] = [sequence("A", 0), sequence("B", 0)]
    write(tmp_path / "tokenizer.json", json.dumps(spec))
    with pytest.raises(DataFormatError, match="pair template is not"):
        ByteLevelBpeTokenizer.from_hf_directory(str(tmp_path))


def write(path, text):
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)


@pytest.mark.parametrize("file, text, message", [
    ("vocab.json", "{not json", r"vocab\.json:1: not valid JSON"),
    ("vocab.json", "[1, 2]", r"vocab\.json: expected a non-empty JSON object"),
    ("vocab.json", '{"<s>": 0, "a": 5}', r"vocab\.json: the id 5 of 'a' is not in 0\.\.1"),
    ("merges.txt", "#version: 0.2\na b c\n", r"merges\.txt:2: expected a merge rule"),
    ("tokenizer_config.json", "{", r"tokenizer_config\.json:1: not valid JSON"),
])
def test_malformed_legacy_files_give_clean_errors(tmp_path, file, text, message):
    shutil.copytree(LEGACY_DIR, tmp_path, dirs_exist_ok=True)
    write(tmp_path / file, text)
    with pytest.raises(DataFormatError, match=message):
        ByteLevelBpeTokenizer.from_hf_directory(str(tmp_path))


@pytest.mark.parametrize("change, message", [
    (lambda spec: spec["model"].update(type="WordPiece"), "the model is 'WordPiece', not a"),
    (lambda spec: spec.update(pre_tokenizer={"type": "Whitespace"}), "no ByteLevel pre-tokenizer"),
    (lambda spec: spec["model"]["merges"].append("a"), "merge rule 2740 .* is not two tokens"),
    (lambda spec: spec.update(normalizer={"type": "Strip"}), "the normalizer 'Strip'"),
    (lambda spec: spec.update(model=[]), r'expected "model" to be a JSON object \(\{\.\.\.\}\), found a list'),
])
def test_malformed_tokenizer_json_gives_clean_errors(tmp_path, change, message):
    with open(os.path.join(JSON_DIR, "tokenizer.json"), encoding="utf-8") as file:
        spec = json.load(file)
    change(spec)
    write(tmp_path / "tokenizer.json", json.dumps(spec))
    with pytest.raises(DataFormatError, match=r"tokenizer\.json: " + message):
        ByteLevelBpeTokenizer.from_hf_directory(str(tmp_path))


def test_a_directory_without_the_files_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no tokenizer.json, nor vocab.json"):
        ByteLevelBpeTokenizer.from_hf_directory(str(tmp_path))


def test_a_merge_of_unknown_tokens_is_refused():
    tokens = ["<s>", "<pad>", "</s>", "<unk>", "a", "b"]
    with pytest.raises(ValueError, match=r"merge rule 1 \('a b'\) makes 'ab', which is not"):
        ByteLevelBpeTokenizer(tokens, ["a b"])


def test_works_in_tf_data_tf_function_and_a_saved_model(tokenizer, reference, tmp_path):
    texts = reference["single"]["hostile"]["texts"]
    expected = [ids[1:-1] for ids in reference["single"]["hostile"]["ids"]]

    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(16).map(
        tokenizer.tokenize_flat, num_parallel_calls=2)
    assert [row for batch in dataset for row in batch.to_list()] == expected

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, texts):
            pieces = self.tokenizer.tokenize_flat(texts)
            return {"values": pieces.flat_values, "row_lengths": pieces.row_lengths()}

    module = Module()
    path = str(tmp_path / "saved")
    tf.saved_model.save(module, path)
    loaded = tf.saved_model.load(path)
    outputs = loaded(tf.constant(texts))
    values, lengths = outputs["values"].numpy().tolist(), outputs["row_lengths"].numpy()
    rows, start = [], 0
    for length in lengths:
        rows.append(values[start:start + length])
        start += length
    assert rows == expected


# ModernBERT's layout (tests/fixtures/make_modernbert_bpe_reference.py): NFC, BERT's special
# tokens after the vocabulary, `[CLS] a [SEP] b [SEP]` with no segment ids.
MODERNBERT = os.path.join(os.path.dirname(FIXTURES), "modernbert_bpe")


@pytest.fixture(scope="module")
def modernbert():
    with open(os.path.join(MODERNBERT, "reference.json"), encoding="utf-8") as file:
        reference = json.load(file)
    return ByteLevelBpeTokenizer.from_hf_directory(os.path.join(MODERNBERT, "tokenizer_json")), \
        reference


def test_the_modernbert_fixture_reads_with_its_template(modernbert):
    tokenizer, _ = modernbert
    assert tokenizer.vocabulary_size == 3000
    assert (tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id,
            tokenizer.mask_id) == (2995, 2996, 2997, 2998, 2999)
    assert tokenizer.template == PackTemplate(1, 0)  # one [SEP] between, no segment ids
    assert tokenizer.normalization == "NFC" and not tokenizer.add_prefix_space
    token_ids, segment_ids = tokenizer.pack(
        [tokenizer.tokenize_flat(["a"]), tokenizer.tokenize_flat(["b"])], 16)
    assert token_ids.to_list() == [[2996, 64, 2997, 65, 2997]]  # "a", "b": bytes 0x61, 0x62
    assert segment_ids.to_list() == [[0, 0, 0, 0, 0]]


@pytest.mark.parametrize("name", ["conll", "wikitext", "hostile"])
def test_modernbert_single_texts_match_transformers(modernbert, name):
    tokenizer, reference = modernbert
    texts = reference["single"][name]
    assert mismatches(packed(tokenizer, texts["texts"]), texts["ids"], texts["texts"]) == []


def test_modernbert_pairs_match_transformers_truncated_too(modernbert):
    tokenizer, reference = modernbert
    everything = [text for name in ("conll", "wikitext", "hostile")
                  for text in reference["single"][name]["texts"]]
    firsts = [everything[i] for i, _ in reference["pairs"]["index"]]
    seconds = [everything[j] for _, j in reference["pairs"]["index"]]
    assert mismatches(packed(tokenizer, firsts, seconds), reference["pairs"]["ids"],
                      list(zip(firsts, seconds))) == []
    # Three special tokens: an odd budget of 21, where the longer text keeps the odd token.
    count = reference["pairs_truncated_24"]["count"]
    assert mismatches(packed(tokenizer, firsts[:count], seconds[:count], max_length=24),
                      reference["pairs_truncated_24"]["ids"],
                      list(zip(firsts, seconds))[:count]) == []
