"""SentencePiece (unigram) tokenization for XLM-R, ALBERT and DeBERTa-v3, in TensorFlow ops,
as `transformers` 5.x tokenizes.

transformers 5.x runs these tokenizers on the `tokenizers` library: special tokens
are cut out of the raw text first; each remaining part is normalized (ALBERT: "``"
and "''" → '"', NFKD and no combining marks unless `keep_accents`, lower case; then
the model's precompiled SentencePiece charsmap, `nmt_nfkc` for both families; DeBERTa-v3:
no charsmap but whitespace runs and tabs/newlines → " ", NFC and a right strip),
split at whitespace, each word given a leading "▁" and cut into the unigram
model's pieces (Viterbi). Here the same steps run in the graph: the special tokens
are cut with `tensorflow_text.regex_split`, the family's normalization uses string
ops, and `tensorflow_text.SentencepieceTokenizer` runs the charsmap, the "▁"
prefix and the Viterbi over a SentencePiece model whose piece ids are the
checkpoint's ids (XLM-R's fairseq offset is built into it), so no id is remapped.
`tests/tasks/text/test_sentence_piece_tokenizer.py` compares the ids with
transformers' on about a thousand texts.

The model is read from a Hugging Face directory (`SentencePieceTokenizer.from_hf_directory`):
the legacy `sentencepiece.bpe.model` (XLM-R), `spiece.model` (ALBERT) or `spm.model`
(DeBERTa-v3, whose `[MASK]` follows the model's pieces), or a
`tokenizer.json` alone (what transformers 5.x saves: a `Unigram` model with pieces
and scores and a `Precompiled` normalizer), from which an equivalent SentencePiece
model is built.
"""

import base64
import hashlib
import os
from typing import NamedTuple

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.python.trackable import resource
from tensorflow_text.python.ops.sentencepiece_tokenizer import gen_sentencepiece_tokenizer

from nlpzoo.tasks.io.atomic_files import write_binary_atomically
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.io.json_text import read_json_file
from nlpzoo.tasks.text.ragged_rows import concat_rows, row_sums
from nlpzoo.tasks.text.tokenizer_json import read_tokenizer_json
from nlpzoo.tasks.text.subword_tokenizer import (
    PackTemplate,
    SubwordTokenizer,
    regex_literal,
    register_tokenizer,
)

WORD_START = "\u2581"  # "▁": SentencePiece's mark of a piece that starts a word
NUL_STAND_IN = "\uffff"

# The characters Rust's `char::is_whitespace` (Unicode White_Space) sees, where the
# `tokenizers` pre-tokenizer splits words; SentencePiece splits only at " ".
UNICODE_WHITESPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200b)))
                      + "\u2028\u2029\u202f\u205f\u3000")


class Family(NamedTuple):
    """What a checkpoint family adds around its SentencePiece model.

    `legacy_offset`: how many special tokens the checkpoint puts before the
    SentencePiece model's own pieces from id 3 on (XLM-R: fairseq's `<s>`, `<pad>`,
    `</s>`, `<unk>` replace the model's `<unk>`, `<s>`, `</s>` and shift every
    other piece by one; `mask` is appended last). ALBERT uses the model's ids.
    `normalizer`: "charsmap" (the model's precompiled charsmap, as SentencePiece) or
    "whitespace_nfc" (DeBERTa-v2/v3 in transformers 5.x: runs of whitespace and every
    tab, newline and carriage return → " ", NFC, trailing whitespace stripped; the
    model's charsmap is not used, and words are split at " " only). A family's `mask`
    missing from its legacy model is appended after the model's pieces (DeBERTa-v3).
    """

    pad: str
    unk: str
    cls: str
    sep: str
    mask: str
    template: PackTemplate
    legacy_file: str
    lowercase: bool = False
    keep_accents: bool = True
    replace_quotes: bool = False
    legacy_offset: bool = False
    normalizer: str = "charsmap"


FAMILIES = {
    "xlm-roberta": Family("<pad>", "<unk>", "<s>", "</s>", "<mask>", PackTemplate(2, 0),
                          "sentencepiece.bpe.model", legacy_offset=True),
    "albert": Family("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", PackTemplate(1, 1),
                     "spiece.model", lowercase=True, keep_accents=False, replace_quotes=True),
    "deberta-v2": Family("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", PackTemplate(1, 1),
                         "spm.model", normalizer="whitespace_nfc"),
}

