"""The tokenizer of a Hugging Face directory, whatever its scheme and file layout.

transformers 5.x saves every tokenizer as `tokenizer.json` alone; older
checkpoints (and many on the Hub) carry the legacy files instead. Both are
read, and the scheme decides which of our `SubwordTokenizer`s is built:

    vocab.txt                                  → WordPieceTokenizer (BERT, DistilBERT, ELECTRA)
    tokenizer.json with a "WordPiece" model    → WordPieceTokenizer
    tokenizer.json with a "BPE" model          → ByteLevelBpeTokenizer (RoBERTa)
    vocab.json + merges.txt                    → ByteLevelBpeTokenizer
    tokenizer.json with a "Unigram" model      → SentencePieceTokenizer (XLM-R, ALBERT)
    sentencepiece.bpe.model / spiece.model / spm.model → SentencePieceTokenizer

`tokenizer.json` wins when a directory also has legacy files: it is what
transformers' tokenizers read (all-MiniLM-L6-v2 ships both, which agree).

Examples:
>>> import json, os, tempfile
>>> directory = tempfile.mkdtemp()
>>> tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "open", "##s"]
>>> with open(os.path.join(directory, "tokenizer.json"), "w") as f:
...     json.dump({"model": {"type": "WordPiece", "unk_token": "[UNK]",
...                          "continuing_subword_prefix": "##",
...                          "vocab": {token: i for i, token in enumerate(tokens)}},
...                "normalizer": {"type": "BertNormalizer", "lowercase": True,
...                               "strip_accents": None, "handle_chinese_chars": True}}, f)
>>> tokenizer = load_hf_tokenizer(directory)
>>> type(tokenizer).__name__, tokenizer.encode("Café opens")
('WordPieceTokenizer', [2, 5, 6, 7, 3])
"""

import os

from nlpzoo.tasks.text.tokenizer_json import read_tokenizer_json
from nlpzoo.zoo.checkpoints.common import checkpoint_directory, read_json

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
WORDPIECE_VOCABULARY = "vocab.txt"
BPE_FILES = ("vocab.json", "merges.txt")
SENTENCEPIECE_FILES = ("sentencepiece.bpe.model", "spiece.model", "spm.model")
_KIND = "a Hugging Face tokenizer directory"
# Tokenizer classes that are BERT's basic + WordPiece tokenizer over vocab.txt.
_WORDPIECE_TOKENIZER_CLASSES = (
    "BertTokenizer", "BertTokenizerFast", "DistilBertTokenizer", "DistilBertTokenizerFast",
    "ElectraTokenizer", "ElectraTokenizerFast",
)

def read_hf_lowercase(path):
    """Whether a checkpoint's tokenizer lower-cases and strips accents.

    From `tokenizer_config.json`: `do_lower_case` (default True when the
    file or field is absent, as in BERT's uncased checkpoints); `strip_accents`
    None follows `do_lower_case`. Settings `WordPieceTokenizer` cannot
    reproduce (strip_accents different from do_lower_case,
    tokenize_chinese_chars false, a tokenizer class other than BERT's) raise
    `ValueError` naming the field.
    """
    config_path = os.path.join(checkpoint_directory(path), TOKENIZER_CONFIG_FILE)
    config = {}
    if os.path.isfile(config_path):
        config = read_json(config_path, TOKENIZER_CONFIG_FILE, _KIND)
    tokenizer_class = config.get("tokenizer_class")
    if tokenizer_class is not None and tokenizer_class not in _WORDPIECE_TOKENIZER_CLASSES:
        raise ValueError(
            f"{config_path}: tokenizer_class={tokenizer_class!r} is not BERT's WordPiece "
            f"tokenizer ({', '.join(_WORDPIECE_TOKENIZER_CLASSES)})"
        )
    lowercase = bool(config.get("do_lower_case", True))
    strip_accents = config.get("strip_accents")
    if strip_accents is not None and bool(strip_accents) != lowercase:
        raise ValueError(
            f"{config_path}: strip_accents={strip_accents!r} with do_lower_case={lowercase!r} "
            "is not supported: WordPieceTokenizer strips accents exactly when it lower-cases"
        )
    if not config.get("tokenize_chinese_chars", True):
        raise ValueError(
            f"{config_path}: tokenize_chinese_chars=false is not supported: "
            "WordPieceTokenizer always splits CJK characters"
        )
    if config.get("do_basic_tokenize") is False:
        raise ValueError(
            f"{config_path}: do_basic_tokenize=false is not supported: WordPieceTokenizer "
            "always splits on whitespace and punctuation first"
        )
    return lowercase

