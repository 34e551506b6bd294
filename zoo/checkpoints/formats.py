"""One entry point for every checkpoint format: detect, load the encoder and tokenizer.

Three local directory formats hold a pretrained BERT-family encoder:

- "native": ours, written by `save_encoder_checkpoint` (pretraining):
  `encoder.keras`, `vocab.txt`, `tokenizer_config.json`;
- "keras_hub": a KerasHub preset (`save_to_preset`) of a BERT, RoBERTa, XLM-R,
  DistilBERT, ALBERT or ELECTRA backbone: `config.json` naming a keras_hub
  class, `model.weights.h5`, `tokenizer.json`, `assets/tokenizer/` (the
  vocabulary, merges or SentencePiece model);
- "huggingface": a Hugging Face BERT directory: `config.json`,
  `model.safetensors`, `vocab.txt`, `tokenizer_config.json`.

`load_encoder(path)` and `load_tokenizer(path)` take any of them; the format
is told by the files (`checkpoint_format`); `zoo.load_pretrained(path, task)`
puts a task head on the loaded encoder. Each loader keeps the
checkpoint's numerics: an encoder imported from KerasHub uses KerasHub's tanh
GELU, one from Hugging Face the exact GELU.

Examples (a tiny encoder saved first; any of the three formats loads alike):
>>> import os, tempfile
>>> from nlpzoo.zoo import build_encoder
>>> from nlpzoo.zoo.checkpoints import save_encoder_checkpoint
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "is", "open", "##s"]
>>> encoder = build_encoder("bert_tiny", vocabulary_size=len(vocabulary))
>>> directory = os.path.join(tempfile.mkdtemp(), "checkpoint")
>>> save_encoder_checkpoint(encoder, directory, vocabulary, lowercase=True)
>>> checkpoint_format(directory)
'native'
>>> load_tokenizer(directory).tokenize_flat(["Café opens"]).to_list()
[[5, 7, 8]]
>>> load_encoder(directory).output["sequence_output"].shape
(None, None, 128)
"""

import logging
import math
import os

from nlpzoo.zoo.checkpoints import huggingface, keras_hub, native
from nlpzoo.zoo.checkpoints.common import checkpoint_directory

logger = logging.getLogger(__name__)

NATIVE, KERAS_HUB, HUGGINGFACE = "native", "keras_hub", "huggingface"
FORMATS = (NATIVE, KERAS_HUB, HUGGINGFACE)
# load_pretrained task → task preset suffix (`<encoder preset>_<suffix>`).
_SHAPE_FIELDS = ("num_layers", "hidden_dim", "num_heads", "intermediate_dim", "embedding_dim",
                 "share_layers", "norm_first")
# What tells the families apart (a RoBERTa checkpoint takes roberta_base's defaults).
_FAMILY_FIELDS = ("position_offset", "num_segments", "pooler_activation", "relative_attention",
                  "absolute_positions", "global_rope_theta", "gated_feedforward")
_LOOKED_FOR = (
    f"{native.ENCODER_FILE} (native, from save_encoder_checkpoint); "
    f"{keras_hub.CONFIG_FILE} naming a keras_hub class with {keras_hub.WEIGHTS_FILE} "
    f"(a KerasHub preset); {huggingface.CONFIG_FILE} with {huggingface.SAFETENSORS_FILE} "
    "(a Hugging Face BERT directory)"
)


def checkpoint_format(path):
    """"native", "keras_hub" or "huggingface": the format of a checkpoint directory.

    `encoder.keras` makes it native; a config.json naming a keras_hub class
    (`registered_name` "keras_hub>...") a KerasHub preset; any other
    config.json a Hugging Face directory (whose loader then says what is
    missing or unsupported).

    Raises:
        FileNotFoundError: `path` is not a directory.
        ValueError: none of the three; the message lists what was looked for
            and what the directory holds.
    """
    directory = checkpoint_directory(path)
    if native.is_native_checkpoint(directory):
        return NATIVE
    if keras_hub.is_keras_hub_preset(directory):
        return KERAS_HUB
    if os.path.isfile(os.path.join(directory, huggingface.CONFIG_FILE)):
        return HUGGINGFACE
    found = sorted(os.listdir(directory))
    listing = ", ".join(found[:20]) + (", ..." if len(found) > 20 else "") if found else "nothing"
    raise ValueError(f"{directory}: not a checkpoint directory of a known format; looked for "
                     f"{_LOOKED_FOR}; found {listing}")