# transformers' tokenizer classes and config.json model types → family.
_TOKENIZER_CLASSES = {
    "XLMRobertaTokenizer": "xlm-roberta", "XLMRobertaTokenizerFast": "xlm-roberta",
    "AlbertTokenizer": "albert", "AlbertTokenizerFast": "albert",
    "DebertaV2Tokenizer": "deberta-v2", "DebertaV2TokenizerFast": "deberta-v2",
}
_MODEL_TYPES = {"xlm-roberta": "xlm-roberta", "xlm_roberta": "xlm-roberta", "albert": "albert",
                "deberta-v2": "deberta-v2", "deberta_v2": "deberta-v2"}


def _model_pb2():
    from sentencepiece import sentencepiece_model_pb2  # a dependency of keras-hub

    return sentencepiece_model_pb2


def unigram_model_proto(pieces, unk_id, precompiled_charsmap=b"", control_ids=(),
                        user_defined_ids=()):
    """A serialized SentencePiece unigram `ModelProto` with these pieces, in id order.

    Every piece is a normal piece that the Viterbi search may use (as the
    `tokenizers` `Unigram` model uses every entry of its vocabulary), except
    `unk_id` (the unknown piece), `control_ids` (never produced) and
    `user_defined_ids` (always kept whole). Text is normalized with
    `precompiled_charsmap` (a SentencePiece charsmap; none: no normalization),
    given a leading "▁", and runs of spaces are collapsed.

    Args:
        pieces: (piece, score) pairs, the piece of id i first.
        unk_id: the id of the unknown piece.
        precompiled_charsmap: bytes, the normalizer's charsmap.
        control_ids, user_defined_ids: ids of pieces of those kinds.

    Examples:
    >>> proto = unigram_model_proto([("<unk>", 0.0), ("▁cat", -1.0), ("s", -2.0)], 0)
    >>> tf_text.SentencepieceTokenizer(proto).tokenize(["cats"]).to_list()
    [[1, 2]]
    """
    model_pb2 = _model_pb2()
    proto = model_pb2.ModelProto()
    types = model_pb2.ModelProto.SentencePiece
    control_ids, user_defined_ids = set(control_ids), set(user_defined_ids)
    for token_id, (piece, score) in enumerate(pieces):
        entry = proto.pieces.add(piece=piece, score=_on_grid(score))
        if token_id == unk_id:
            entry.type = types.UNKNOWN
        elif token_id in control_ids:
            entry.type = types.CONTROL
        elif token_id in user_defined_ids:
            entry.type = types.USER_DEFINED
    spec = proto.trainer_spec
    spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    spec.vocab_size = len(pieces)
    spec.unk_id, spec.bos_id, spec.eos_id, spec.pad_id = unk_id, -1, -1, -1
    spec.unk_piece = pieces[unk_id][0]
    normalizer = proto.normalizer_spec
    normalizer.name = "nmt_nfkc" if precompiled_charsmap else "identity"
    normalizer.precompiled_charsmap = bytes(precompiled_charsmap or b"")
    normalizer.add_dummy_prefix = True
    normalizer.remove_extra_whitespaces = True
    normalizer.escape_whitespaces = True
    return proto.SerializeToString()


# Piece scores are rounded to multiples of this. `tokenizers` adds the (float32) scores
# in float64, where the sum of a word's few scores is exact: two segmentations with the
# same pieces in another order ("0" "00" and "00" "0" of "000") tie, and the one found
# first wins. SentencePiece adds them in float32, which rounds, and picks either. On the
# grid, float32 sums are exact too (up to 2^10 in magnitude) and SentencePiece breaks
# the ties as `tokenizers` does; only segmentations whose scores differ by less than the
# rounding (6e-5 a piece) may be ordered differently. Measured: 2^-13 gave transformers'
# ids on all 23,649 texts of CoNLL-2003 train and WikiText-2 test for both fixture
# models, against 201 (XLM-R) and 212 (ALBERT) differences unrounded.
SCORE_GRID = 2.0 ** -13


def _on_grid(score):
    return round(float(score) / SCORE_GRID) * SCORE_GRID