_WORDPIECE_TOKENIZER_CLASS = "BertTokenizer"  # what our WordPiece tokenizer is in transformers' terms

# tokenizer_config.json field → the special token; KerasHub's BertTokenizer needs all five too.
WORDPIECE_SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                   "cls_token": "[CLS]", "mask_token": "[MASK]"}


def tokenizer_scheme(path):
    """"wordpiece", "byte_pair" or "sentencepiece": what a directory's tokenizer files are.

    Raises:
        ValueError: none of the known files; the message lists what was looked for.
    """
    directory = checkpoint_directory(path)

    def has(*names):
        return all(os.path.isfile(os.path.join(directory, name)) for name in names)

    if has(TOKENIZER_JSON):
        model = _tokenizer_json(directory).get("model") or {}
        scheme = {"WordPiece": "wordpiece", "BPE": "byte_pair",
                  "Unigram": "sentencepiece"}.get(model.get("type"))
        if scheme is None:
            raise ValueError(f"{os.path.join(directory, TOKENIZER_JSON)}: model type "
                             f"{model.get('type')!r} is not one this version reads "
                             "(WordPiece, BPE, Unigram)")
        return scheme
    if has(WORDPIECE_VOCABULARY):
        return "wordpiece"
    if has(*BPE_FILES):
        return "byte_pair"
    if any(has(name) for name in SENTENCEPIECE_FILES):
        return "sentencepiece"
    found = sorted(os.listdir(directory))
    raise ValueError(
        f"{directory}: no tokenizer files; looked for {TOKENIZER_JSON}, {WORDPIECE_VOCABULARY}, "
        f"{' + '.join(BPE_FILES)} or one of {', '.join(SENTENCEPIECE_FILES)}; found "
        f"{', '.join(found[:20]) or 'nothing'}")


def load_hf_tokenizer(path):
    """Our `SubwordTokenizer` for a Hugging Face directory (see the module docstring).

    `encode(text, text_pair)` of the result gives the ids
    `transformers.AutoTokenizer.from_pretrained(path)(text, text_pair)["input_ids"]` gives.
    """
    directory = checkpoint_directory(path)
    scheme = tokenizer_scheme(directory)
    if scheme == "wordpiece":
        return _wordpiece(directory)
    if scheme == "byte_pair":
        from nlpzoo.tasks.text.byte_pair_tokenizer import ByteLevelBpeTokenizer

        return ByteLevelBpeTokenizer.from_hf_directory(directory)
    from nlpzoo.tasks.text.sentence_piece_tokenizer import SentencePieceTokenizer

    return SentencePieceTokenizer.from_hf_directory(directory)


def _tokenizer_json(directory):
    return read_tokenizer_json(os.path.join(directory, TOKENIZER_JSON))


def _wordpiece(directory):
    """A `WordPieceTokenizer` from `vocab.txt` or a WordPiece `tokenizer.json`."""
    from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer

    path = os.path.join(directory, TOKENIZER_JSON)
    if not os.path.isfile(path):
        return WordPieceTokenizer(os.path.join(directory, WORDPIECE_VOCABULARY),
                                  lowercase=read_hf_lowercase(directory))
    content = _tokenizer_json(directory)
    model = content["model"]
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise ValueError(f"{path}: continuing_subword_prefix={prefix!r}; WordPieceTokenizer "
                         "marks continuations with '##'")
    vocabulary = _tokens_by_id(model.get("vocab"), path)
    normalizer = content.get("normalizer") or {}
    if normalizer.get("type") not in (None, "BertNormalizer"):
        raise ValueError(f"{path}: normalizer {normalizer.get('type')!r} is not BERT's; "
                         "WordPieceTokenizer normalises as BertNormalizer does")
    lowercase = bool(normalizer.get("lowercase", True))
    strip_accents = normalizer.get("strip_accents")
    if strip_accents is not None and bool(strip_accents) != lowercase:
        raise ValueError(f"{path}: strip_accents={strip_accents!r} with lowercase={lowercase!r} "
                         "is not supported: WordPieceTokenizer strips accents exactly when it "
                         "lower-cases")
    if normalizer.get("handle_chinese_chars") is False:
        raise ValueError(f"{path}: handle_chinese_chars=false is not supported: "
                         "WordPieceTokenizer always splits CJK characters")
    return WordPieceTokenizer(vocabulary, lowercase=lowercase)


