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

from nlpzoo.zoo.checkpoints.common import checkpoint_directory, read_json

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
WORDPIECE_VOCABULARY = "vocab.txt"
BPE_FILES = ("vocab.json", "merges.txt")
SENTENCEPIECE_FILES = ("sentencepiece.bpe.model", "spiece.model", "spm.model")
_KIND = "a Hugging Face tokenizer directory"


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
    content = read_json(os.path.join(directory, TOKENIZER_JSON), TOKENIZER_JSON, _KIND)
    if not isinstance(content, dict):
        raise ValueError(f"{os.path.join(directory, TOKENIZER_JSON)}: expected a JSON object")
    return content


def _wordpiece(directory):
    """A `WordPieceTokenizer` from `vocab.txt` or a WordPiece `tokenizer.json`."""
    from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    from nlpzoo.zoo.checkpoints.huggingface import read_hf_lowercase

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