def _parse_model(data, path):
    """`ModelProto` of the bytes of a `.model` file, checked; errors name `path`."""
    if data[:1] == b"\x80":  # pickle protocol 2+: never unpickled
        raise DataFormatError(f"{path}: a Python pickle, not a SentencePiece model; pickles "
                              "are refused (they can run code)")
    model_pb2 = _model_pb2()
    proto = model_pb2.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as error:  # google.protobuf.message.DecodeError
        raise DataFormatError(f"{path}: not a SentencePiece model ({error})") from None
    types = model_pb2.ModelProto.SentencePiece
    unknown = [index for index, piece in enumerate(proto.pieces) if piece.type == types.UNKNOWN]
    if not proto.pieces or len(unknown) != 1:
        raise DataFormatError(f"{path}: not a SentencePiece model: expected pieces with one "
                              f"unknown piece, found {len(proto.pieces)} pieces and "
                              f"{len(unknown)} unknown")
    if proto.trainer_spec.model_type not in (0, model_pb2.TrainerSpec.UNIGRAM):
        kind = model_pb2.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type)
        raise DataFormatError(f"{path}: a SentencePiece {kind} model; only unigram models "
                              "(XLM-R, ALBERT) are supported")
    return proto


def _read_bytes(path):
    try:
        with open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None


def _whitespace_kept(model_bytes, proto):
    """The Unicode whitespace characters the model's normalizer keeps as they are (so
    SentencePiece would not split words there, while `tokenizers` does)."""
    if not proto.normalizer_spec.precompiled_charsmap:
        return UNICODE_WHITESPACE.replace(" ", "")
    # (A family that splits words at " " only does not call this: see `normalizer`.)
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_proto=model_bytes)
    return "".join(c for c in UNICODE_WHITESPACE
                   if c != " " and c in processor.normalize(f"a{c}b"))


class SentencePieceModel(resource.TrackableResource):
    """A SentencePiece model held by TensorFlow's resource manager, under a name of its own.

    `tensorflow_text.SentencepieceTokenizer` keeps its model in a resource owned by the
    op's kernel: in eager mode `tf.random.set_seed` (which `keras.utils.set_random_seed`
    calls) clears the kernel cache and with it the model, and the tokenizer then fails
    with "Resource ... does not exist". A shared name (the model's hash) keeps it.

    Examples:
    >>> model = SentencePieceModel(unigram_model_proto([("<unk>", 0.0), ("▁a", -1.0)], 0))
    >>> tf.random.set_seed(1)
    >>> model.tokenize(tf.constant(["a a"])).to_list()
    [[1, 1]]
    """

    def __init__(self, model):
        super().__init__()
        self._model = bytes(model)
        self._shared_name = f"nlpzoo_sentencepiece_{hashlib.sha256(self._model).hexdigest()[:32]}"
        _ = self.resource_handle  # creates it

    def _create_resource(self):
        return gen_sentencepiece_tokenizer.sentencepiece_op(model=self._model,
                                                            shared_name=self._shared_name)

    def tokenize(self, texts):
        """[N] strings → int32 RaggedTensor [N, (pieces)] (no sampling, no bos/eos)."""
        values, splits = gen_sentencepiece_tokenizer.sentencepiece_tokenize_op(
            self.resource_handle, texts, nbest_size=0, alpha=1.0, add_bos=False,
            add_eos=False, reverse=False, out_type=tf.int32)
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)


def _lower_per_character(texts):
    """Each character's lower case, as Rust's `char::to_lowercase` (`tokenizers`'
    `Lowercase`): no final-sigma rule (capital sigma is always σ)."""
    texts = tf.strings.regex_replace(texts, "\u03a3", "\u03c3")
    return tf.strings.lower(texts, encoding="utf-8")