def _tokens_by_id(vocab, path):
    """A `{token: id}` map as the list of tokens in id order; the ids must be 0..n-1."""
    if not isinstance(vocab, dict) or not vocab:
        raise ValueError(f"{path}: model.vocab must be a non-empty {{token: id}} object")
    tokens = [None] * len(vocab)
    for token, token_id in vocab.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) \
                or not 0 <= token_id < len(vocab) or tokens[token_id] is not None:
            raise ValueError(f"{path}: the vocabulary's ids must be 0..{len(vocab) - 1}, each "
                             f"once; {token!r} has {token_id!r}")
        tokens[token_id] = token
    return tokens


def has_tokenizer_files(path):
    """Whether a directory holds any tokenizer file this module reads."""
    names = (TOKENIZER_JSON, WORDPIECE_VOCABULARY, BPE_FILES[0], *SENTENCEPIECE_FILES)
    return any(os.path.isfile(os.path.join(path, name)) for name in names)


# --- export ------------------------------------------------------------------------------

# Our special-token roles → transformers' tokenizer_config.json fields.
_SPECIAL_FIELDS = {"unk": "unk_token", "sep": "sep_token", "pad": "pad_token",
                   "cls": "cls_token", "mask": "mask_token"}
# The SentencePiece families' transformers classes, and the unknown id each class fixes.
_SENTENCEPIECE_CLASSES = {"xlm-roberta": ("XLMRobertaTokenizer", 3),
                          "albert": ("AlbertTokenizer", 1),
                          "deberta-v2": ("DebertaV2Tokenizer", None)}  # unk_id: any
# DeBERTa-v2/v3's normalizer in transformers 5.x (its class builds it; the model's
# charsmap is not used): whitespace runs and tabs/newlines → " ", NFC, right strip.
_DEBERTA_NORMALIZERS = [
    {"type": "Replace", "pattern": {"Regex": "\\s{2,}|[\\n\\r\\t]"}, "content": " "},
    {"type": "NFC"}, {"type": "Strip", "strip_left": False, "strip_right": True}]


def export_hf_tokenizer(tokenizer, directory, model_max_length):
    """Writes `tokenizer` as files `transformers.AutoTokenizer.from_pretrained` reads to
    the same ids (`encode(text, text_pair)` = its `input_ids`), and `load_hf_tokenizer` too.

    ==================  ===================================  =========================
    our tokenizer       files                                transformers class
    ==================  ===================================  =========================
    WordPiece           vocab.txt                            BertTokenizer
    byte-level BPE      vocab.json, merges.txt               RobertaTokenizer
    byte-level BPE,     tokenizer.json (BPE model, its        PreTrainedTokenizerFast
    other template or   normaliser, TemplateProcessing)       (ModernBERT's)
    normalised
    SentencePiece       tokenizer.json (a Unigram model:     XLMRobertaTokenizer,
                        our pieces, ids and scores, the      AlbertTokenizer,
                        model's charsmap)                    DebertaV2Tokenizer
    ==================  ===================================  =========================

    Each with `tokenizer_config.json` (the class, special tokens, casing,
    `add_prefix_space`, the added tokens, `model_max_length`). A SentencePiece
    tokenizer is written as `tokenizer.json` rather than a legacy `.model`
    file: its piece ids are the checkpoint's (XLM-R's fairseq specials
    included), which is what a `tokenizer.json` holds.

    Args:
        tokenizer: a `SubwordTokenizer` (`WordPieceTokenizer`,
            `ByteLevelBpeTokenizer`, `SentencePieceTokenizer`).
        directory: an existing directory to write into.
        model_max_length: the longest input (tokens) the model takes.

    Returns:
        The names of the files written.

    Raises:
        ValueError: a setting the family's transformers class cannot express
            (a lower-casing or Unicode-normalising byte-level BPE, an XLM-R
            tokenizer that lower-cases, special tokens in other places); one line.

    Examples:
    >>> import tempfile
    >>> from nlpzoo.tasks.text.byte_pair_tokenizer import ByteLevelBpeTokenizer
    >>> tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "c", "a", "t", "Ġ", "Ġc", "at"]
    >>> tokenizer = ByteLevelBpeTokenizer(tokens, ["Ġ c", "a t"])
    >>> directory = tempfile.mkdtemp()
    >>> export_hf_tokenizer(tokenizer, directory, 512)
    ['merges.txt', 'tokenizer_config.json', 'vocab.json']
    >>> load_hf_tokenizer(directory).encode("cat <mask>") == tokenizer.encode("cat <mask>")
    True
    """
    return write_hf_tokenizer_files(hf_tokenizer_files(tokenizer, model_max_length), directory)