def load_encoder(path, **overrides):
    """A zoo encoder with the weights of a checkpoint directory of any format.

    Args:
        path: a native, KerasHub or Hugging Face checkpoint directory
            (see `checkpoint_format`).
        **overrides: `build_encoder` fields that replace the checkpoint's,
            e.g. `dropout=0.0` or `max_sequence_length=128` (at most the
            checkpoint's); shape-changing overrides fail naming the weights.

    Returns:
        The `keras.Model` named "encoder" (inputs token_ids, segment_ids,
        padding_mask; outputs sequence_output, pooled_output, hidden_states),
        built under the current dtype policy.
    """
    loader = {
        NATIVE: native.load_native_encoder,
        KERAS_HUB: keras_hub.load_keras_hub_encoder,
        HUGGINGFACE: huggingface.load_hf_encoder,
    }[checkpoint_format(path)]
    return loader(checkpoint_directory(path), **overrides)


def read_tokenizer_settings(path):
    """(vocabulary tokens, lowercase) of a checkpoint directory whose tokenizer is WordPiece.

    See `load_tokenizer` for where they come from.

    Raises:
        ValueError: the checkpoint's tokenizer is not WordPiece (byte-level BPE,
            SentencePiece): `load_tokenizer` reads every kind.
    """
    from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer

    tokenizer = load_tokenizer(path)
    if not isinstance(tokenizer, WordPieceTokenizer):
        raise ValueError(f"{checkpoint_directory(path)}: its tokenizer is {tokenizer.kind}, "
                         "not WordPiece")
    return list(tokenizer.vocabulary), tokenizer.lowercase


def load_tokenizer(path):
    """The `SubwordTokenizer` of a checkpoint (or tokenizer) directory of any format.

    KerasHub presets: `tokenizer.json`'s class and settings and the assets
    in `assets/tokenizer/` (WordPiece, byte-level BPE or SentencePiece), with
    KerasHub's ids (`zoo.checkpoints.keras_hub.load_keras_hub_tokenizer`). Native and Hugging Face directories (a directory holding only
    tokenizer files too): `tokenizer.json`, or the legacy `vocab.txt` with
    `tokenizer_config.json`'s `do_lower_case`, `vocab.json` + `merges.txt`,
    or a SentencePiece model (`zoo.checkpoints.hf_tokenizers`). Its
    `encode(text, text_pair)` gives the ids transformers' `AutoTokenizer` gives.
    """
    from nlpzoo.zoo.checkpoints.hf_tokenizers import has_tokenizer_files, load_hf_tokenizer

    directory = checkpoint_directory(path)
    try:
        form = checkpoint_format(directory)
    except ValueError:
        if not has_tokenizer_files(directory):
            raise
        form = HUGGINGFACE  # tokenizer files alone
    if form == KERAS_HUB:
        return keras_hub.load_keras_hub_tokenizer(directory)
    return load_hf_tokenizer(directory)


def matching_encoder_preset(transformer):
    """The encoder preset of `transformer`'s family and shape, else the nearest: of the
    family, in width and depth."""
    from nlpzoo.zoo.presets import ENCODER_PRESETS

    fields = _SHAPE_FIELDS + _FAMILY_FIELDS
    shape = {field: getattr(transformer, field) for field in fields}
    for name, preset in ENCODER_PRESETS.items():
        preset_shape = {field: getattr(preset, field) for field in fields}
        preset_shape["embedding_dim"] = preset.embedding_dim or preset.hidden_dim
        if preset_shape == shape:
            return name

    def distance(name):
        preset = ENCODER_PRESETS[name]
        return (abs(math.log(preset.hidden_dim / transformer.hidden_dim))
                + 0.5 * abs(math.log(preset.num_layers / transformer.num_layers))
                + (preset.norm_first != transformer.norm_first)
                + (preset.share_layers != transformer.share_layers)
                + 2 * sum(getattr(preset, field) != getattr(transformer, field)
                          for field in _FAMILY_FIELDS))

    name = min(ENCODER_PRESETS, key=distance)
    logger.info("no encoder preset has the checkpoint's shape; using the defaults of %s", name)
    return name