@register_tokenizer
class SentencePieceTokenizer(SubwordTokenizer):
    """A SentencePiece unigram tokenizer of the XLM-R, ALBERT or DeBERTa-v3 family (a
    `SubwordTokenizer`).

    `tokenize` gives the words of running text (split at whitespace, as the
    `Metaspace` pre-tokenizer does; a special token typed in the text is a word
    of its own, with its id) and each word's pieces. `word_pieces(words)` reads
    each pre-split word as a word of running text ("▁word"), as transformers
    does with `is_split_into_words=True`. Texts are packed as `<s> a </s></s> b </s>`
    (XLM-R, one segment id) or `[CLS] a [SEP] b [SEP]` (ALBERT and DeBERTa-v3,
    segment ids 0/1).

    Build it with `from_hf_directory` (a checkpoint's tokenizer files) or
    `from_sentencepiece_model` (a legacy `.model` file); the constructor takes the
    model whose piece ids are the checkpoint's (as `save_assets` writes it).

    Args:
        model: the serialized `ModelProto` (bytes) or the path of its file.
        family: "xlm-roberta", "albert" or "deberta-v2" (`FAMILIES`): the special
            tokens, template and normalization.
        lowercase: lower-case the text (default: the family's; ALBERT: True).
        keep_accents: keep combining marks (default: the family's; ALBERT: False).
        special_tokens: {"pad", "unk", "cls", "sep", "mask"} → token string,
            when not the family's.
        split_tokens: the strings cut out of the raw text and given their own
            id (default: the five special tokens of the family).

    Examples:
    >>> pieces = [("<s>", 0), ("<pad>", 0), ("</s>", 0), ("<unk>", 0), ("▁the", -1),
    ...           ("▁cat", -2), ("s", -3), ("▁", -4), ("<mask>", 0)]
    >>> tokenizer = SentencePieceTokenizer(unigram_model_proto(pieces, 3), "xlm-roberta")
    >>> tokenizer.tokenize(["the  cats", "the<mask>"]).to_list()
    [[[4], [5, 6]], [[4], [8]]]
    >>> tokenizer.encode("the cats", "the")
    [0, 4, 5, 6, 2, 2, 4, 2]
    >>> tokenizer.word_pieces(["cats", "?"]).to_list()
    [[5, 6], [7, 3]]
    """

    kind = "sentencepiece"
    ASSET_FILE = "sentencepiece.model"

    def __init__(self, model, family="xlm-roberta", *, lowercase=None, keep_accents=None,
                 special_tokens=None, split_tokens=None):
        if family not in FAMILIES:
            raise ValueError(f"unknown SentencePiece family {family!r}; known: "
                             f"{', '.join(sorted(FAMILIES))}")
        path = "the SentencePiece model"
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            model = _read_bytes(path)
        model = bytes(model)
        proto = _parse_model(model, path)
        self.family = family
        spec = FAMILIES[family]
        specials = {"pad": spec.pad, "unk": spec.unk, "cls": spec.cls, "sep": spec.sep,
                    "mask": spec.mask, **(special_tokens or {})}
        super().__init__([piece.piece for piece in proto.pieces], template=spec.template,
                         lowercase=spec.lowercase if lowercase is None else lowercase,
                         split_tokens=split_tokens, **specials)
        self.keep_accents = spec.keep_accents if keep_accents is None else bool(keep_accents)
        self._replace_quotes = spec.replace_quotes
        self._normalizer = spec.normalizer
        if spec.normalizer == "whitespace_nfc":
            # The text comes normalized, with its "▁" (`_normalize_whitespace_nfc`): the
            # model neither adds one nor trims spaces (a "▁" before [MASK] is a piece).
            proto.normalizer_spec.add_dummy_prefix = False
            proto.normalizer_spec.remove_extra_whitespaces = False
            model = proto.SerializeToString()
        self._model = model
        kept = "" if spec.normalizer == "whitespace_nfc" else _whitespace_kept(model, proto)
        self._whitespace_pattern = f"[{regex_literal(kept)}]" if kept else None
        self._starts_word = tf.constant(
            [piece.startswith(WORD_START) for piece in self.vocabulary], tf.bool)
        self._sentencepiece = SentencePieceModel(model)

    @classmethod
    def from_sentencepiece_model(cls, path, family, **options):
        """The tokenizer of a checkpoint's legacy SentencePiece `.model` file, with the
        checkpoint's ids: XLM-R's `<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, the model's
        piece i at i + 1 (i ≥ 3) and `<mask>` last, as fairseq and transformers number
        them; ALBERT's and DeBERTa-v3's the model's own (DeBERTa's `[MASK]` appended).

        Raises:
            FileNotFoundError: no such file.
            DataFormatError: not a SentencePiece unigram model, or a pickle.
        """
        path = os.fspath(path)
        proto = _parse_model(_read_bytes(path), path)
        spec = FAMILIES[family]
        types = type(proto.pieces[0])
        specials = {**spec._asdict(), **options.get("special_tokens", {})}
        user_defined = []
        if spec.legacy_offset:
            pieces = [(specials[name], 0.0) for name in ("cls", "pad", "sep", "unk")]
            pieces += [(piece.piece, piece.score) for piece in proto.pieces[3:]]
            user_defined = [index + 1 for index, piece in enumerate(proto.pieces)
                            if index >= 3 and piece.type == types.USER_DEFINED]
            pieces.append((specials["mask"], 0.0))
            unk_id = 3
        else:
            pieces = [(piece.piece, piece.score) for piece in proto.pieces]
            user_defined = [index for index, piece in enumerate(proto.pieces)
                            if piece.type == types.USER_DEFINED]
            unk_id = next(index for index, piece in enumerate(proto.pieces)
                          if piece.type == types.UNKNOWN)
        control = []
        if specials["mask"] not in {piece for piece, _ in pieces}:
            # transformers adds the mask token after the model's pieces (DeBERTa-v3's 128000).
            control.append(len(pieces))
            pieces.append((specials["mask"], 0.0))
        charsmap = proto.normalizer_spec.precompiled_charsmap
        if spec.normalizer != "charsmap":
            charsmap = b""
        model = unigram_model_proto(pieces, unk_id, charsmap, control_ids=control,
                                    user_defined_ids=user_defined)
        if user_defined and "split_tokens" not in options:
            names = ("pad", "unk", "cls", "sep", "mask")
            options["split_tokens"] = ([specials[name] for name in names]
                                       + [pieces[index][0] for index in user_defined])
        return cls(model, family, **options)

    @classmethod
    def from_tokenizer_json(cls, path, family, **options):
        """The tokenizer of a `tokenizers` `tokenizer.json` holding a `Unigram` model (what
        transformers 5.x saves): its pieces, scores and unknown id, the charsmap of its
        `Precompiled` normalizer, and its added tokens (cut out of the raw text).

        The normalization and pre-tokenization are the family's (as transformers
        rebuilds them from `tokenizer_config.json`), not read from the file.

        Raises:
            FileNotFoundError: no such file.
            DataFormatError: not JSON, or not a unigram tokenizer.
        """
        path = os.fspath(path)
        content = read_tokenizer_json(path)
        model = content["model"]
        if not isinstance(model, dict) or model.get("type") != "Unigram":
            kind = model.get("type") if isinstance(model, dict) else None
            raise DataFormatError(f"{path}: expected a Unigram (SentencePiece) model, found "
                                  f"{kind or 'none'}")
        vocab, unk_id = model.get("vocab"), model.get("unk_id")
        try:
            pieces = [(str(piece), float(score)) for piece, score in vocab]
        except (TypeError, ValueError):
            raise DataFormatError(f"{path}: model.vocab is not a list of [piece, score] "
                                  "pairs") from None
        if not isinstance(unk_id, int) or not 0 <= unk_id < len(pieces):
            raise DataFormatError(f"{path}: model.unk_id {unk_id!r} is not an id of the "
                                  f"{len(pieces)} pieces")
        if model.get("byte_fallback"):
            raise DataFormatError(f"{path}: byte fallback is not supported")
        added = content.get("added_tokens") or []
        try:
            added = {int(token["id"]): str(token["content"]) for token in added}
        except (TypeError, KeyError, ValueError):
            raise DataFormatError(
                f"{path}: added_tokens is not a list of {{id, content}}") from None
        control = []
        for token_id in range(len(pieces), max(added, default=-1) + 1):
            # An added token past the model's pieces: an id the Viterbi never gives.
            pieces.append((added.get(token_id, f"<unused{token_id}>"), 0.0))
            control.append(token_id)
        for token_id, token in added.items():
            if pieces[token_id][0] != token:
                raise DataFormatError(f"{path}: added token {token!r} has id {token_id}, "
                                      f"which is the piece {pieces[token_id][0]!r}")
        charsmap = b""
        if FAMILIES[family].normalizer == "charsmap":
            charsmap = _precompiled_charsmap(content, path)
        model_bytes = unigram_model_proto(pieces, unk_id, charsmap, control_ids=control)
        options.setdefault("split_tokens", list(added.values()) or None)
        return cls(model_bytes, family, **options)

    @classmethod
    def from_hf_directory(cls, directory):
        """The tokenizer of a Hugging Face checkpoint directory.

        Reads `tokenizer.json` when there is one (transformers 5.x), else the family's
        legacy `.model` file (`sentencepiece.bpe.model`, `spiece.model`, `spm.model`). The
        family comes
        from `tokenizer_config.json`'s `tokenizer_class`, else `config.json`'s
        `model_type`, else the special tokens; ALBERT's `do_lower_case` and
        `keep_accents`, DeBERTa's `do_lower_case` and the special tokens' strings from
        `tokenizer_config.json`.

        Raises:
            FileNotFoundError: no tokenizer file in the directory.
            DataFormatError: a file that cannot be read as what it should be; the
                message names it.

        Examples:
        >>> tokenizer = SentencePieceTokenizer.from_hf_directory(
        ...     "tests/fixtures/tokenizers/albert_spm/tokenizer_json")
        >>> tokenizer.family, [tokenizer.vocabulary[i] for i in tokenizer.encode("Café[MASK]")]
        ('albert', ['[CLS]', '▁ca', 'fe', '[MASK]', '[SEP]'])
        """
        directory = os.fspath(directory)
        tokenizer_config = _read_json_object(os.path.join(directory, "tokenizer_config.json"))
        config = _read_json_object(os.path.join(directory, "config.json"))
        family = _detect_family(directory, tokenizer_config, config)
        spec = FAMILIES[family]
        options = {}
        specials = {}
        for name in ("pad", "unk", "cls", "sep", "mask"):
            token = tokenizer_config.get(f"{name}_token")
            if isinstance(token, dict):
                token = token.get("content")
            if isinstance(token, str) and token != getattr(spec, name):
                specials[name] = token
        if specials:
            options["special_tokens"] = specials
        if family == "albert":
            options["lowercase"] = bool(tokenizer_config.get("do_lower_case", True))
            options["keep_accents"] = bool(tokenizer_config.get("keep_accents", False))
        if family == "deberta-v2":
            options["lowercase"] = bool(tokenizer_config.get("do_lower_case", False))
            if tokenizer_config.get("split_by_punct"):
                raise DataFormatError(f"{directory}: split_by_punct=True is not supported")
        tokenizer_json = os.path.join(directory, "tokenizer.json")
        if os.path.isfile(tokenizer_json):
            return cls.from_tokenizer_json(tokenizer_json, family, **options)
        legacy = os.path.join(directory, spec.legacy_file)
        if os.path.isfile(legacy):
            return cls.from_sentencepiece_model(legacy, family, **options)
        raise FileNotFoundError(f"{directory}: no tokenizer.json nor {spec.legacy_file}: not a "
                                f"{family} tokenizer directory")

    def legacy_model(self):
        """The model as a checkpoint's legacy `.model` file holds it (bytes), with the
        model's own ids: what `from_sentencepiece_model` reads back to this tokenizer's
        ids, and what SentencePiece tokenizers outside transformers (KerasHub's) take.

        XLM-R: fairseq's four specials and `<mask>` are taken out and the model's
        `<unk>`, `<s>`, `</s>` put back at 0, 1, 2 (piece id i + 1 → i). DeBERTa-v3:
        SentencePiece's own "▁" prefix and collapsing of spaces are switched back on (the
        family normalises the text before the model); its charsmap, which transformers
        does not use, was not kept, so the model normalises nothing. The family's steps
        around the model (ALBERT's lower-casing, DeBERTa's NFC) are not in it.

        Raises:
            ValueError: XLM-R pieces not in fairseq's order (`<s>`, `<pad>`, `</s>`,
                `<unk>` first, the mask last).

        >>> pieces = [("<s>", 0), ("<pad>", 0), ("</s>", 0), ("<unk>", 0), ("▁the", -1),
        ...           ("▁cat", -2), ("s", -3), ("<mask>", 0)]
        >>> tokenizer = SentencePieceTokenizer(unigram_model_proto(pieces, 3), "xlm-roberta")
        >>> [piece.piece for piece in _parse_model(tokenizer.legacy_model(), "").pieces]
        ['<unk>', '<s>', '</s>', '▁the', '▁cat', 's']
        """
        proto = _parse_model(self._model, "the tokenizer's SentencePiece model")
        spec = FAMILIES[self.family]
        if spec.legacy_offset:
            types = type(proto.pieces[0])
            expected = [self.special_tokens[name] for name in ("cls", "pad", "sep", "unk")]
            found = [piece.piece for piece in proto.pieces[:4]]
            if found != expected or proto.pieces[-1].piece != self.special_tokens["mask"]:
                raise ValueError(f"the pieces begin {found} and end {proto.pieces[-1].piece!r}; "
                                 f"a {self.family} model's legacy ids need {expected} first "
                                 f"and {self.special_tokens['mask']!r} last")
            kept = [(piece.piece, piece.score, piece.type) for piece in proto.pieces[4:-1]]
            specials = [(self.special_tokens["unk"], 0.0, types.UNKNOWN),
                        (self.special_tokens["cls"], 0.0, types.CONTROL),
                        (self.special_tokens["sep"], 0.0, types.CONTROL)]
            del proto.pieces[:]
            for piece, score, kind in specials + kept:
                proto.pieces.add(piece=piece, score=score, type=kind)
            proto.trainer_spec.unk_id, proto.trainer_spec.vocab_size = 0, len(proto.pieces)
        if spec.normalizer == "whitespace_nfc":
            proto.normalizer_spec.add_dummy_prefix = True
            proto.normalizer_spec.remove_extra_whitespaces = True
        return proto.SerializeToString()

    # --- in the graph ---

    def _normalize(self, texts):
        """The family's normalization before the model's charsmap (ALBERT's)."""
        # `tokenizers` keeps U+0000 as an unknown character, where the SentencePiece op
        # would end the text: a noncharacter that no piece holds stands in for it.
        texts = tf.strings.regex_replace(texts, "\\x00", NUL_STAND_IN)
        if self._replace_quotes:
            texts = tf.strings.regex_replace(texts, "``", '"')
            texts = tf.strings.regex_replace(texts, "''", '"')
        if not self.keep_accents:
            texts = tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFKD"), r"\p{M}", "")
        if self.lowercase:
            texts = _lower_per_character(texts)
        if self._whitespace_pattern is not None:
            texts = tf.strings.regex_replace(texts, self._whitespace_pattern, " ")
        return texts

    def _normalize_whitespace_nfc(self, texts, before_mask):
        """DeBERTa-v2/v3's normalization (transformers 5.x) and its Metaspace's "▁".

        Runs of whitespace and every tab, newline, carriage return → " ", NFC, trailing
        whitespace stripped, except before a typed mask token: transformers matches
        `[MASK]` (a "normalized" added token) after normalizing the text around it,
        the other special tokens before. Then a "▁" before each text that does not
        start with a space or one (`prepend_scheme="always"`); the model adds none.
        """
        texts = tf.strings.regex_replace(texts, "\\x00", NUL_STAND_IN)
        if self.lowercase:
            texts = _lower_per_character(texts)
        whitespace = f"[{regex_literal(UNICODE_WHITESPACE)}]"
        texts = tf.strings.regex_replace(texts, f"{whitespace}{{2,}}|[\\n\\r\\t]", " ")
        texts = tf_text.normalize_utf8(texts, "NFC")
        texts = tf.where(before_mask, texts,
                         tf.strings.regex_replace(texts, f"{whitespace}+$", ""))
        return tf.strings.regex_replace(texts, f"^([^ {WORD_START}])", f"{WORD_START}\\1")

    def _segment_pieces(self, texts):
        """[B] strings → [B, (segments)] (a split token or the text between) and each
        segment's pieces [segments, (pieces)]."""
        segments, split_ids = self.split_special_tokens(texts)
        rows = split_ids.value_rowids()
        parts, split_ids = segments.flat_values, split_ids.flat_values
        is_split = split_ids >= 0
        if self._normalizer == "whitespace_nfc":
            following = tf.concat([split_ids[1:], [-1]], 0)
            same_row = tf.equal(tf.concat([rows[1:], [-1]], 0), rows)
            before_mask = tf.logical_and(tf.equal(following, self.mask_id), same_row)
            text = self._normalize_whitespace_nfc(tf.where(is_split, "", parts), before_mask)
        else:
            text = self._normalize(tf.where(is_split, "", parts))
        pieces = self._sentencepiece.tokenize(text)
        split = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(split_ids, is_split), tf.cast(is_split, tf.int64), validate=False)
        return segments, concat_rows([pieces, split])

    def tokenize(self, texts):
        """[B] strings → int32 RaggedTensor [B, (words), (pieces)].

        A word starts at each piece that begins with "▁" and at each special token
        typed in the text (its own word).
        """
        texts = tf.convert_to_tensor(texts, tf.string)
        segments, pieces = self._segment_pieces(texts)
        ids = pieces.flat_values
        positions = tf.range(tf.size(ids, out_type=tf.int64))
        row_starts = tf.gather(pieces.row_splits, pieces.value_rowids())
        starts = tf.logical_or(tf.gather(self._starts_word, ids), tf.equal(positions, row_starts))
        words = tf.RaggedTensor.from_row_starts(
            ids, tf.reshape(tf.where(starts), [-1]), validate=False)
        words_per_segment = row_sums(pieces.with_flat_values(tf.cast(starts, tf.int64)))
        words_per_text = row_sums(segments.with_flat_values(words_per_segment))
        return tf.RaggedTensor.from_row_lengths(words, words_per_text, validate=False)

    def word_pieces(self, words):
        """[N] words → int32 RaggedTensor [N, (pieces)], each word read as a word of running
        text ("▁word"); a word with no piece (empty, or only characters the normalizer
        drops) is the unknown token, so every word has one (transformers gives it none).
        """
        return super().word_pieces(words)

    # --- word starts ---

    # A piece begins a word at the start of a text and after whitespace (every word of
    # running text gets "▁"), not after punctuation glued to it.
    word_start_context = r"(?s)(|.*\s)"

    def word_start_pieces(self):
        """The pieces that begin with "▁", and the special and split tokens.

        >>> pieces = [("<s>", 0), ("<pad>", 0), ("</s>", 0), ("<unk>", 0), ("▁the", -1),
        ...           ("s", -2), ("<mask>", 0)]
        >>> SentencePieceTokenizer(unigram_model_proto(pieces, 3)).word_start_pieces().tolist()
        [True, True, True, True, True, False, True]
        """
        kept = set(self.split_tokens) | set(self.special_tokens.values())
        return np.array([token.startswith(WORD_START) or token in kept
                         for token in self.vocabulary], bool)

    def piece_text(self, token):
        """>>> pieces = [("<s>", 0), ("<pad>", 0), ("</s>", 0), ("<unk>", 0), ("▁a", -1)]
        >>> SentencePieceTokenizer(unigram_model_proto(pieces, 3)).piece_text("▁new▁york")
        'new york'
        """
        return token.replace(WORD_START, " ").lstrip(" ") if token.startswith(WORD_START) \
            else token.replace(WORD_START, " ")

    # --- serialization ---

    def get_config(self):
        return {"family": self.family, "lowercase": self.lowercase,
                "keep_accents": self.keep_accents, "special_tokens": dict(self.special_tokens),
                "split_tokens": list(self.split_tokens)}

    def save_assets(self, directory):
        write_binary_atomically(os.path.join(directory, self.ASSET_FILE),
                                lambda file: file.write(self._model))

    @classmethod
    def from_assets(cls, config, directory):
        config = dict(config)
        return cls(os.path.join(directory, cls.ASSET_FILE), config.pop("family", "xlm-roberta"),
                   **config)