def hf_tokenizer_files(tokenizer, model_max_length):
    """{file name: its content (a string, or a dict/list written as JSON)}: what
    `export_hf_tokenizer` writes, made (and refused) before anything is written.

    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> files = hf_tokenizer_files(WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"]), 64)
    >>> files["vocab.txt"], files["tokenizer_config.json"]["tokenizer_class"]
    ('[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n', 'BertTokenizer')
    """
    writers = {"wordpiece": _export_wordpiece, "byte_pair": _export_byte_pair,
               "sentencepiece": _export_sentencepiece}
    kind = getattr(tokenizer, "kind", None)
    if kind not in writers:
        raise ValueError(f"{type(tokenizer).__name__}: not a tokenizer this version exports "
                         f"(kinds: {', '.join(writers)})")
    return writers[kind](tokenizer, int(model_max_length))


def write_hf_tokenizer_files(files, directory):
    """Writes `hf_tokenizer_files`' files into `directory`; returns their names, sorted."""
    for name, content in files.items():
        _write_file(os.path.join(directory, name), content)
    return sorted(files)


def _write_file(path, content):
    from nlpzoo.tasks.io.atomic_files import write_json_atomically, write_text_atomically

    if isinstance(content, (dict, list)):
        write_json_atomically(content, path)
    else:
        write_text_atomically(path, [content])


def _special_fields(tokenizer):
    """tokenizer_config.json's `*_token` fields of our special tokens (those in the vocabulary)."""
    vocabulary = set(tokenizer.vocabulary)
    return {field: tokenizer.special_tokens[role] for role, field in _SPECIAL_FIELDS.items()
            if tokenizer.special_tokens[role] in vocabulary}


def _added_token(token_id, content, special, lstrip=False, rstrip=False):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": False, "special": special}


def _added_tokens_decoder(entries):
    return {str(entry["id"]): {key: value for key, value in entry.items() if key != "id"}
            for entry in entries}


def _export_wordpiece(tokenizer, model_max_length):
    """vocab.txt + BertTokenizer's tokenizer_config.json (what `export_hf_checkpoint` wrote)."""

    config = _hf_tokenizer_config(tokenizer.lowercase, model_max_length)
    for field in _SPECIAL_FIELDS.values():  # only those the vocabulary has
        config.pop(field, None)
    config.update(_special_fields(tokenizer))
    return {WORDPIECE_VOCABULARY: "".join(f"{token}\n" for token in tokenizer.vocabulary),
            TOKENIZER_CONFIG_FILE: config}