def _precompiled_charsmap(content, path):
    """The charsmap of a tokenizer.json's `Precompiled` normalizer (b"" when none)."""
    normalizer = content.get("normalizer")
    stack = [normalizer] if normalizer else []
    while stack:
        item = stack.pop(0)
        if not isinstance(item, dict):
            continue
        if item.get("type") == "Sequence":
            stack = list(item.get("normalizers") or []) + stack
        elif item.get("type") == "Precompiled":
            try:
                return base64.b64decode(item.get("precompiled_charsmap") or "", validate=True)
            except (ValueError, TypeError):
                raise DataFormatError(f"{path}: the Precompiled normalizer's charsmap is not "
                                      "base64") from None
    return b""


def _read_json_object(path):
    """The JSON object in `path`, {} when there is no such file."""
    if not os.path.isfile(path):
        return {}
    return read_json_file(path, dict)


def _detect_family(directory, tokenizer_config, config):
    for source, key, table in (("tokenizer_config.json", "tokenizer_class", _TOKENIZER_CLASSES),
                               ("config.json", "model_type", _MODEL_TYPES)):
        name = (tokenizer_config if source == "tokenizer_config.json" else config).get(key)
        if name in table:
            return table[name]
    mask = tokenizer_config.get("mask_token")
    mask = mask.get("content") if isinstance(mask, dict) else mask
    for family, spec in FAMILIES.items():
        if mask == spec.mask or os.path.isfile(os.path.join(directory, spec.legacy_file)):
            return family
    raise DataFormatError(f"{directory}: cannot tell the tokenizer family (XLM-R, ALBERT or "
                          "DeBERTa-v3) from "
                          "tokenizer_config.json's tokenizer_class, config.json's model_type, "
                          "the mask token or a legacy .model file")