def _export_byte_pair(tokenizer, model_max_length):
    """vocab.json + merges.txt + RobertaTokenizer's tokenizer_config.json; in another
    template than RoBERTa's (ModernBERT's `[CLS] a [SEP] b [SEP]`) or with a normaliser,
    tokenizer.json (`_byte_pair_tokenizer_json`)."""
    import json

    if tuple(tokenizer.template) != (2, 0) or tokenizer.normalization:
        return _byte_pair_tokenizer_json(tokenizer, model_max_length)
    if tokenizer.lowercase or tokenizer.normalization:
        raise ValueError(f"a byte-level BPE with lowercase={tokenizer.lowercase}, "
                         f"normalization={tokenizer.normalization!r}: RobertaTokenizer has no "
                         "normaliser")
    if tuple(tokenizer.template) != (2, 0):
        raise ValueError(f"template={tuple(tokenizer.template)}: RobertaTokenizer packs "
                         "<s> a </s></s> b </s> (two separators, one segment id)")
    index, added = _byte_pair_index(tokenizer, "vocab.json")
    config = dict(_special_fields(tokenizer), tokenizer_class="RobertaTokenizer",
                  bos_token=tokenizer.special_tokens["cls"],
                  eos_token=tokenizer.special_tokens["sep"],
                  add_prefix_space=tokenizer.add_prefix_space, trim_offsets=True,
                  errors="replace", model_max_length=model_max_length,
                  added_tokens_decoder=_added_tokens_decoder(added))
    return {BPE_FILES[0]: json.dumps(index, ensure_ascii=False),
            BPE_FILES[1]: "#version: 0.2\n" + "".join(f"{m}\n" for m in tokenizer.merges),
            TOKENIZER_CONFIG_FILE: config}


def _byte_pair_index(tokenizer, file_name):
    """{token: id} of a byte-level BPE (each token one id, as `file_name` maps them) and
    its added tokens as transformers writes them."""
    index = {}
    for token_id, token in enumerate(tokenizer.vocabulary):
        if index.setdefault(token, token_id) != token_id:
            raise ValueError(f"the token {token!r} has two ids ({index[token]}, {token_id}); "
                             f"{file_name} maps each token to one")
    specials = set(tokenizer.special_tokens.values())
    added = [_added_token(index[token["content"]], token["content"],
                          token["content"] in specials, token["lstrip"], token["rstrip"])
             for token in tokenizer.added_tokens]
    return index, added


def _byte_pair_tokenizer_json(tokenizer, model_max_length):
    """tokenizer.json of a byte-level BPE (ModernBERT's layout: its normaliser, a
    `TemplateProcessing` post-processor of our template) + PreTrainedTokenizerFast's
    tokenizer_config.json."""
    index, added = _byte_pair_index(tokenizer, "tokenizer.json")
    cls, sep = tokenizer.special_tokens["cls"], tokenizer.special_tokens["sep"]
    separators, second_id = tuple(tokenizer.template)

    def special(token, type_id=0):
        return {"SpecialToken": {"id": token, "type_id": type_id}}

    def sequence(name, type_id=0):
        return {"Sequence": {"id": name, "type_id": type_id}}

    normalizers = ([{"type": "Lowercase"}] if tokenizer.lowercase else []) + (
        [{"type": tokenizer.normalization}] if tokenizer.normalization else [])
    byte_level = {"type": "ByteLevel", "add_prefix_space": tokenizer.add_prefix_space,
                  "trim_offsets": True, "use_regex": True}
    spec = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": (None if not normalizers else normalizers[0] if len(normalizers) == 1
                       else {"type": "Sequence", "normalizers": normalizers}),
        "pre_tokenizer": byte_level,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special(cls), sequence("A"), special(sep)],
            "pair": ([special(cls), sequence("A")] + [special(sep)] * separators
                     + [sequence("B", second_id), special(sep, second_id)]),
            "special_tokens": {token: {"id": token, "ids": [index[token]], "tokens": [token]}
                               for token in (cls, sep)},
        },
        "decoder": dict(byte_level, add_prefix_space=True),
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": index, "merges": [merge.split(" ") for merge in tokenizer.merges]},
    }
    config = dict(_special_fields(tokenizer), tokenizer_class="PreTrainedTokenizerFast",
                  model_max_length=model_max_length,
                  model_input_names=["input_ids", "attention_mask"],
                  added_tokens_decoder=_added_tokens_decoder(added))
    return {TOKENIZER_JSON: spec, TOKENIZER_CONFIG_FILE: config}


def _export_sentencepiece(tokenizer, model_max_length):
    """tokenizer.json (a Unigram model of our pieces) + the family's tokenizer_config.json."""
    import base64

    from nlpzoo.tasks.text.sentence_piece_tokenizer import _parse_model

    class_name, unk_id = _SENTENCEPIECE_CLASSES[tokenizer.family]
    deberta = tokenizer.family == "deberta-v2"
    if unk_id is not None and tokenizer.unk_id != unk_id:
        raise ValueError(f"the unknown token has id {tokenizer.unk_id}; {class_name} fixes it "
                         f"at {unk_id}")
    if tokenizer.family == "xlm-roberta" and (tokenizer.lowercase or not tokenizer.keep_accents):
        raise ValueError(f"an XLM-R tokenizer with lowercase={tokenizer.lowercase}, "
                         f"keep_accents={tokenizer.keep_accents}: XLMRobertaTokenizer "
                         "normalises with the model's charsmap only")
    proto = _parse_model(tokenizer._model, "the tokenizer's SentencePiece model")
    types = type(proto.pieces[0])
    pieces = [[piece.piece, float(piece.score)] for piece in proto.pieces]
    specials = set(tokenizer.special_tokens.values())
    index = {}
    for token_id, (piece, _) in enumerate(pieces):
        index.setdefault(piece, token_id)
    added = [_added_token(index[token], token, token in specials)
             for token in tokenizer.split_tokens]
    if deberta:  # transformers matches DeBERTa's [MASK] in normalized text (see the tokenizer)
        mask = tokenizer.special_tokens["mask"]
        added = [dict(entry, normalized=entry["content"] == mask) for entry in added]
    charsmap = proto.normalizer_spec.precompiled_charsmap
    normalizers = []
    if tokenizer.family == "albert":
        normalizers += [{"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
                        {"type": "Replace", "pattern": {"String": "''"}, "content": '"'}]
        if not tokenizer.keep_accents:
            normalizers += [{"type": "NFKD"}, {"type": "StripAccents"}]
        if tokenizer.lowercase:
            normalizers.append({"type": "Lowercase"})
    if deberta:
        normalizers += [{"type": "Lowercase"}] * tokenizer.lowercase + _DEBERTA_NORMALIZERS
    elif charsmap:
        normalizers.append({"type": "Precompiled",
                            "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")})
    cls, sep = tokenizer.special_tokens["cls"], tokenizer.special_tokens["sep"]
    second = [{"Sequence": {"id": "B", "type_id": tokenizer.template.second_segment_id}},
              {"SpecialToken": {"id": sep, "type_id": tokenizer.template.second_segment_id}}]
    middle = [{"SpecialToken": {"id": sep, "type_id": 0}}] * (tokenizer.template.separators - 1)
    single = [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
              {"SpecialToken": {"id": sep, "type_id": 0}}]
    content = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}] * (not deberta) + [  # DeBERTa splits at " " only
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
             "split": True}]},
        "post_processor": {
            "type": "TemplateProcessing", "single": single, "pair": single + middle + second,
            "special_tokens": {token: {"id": token, "ids": [index[token]], "tokens": [token]}
                               for token in (cls, sep)}},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                    "split": True},
        "model": {"type": "Unigram", "unk_id": tokenizer.unk_id, "vocab": pieces,
                  "byte_fallback": False},
    }
    config = dict(_special_fields(tokenizer), tokenizer_class=class_name,
                  bos_token=cls, eos_token=sep, model_max_length=model_max_length,
                  add_prefix_space=True, added_tokens_decoder=_added_tokens_decoder(added))
    if tokenizer.family == "albert":
        config.update(do_lower_case=tokenizer.lowercase, keep_accents=tokenizer.keep_accents,
                      remove_space=True)
    if deberta:
        config.update(do_lower_case=tokenizer.lowercase, split_by_punct=False, vocab_type="spm",
                      unk_id=tokenizer.unk_id)
    return {TOKENIZER_JSON: content, TOKENIZER_CONFIG_FILE: config}


def _hf_tokenizer_config(lowercase, model_max_length):
    """tokenizer_config.json: BERT's tokenizer set up as our `WordPieceTokenizer` runs."""
    config = dict(WORDPIECE_SPECIAL_TOKENS)
    config.update(
        tokenizer_class=_WORDPIECE_TOKENIZER_CLASS,
        do_lower_case=bool(lowercase),
        strip_accents=None,  # follows do_lower_case, as ours does
        tokenize_chinese_chars=True,
        do_basic_tokenize=True,
        never_split=None,
        clean_up_tokenization_spaces=True,
        model_max_length=int(model_max_length),
    )
    return config
