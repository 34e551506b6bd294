"""KerasHub presets (a local directory) ↔ our functional encoder.

A KerasHub preset directory, as written by `backbone.save_to_preset(dir)` and
`tokenizer.save_to_preset(dir)`, holds

    config.json                        the backbone class and its arguments
    model.weights.h5                   the backbone's weights (Keras HDF5 layout)
    metadata.json                      versions and parameter count
    tokenizer.json                     the tokenizer class and its arguments
    assets/tokenizer/...               vocabulary.txt (WordPiece), vocabulary.json +
                                       merges.txt (byte-level BPE), vocabulary.spm
                                       (SentencePiece)

Importing reads config.json and the HDF5 file directly (no KerasHub backbone is
built). The backbones KerasHub 0.32 has for the BERT family are read:
`BertBackbone`, `RobertaBackbone`, `XLMRobertaBackbone`, `DistilBertBackbone`,
`AlbertBackbone` and `ElectraBackbone`; what tells them apart (config fields,
the numerics KerasHub fixes in code, where each weight is saved) is one row of
`zoo.checkpoints.keras_hub_families`, and an imported encoder reproduces
KerasHub's outputs: its GELU form (tanh for BERT, ALBERT, ELECTRA; erf for
RoBERTa, XLM-R, DistilBERT), LayerNorm epsilon, positions from 0 and segments.
Every variable of the encoder is set, or import fails: a missing weight or one
of the wrong shape raises `ValueError` naming it (by its KerasHub variable path
and its place in model.weights.h5). A backbone without a pooler (RoBERTa,
XLM-R, DistilBERT) leaves ours freshly initialised (logged).

The tokenizer becomes our `SubwordTokenizer` of the same scheme, with
KerasHub's ids: `WordPieceTokenizer` (BERT, DistilBERT, ELECTRA),
`ByteLevelBpeTokenizer` (RoBERTa: KerasHub's special tokens are cut out of the
text as they are, without transformers' `lstrip` on `<mask>`) or
`SentencePieceTokenizer` (XLM-R with KerasHub's ids, which are fairseq's;
ALBERT with the model's ids and, as KerasHub, no lower-casing or accent
stripping of its own, where transformers' `AlbertTokenizer` does both).

Exporting (`export_keras_hub_preset`) builds a `keras_hub.models.BertBackbone`
and a `BertTokenizer`, copies the weights and saves both with KerasHub's own
`save_to_preset`, so `BertBackbone.from_preset(dir)` and
`BertTokenizer.from_preset(dir)` load the result. Only encoders BertBackbone
can represent are exported: post-LN (`norm_first=False`), no factorised
embeddings, no layer sharing, `layer_norm_epsilon=1e-12`. An encoder with exact
GELU (a Hugging Face import) is exported with a warning: the weights are
carried over, and KerasHub computes its tanh GELU with them.

Variable mapping (KerasHub path → ours; KerasHub keeps attention kernels per
head, [hidden, heads, head_dim] and [heads, head_dim, hidden], which are
reshaped to and from our [hidden, hidden] Dense kernels; the embeddings' names
are each family's, see `keras_hub_families`):

    token_embedding/embeddings              → embeddings/token_embedding
    position_embedding/embeddings           → embeddings/position_embedding
    segment_embedding/embeddings            → embeddings/segment_embedding
    embeddings_layer_norm                   → embeddings/layer_norm
    embedding(s)_projection                 → embeddings/projection (ALBERT, ELECTRA)
    transformer_layer_{i}/self_attention_layer/query (key, value)  → block_{i}/attention/query (...)
    transformer_layer_{i}/self_attention_layer/attention_output  → block_{i}/attention/output
    transformer_layer_{i}/self_attention_layer_norm              → block_{i}/attention_norm
    transformer_layer_{i}/feedforward_intermediate_dense         → block_{i}/intermediate
    transformer_layer_{i}/feedforward_output_dense               → block_{i}/output
    transformer_layer_{i}/feedforward_layer_norm                 → block_{i}/feedforward_norm
    pooled_dense                            → pooler

Examples:
>>> import os, tempfile
>>> from nlpzoo.zoo import build_encoder
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
>>> encoder = build_encoder("bert_tiny", vocabulary_size=len(vocabulary), num_layers=1,
...                         gelu_approximate=True)
>>> directory = os.path.join(tempfile.mkdtemp(), "preset")
>>> export_keras_hub_preset(encoder, directory, vocabulary, lowercase=True)
>>> read_keras_hub_config(directory)["gelu_approximate"]
True
>>> imported = load_keras_hub_encoder(directory)
>>> imported.transformer.num_layers
1
>>> tokenizer = load_keras_hub_tokenizer(directory)
>>> tokenizer.kind, tokenizer.encode("The cat")
('wordpiece', [2, 5, 6, 3])
"""

import json
import logging
import os

import numpy as np

from nlpzoo.tasks.io.atomic_files import write_directory_atomically
from nlpzoo.layers import transformer_of
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from nlpzoo.zoo.checkpoints.common import (
    PlannedWeight,
    WeightSource,
    assign_weights,
    encoder_arguments,
    load_checkpoint_encoder,
    read_json,
)
from nlpzoo.zoo.checkpoints.common import checkpoint_directory
from nlpzoo.zoo.checkpoints.keras_hub_families import (
    FAMILIES,
    family_for_backbone,
    family_for_tokenizer,
    saved_block_group,
    saved_layer_groups,
)

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
SHARDED_WEIGHTS_FILE = "model.weights.json"
TOKENIZER_FILE = "tokenizer.json"
ASSETS_DIRECTORY = os.path.join("assets", "tokenizer")
VOCABULARY_FILE = os.path.join(ASSETS_DIRECTORY, "vocabulary.txt")
BPE_VOCABULARY_FILE = os.path.join(ASSETS_DIRECTORY, "vocabulary.json")
MERGES_FILE = os.path.join(ASSETS_DIRECTORY, "merges.txt")
SENTENCEPIECE_FILE = os.path.join(ASSETS_DIRECTORY, "vocabulary.spm")
DIRECTORY_KIND = "a KerasHub preset directory"

# KerasHub's BertBackbone fixes these; an encoder must match them to be exported.
KERAS_HUB_LAYER_NORM_EPSILON = 1e-12
_BERT = FAMILIES["BertBackbone"]

# Fields of a Keras layer config that do not change the computation.
_IGNORED_FIELDS = ("name", "trainable", "dtype")
# ALBERT's layer groups (`KerasHubFamily.layer_groups`).
_GROUP_FIELDS = ("num_groups", "num_inner_repetitions")
# WordPiece settings WordPieceTokenizer always has: field → (value, meaning).
_TOKENIZER_FIXED = {
    "split": (True, "WordPieceTokenizer always splits on whitespace and punctuation"),
    "split_on_cjk": (True, "WordPieceTokenizer always splits CJK characters"),
    "suffix_indicator": ("##", "WordPieceTokenizer marks word continuations with ##"),
    "oov_token": ("[UNK]", "WordPieceTokenizer's unknown token is [UNK]"),
}
_KERAS_HUB_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
# The special tokens KerasHub's RobertaTokenizer cuts out of the text.
_ROBERTA_SPECIAL_TOKENS = ("<s>", "</s>", "<pad>", "<mask>")


def _is_keras_hub_object(config):
    if not isinstance(config, dict):
        return False
    registered = str(config.get("registered_name") or "")
    module = str(config.get("module") or "")
    return registered.startswith("keras_hub>") or module.startswith(("keras_hub.", "keras_nlp."))


def is_keras_hub_preset(path):
    """Whether `path` is a directory whose config.json names a KerasHub class."""
    config_path = os.path.join(os.fspath(path), CONFIG_FILE)
    if not os.path.isfile(config_path):
        return False
    try:
        with open(config_path, encoding="utf-8") as f:
            return _is_keras_hub_object(json.load(f))
    except (OSError, ValueError):
        return False


def _read_backbone_config(path):
    """(family, the backbone's config fields, config.json's path) of a preset."""
    config_path = os.path.join(checkpoint_directory(path), CONFIG_FILE)
    saved = read_json(config_path, CONFIG_FILE, DIRECTORY_KIND)
    if not _is_keras_hub_object(saved):
        raise ValueError(f"{config_path}: not a KerasHub preset config (no 'registered_name' "
                         "or 'module' naming keras_hub)")
    try:
        family = family_for_backbone(saved.get("class_name"))
    except ValueError as error:
        raise ValueError(f"{config_path}: {error}") from None
    fields = saved.get("config")
    if not isinstance(fields, dict):
        raise ValueError(f"{config_path}: the field 'config' (the backbone's arguments) is "
                         "missing")
    return family, fields, config_path


def _layer_sharing(fields, num_layers, where):
    """`share_layers` from ALBERT's `num_groups` and `num_inner_repetitions`."""
    groups = fields.get("num_groups", 1)
    repetitions = fields.get("num_inner_repetitions", 1)
    if repetitions != 1:
        raise ValueError(f"{where}: num_inner_repetitions={repetitions!r} is not supported "
                         "(only 1: one block per group)")
    if groups == 1:
        return True
    if groups == num_layers:
        return False
    raise ValueError(f"{where}: num_groups={groups!r} with num_layers={num_layers} is not "
                     "supported: only 1 group (every layer shares one block) or one group per "
                     "layer")


def read_keras_hub_config(path):
    """Reads a KerasHub preset's config.json into `build_encoder` overrides.

    Returns:
        A dict of encoder fields: the shape (`vocabulary_size`, `num_layers`,
        `num_heads`, `hidden_dim`, `intermediate_dim`, `max_sequence_length`;
        `num_segments`, `embedding_dim` where the backbone has them), the
        dropout rates, and the numerics the backbone fixes in code
        (`gelu_approximate`, `layer_norm_epsilon`, positions from 0, segments,
        layer sharing, the pooler's activation; `keras_hub_families`).

    Raises:
        ValueError: the backbone is not one of `keras_hub_families.SUPPORTED_BACKBONES` (the
            message names config.json's `class_name`), a required field is
            missing, or a field this importer does not know is set (named).
    """
    family, fields, config_path = _read_backbone_config(path)
    harmless = _IGNORED_FIELDS + (_GROUP_FIELDS if family.layer_groups else ())
    encoder_config = encoder_arguments(fields, family.config_fields, config_path,
                                       harmless_fields=harmless)
    encoder_config["attention_dropout"] = encoder_config["dropout"]  # KerasHub uses one rate
    encoder_config.update(family.settings)
    for argument, source in family.fallbacks:  # fixed now: a shorter override keeps it
        encoder_config[argument] = encoder_config[source]
    if family.layer_groups:
        encoder_config["share_layers"] = _layer_sharing(
            fields, encoder_config["num_layers"], config_path)
    if (family.projection_always
            and encoder_config.get("embedding_dim") == encoder_config["hidden_dim"]):
        raise ValueError(f"{config_path}: embedding_dim equals hidden_dim "
                         f"({encoder_config['hidden_dim']}): {family.backbone} projects its "
                         "embeddings even then, and this encoder projects only between "
                         "different widths")
    return encoder_config


def _weight_plan(transformer, family=_BERT):
    """(KerasHub variable path, `PlannedWeight`) per encoder variable, for `family`.

    The planned weight is read from the dataset "<group>/vars/<index>" of
    model.weights.h5, with KerasHub's shape; its `to_variable` reshapes it
    to ours, and exporting reshapes ours to `source_shape`.

    Raises:
        ValueError: the encoder has a setting the backbone cannot hold (named).
    """
    hidden, heads = transformer.hidden_dim, transformer.num_heads
    head_dim = hidden // heads
    embeddings = transformer.embeddings
    roles = {layer.role for layer in family.layers}
    if transformer.norm_first:
        raise ValueError(f"norm_first=True: {family.backbone} is post-LN (norm_first=False)")
    if transformer.share_layers and not family.layer_groups:
        raise ValueError(f"share_layers=True: {family.backbone} has no cross-layer sharing")
    if embeddings.projection is not None and "projection" not in roles:
        raise ValueError(f"embedding_dim={transformer.embedding_dim} differs from hidden_dim="
                         f"{hidden}: {family.backbone} has no factorised embeddings")
    if embeddings.projection is None and family.projection_always:
        raise ValueError(f"embedding_dim={transformer.embedding_dim} equals hidden_dim: "
                         f"{family.backbone} always projects its embeddings")
    if transformer.position_offset:
        raise ValueError(f"position_offset={transformer.position_offset}: {family.backbone}'s "
                         "positions start at 0")
    relative = family.settings.get("relative_attention")
    if (transformer.relative_attention != relative
            or transformer.absolute_positions != ("position" in roles)):
        raise ValueError(f"relative_attention={transformer.relative_attention!r}, "
                         f"absolute_positions={transformer.absolute_positions}: "
                         f"{family.backbone} has " + (
                             "learned absolute positions only" if relative is None
                             else f"{relative} relative attention and no absolute positions"))
    if relative is not None and transformer.position_buckets < 1:
        raise ValueError(f"position_buckets={transformer.position_buckets}: {family.backbone} "
                         "always puts distances into log buckets (bucket_size)")
    if (transformer.num_segments == 0) != ("segment" not in roles):
        raise ValueError(f"num_segments={transformer.num_segments}: {family.backbone} "
                         + ("has no segment table" if "segment" not in roles
                            else "has a segment table"))
    present = {"token", "position", "segment", "norm", "pooler", "relative"}
    if embeddings.projection is not None:
        present.add("projection")
    groups = saved_layer_groups(family, present)
    layer_paths = {layer.role: layer.path for layer in family.layers}
    plan = []

    def add(name, group, index, variable, shape=None):
        key = f"{group}/vars/{index}"
        planned = PlannedWeight(
            variable, (key,), tuple(variable.shape) if shape is None else shape,
            to_variable=lambda value, target=tuple(variable.shape): value.reshape(target),
            label=f"{name} ({WEIGHTS_FILE}: {key})",
            position_table=name == f"{layer_paths.get('position')}/embeddings")
        plan.append((name, planned))

    def dense(name, group, layer, kernel_shape=None, bias_shape=None):
        add(f"{name}/kernel", group, 0, layer.kernel, kernel_shape)
        add(f"{name}/bias", group, 1, layer.bias, bias_shape)

    def layer_norm(name, group, layer):
        add(f"{name}/gamma", group, 0, layer.gamma)
        add(f"{name}/beta", group, 1, layer.beta)

    tables = {"token": embeddings.token_embedding, "position": embeddings.position_embedding,
              "segment": embeddings.segment_embedding}
    for role, table in tables.items():
        if role in groups and table is not None:
            add(f"{layer_paths[role]}/embeddings", groups[role], 0, table.embeddings)
    layer_norm(layer_paths["norm"], groups["norm"], embeddings.layer_norm)
    if "projection" in groups:
        dense(layer_paths["projection"], groups["projection"], embeddings.projection)
    if "relative" in groups:  # DeBERTa-v3's table of relative embeddings and its LayerNorm
        relative = transformer.relative_embeddings
        add(f"{layer_paths['relative']}/rel_embedding", groups["relative"], 0,
            relative.table.embeddings)
        layer_norm(f"{layer_paths['relative']}/rel_embeddings_layer_norm",
                   f"{groups['relative']}/layer_norm", relative.layer_norm)
    output_shape = ((heads, head_dim, hidden) if family.output_per_head
                    else (hidden, hidden))
    for index, block in enumerate(transformer.blocks):
        name = family.block_label(index)
        group = saved_block_group(index, family.saved_block)
        attention = block.attention
        parts = dict(family.attention_parts)
        for part, layer in (("query", attention.query_dense), ("key", attention.key_dense),
                            ("value", attention.value_dense)):
            dense(f"{name}/self_attention_layer/{part}",
                  f"{group}/_self_attention_layer/{parts[part]}", layer,
                  (hidden, heads, head_dim), (heads, head_dim))
        dense(f"{name}/self_attention_layer/attention_output",
              f"{group}/_self_attention_layer/{parts['attention_output']}",
              attention.output_dense, output_shape)
        layer_norm(f"{name}/self_attention_layer_norm", f"{group}/_self_attention_layer_norm",
                   block.attention_norm)
        dense(f"{name}/feedforward_intermediate_dense",
              f"{group}/_feedforward_intermediate_dense", block.intermediate_dense)
        dense(f"{name}/feedforward_output_dense", f"{group}/_feedforward_output_dense",
              block.output_dense)
        layer_norm(f"{name}/feedforward_layer_norm", f"{group}/_feedforward_layer_norm",
                   block.feedforward_norm)
    if "pooler" in groups:
        dense(layer_paths["pooler"], groups["pooler"], transformer.pooler)
    return plan


def _h5_value(dataset):
    if dataset.attrs.get("dtype") == "bfloat16":  # as Keras writes bfloat16 variables
        import ml_dtypes

        return np.array(dataset, dtype=ml_dtypes.bfloat16)
    return np.asarray(dataset[()])


def read_keras_hub_weights(path):
    """Every weight in a preset's model.weights.h5, by "group/vars/index", as numpy arrays."""
    import h5py

    directory = checkpoint_directory(path)
    file = os.path.join(directory, WEIGHTS_FILE)
    if not os.path.isfile(file):
        if os.path.isfile(os.path.join(directory, SHARDED_WEIGHTS_FILE)):
            raise ValueError(f"{directory}: sharded weights ({SHARDED_WEIGHTS_FILE}) are not "
                             "supported; save the backbone unsharded (save_to_preset without "
                             "max_shard_size)")
        raise FileNotFoundError(f"{directory}: no {WEIGHTS_FILE} (is this a KerasHub preset "
                                "directory written by save_to_preset?)")
    weights = {}
    with h5py.File(file, "r") as h5:
        def visit(name, item):
            if isinstance(item, h5py.Dataset):
                weights[name] = _h5_value(item)
        h5.visititems(visit)
    return weights


def load_keras_hub_weights(encoder, path, weights=None):
    """Sets every variable of `encoder` from a KerasHub preset (any backbone of
    `keras_hub_families`).

    Args:
        encoder: a zoo encoder (or its `TransformerEncoder` layer) with the
            preset's shape; a smaller `max_sequence_length` keeps the first
            positions.
        path: the preset directory (its config.json names the backbone).
        weights: `read_keras_hub_weights(path)` if already read.

    Returns:
        The sorted names of datasets in model.weights.h5 that were not used.

    Raises:
        ValueError: a weight is missing or has the wrong shape; the message
            names it (KerasHub variable path and HDF5 dataset) with both
            shapes in KerasHub's layout. Nothing is assigned then.
    """
    directory = checkpoint_directory(path)
    family, _, _ = _read_backbone_config(directory)
    transformer = transformer_of(encoder)
    if weights is None:
        weights = read_keras_hub_weights(directory)
    plan = [planned for _, planned in _weight_plan(transformer, family)]
    unused = assign_weights(plan, weights, WeightSource(directory, kind="preset"))
    if family.pooler is None:
        logger.info("%s: %s has no pooler; the encoder's pooler starts at random",
                    directory, family.backbone)
    return unused


def load_keras_hub_encoder(path, **overrides):
    """Our functional encoder with the weights of a KerasHub preset.

    Args:
        path: a local KerasHub preset directory (config.json naming one of
            `keras_hub_families.SUPPORTED_BACKBONES`, model.weights.h5).
        **overrides: `build_encoder` fields that replace the preset's, e.g.
            `dropout=0.0` or `max_sequence_length=128` (at most the preset's).
            Changing `gelu_approximate` or `layer_norm_epsilon` would not
            reproduce KerasHub.

    Returns:
        The `keras.Model` named "encoder" from `zoo.build_encoder`, with the
        backbone's numerics, built under the current dtype policy.
    """
    return load_checkpoint_encoder(path, overrides, read_keras_hub_config,
                                   read_keras_hub_weights, load_keras_hub_weights)


def _read_tokenizer_config(path):
    """(family, tokenizer.json's `config`, its path, the directory) of a preset."""
    directory = checkpoint_directory(path)
    config_path = os.path.join(directory, TOKENIZER_FILE)
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"{config_path}: no {TOKENIZER_FILE}; save the tokenizer too, "
                                "with tokenizer.save_to_preset(directory)")
    saved = read_json(config_path, TOKENIZER_FILE, DIRECTORY_KIND)
    try:
        family = family_for_tokenizer(saved.get("class_name"))
    except ValueError as error:
        raise ValueError(f"{config_path}: {error}") from None
    config = saved.get("config") or {}
    if not isinstance(config, dict):
        raise ValueError(f"{config_path}: the field 'config' is not a JSON object")
    return family, config, config_path, directory


def _asset(directory, name, config_path):
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file; {config_path} names a tokenizer whose "
                                f"assets are saved there (tokenizer.save_to_preset)")
    return path


def read_keras_hub_tokenizer(path):
    """(vocabulary, lowercase) of a KerasHub preset's WordPiece tokenizer.

    Reads tokenizer.json (`BertTokenizer`, `DistilBertTokenizer`,
    `ElectraTokenizer`, `WordPieceTokenizer`) and
    assets/tokenizer/vocabulary.txt. Settings `WordPieceTokenizer` cannot
    reproduce (split, split_on_cjk, suffix_indicator, oov_token other than
    BERT's) raise `ValueError` naming the field; so does a tokenizer of
    another scheme (`load_keras_hub_tokenizer` reads every kind). KerasHub's
    `strip_accents` defaults to False even for lower-cased vocabularies, where
    `WordPieceTokenizer` (like BERT) strips accents whenever it lower-cases;
    that difference is logged as a warning, not refused: stripping maps
    "café" to "cafe" where KerasHub gives [UNK].
    """
    from nlpzoo.tasks.text.tokenizer import read_vocabulary

    family, config, config_path, directory = _read_tokenizer_config(path)
    if family.tokenizer != "wordpiece":
        raise ValueError(f"{config_path}: a {family.tokenizer} tokenizer, not WordPiece; "
                         "load_keras_hub_tokenizer reads it")
    for field, (value, reason) in _TOKENIZER_FIXED.items():
        if field in config and config[field] != value:
            raise ValueError(f"{config_path}: {field}={config[field]!r} is not supported: "
                             f"{reason}")
    lowercase = bool(config.get("lowercase", False))
    strip_accents = bool(config.get("strip_accents", False))
    if strip_accents != lowercase:
        logger.warning(
            "%s: strip_accents=%s with lowercase=%s; WordPieceTokenizer strips accents exactly "
            "when it lower-cases (as BERT does), so accented words may tokenize differently "
            "from KerasHub", config_path, strip_accents, lowercase)
    vocabulary = config.get("vocabulary")
    if isinstance(vocabulary, list):
        tokens = [str(token) for token in vocabulary]
    else:
        tokens = read_vocabulary(_asset(directory, VOCABULARY_FILE, config_path))
    return tokens, lowercase


def _wordpiece_tokenizer(path, family, config, config_path, directory):
    tokens, lowercase = read_keras_hub_tokenizer(path)
    return WordPieceTokenizer(tokens, lowercase=lowercase)


def _byte_pair_tokenizer(path, family, config, config_path, directory):
    """KerasHub's `RobertaTokenizer`: vocabulary.json + merges.txt; its
    `unsplittable_tokens` are cut out of the text as they are (no `lstrip`)."""
    from nlpzoo.tasks.text.byte_pair_tokenizer import (
        ByteLevelBpeTokenizer, read_merges, read_vocab_json)

    vocabulary = config.get("vocabulary")
    merges = config.get("merges")
    if not isinstance(vocabulary, dict):
        vocabulary = read_vocab_json(_asset(directory, BPE_VOCABULARY_FILE, config_path))
    if not isinstance(merges, list):
        merges = read_merges(_asset(directory, MERGES_FILE, config_path))
    else:
        merges = [merge for merge in merges if not str(merge).startswith("#version")]
    unsplittable = config.get("unsplittable_tokens") or list(_ROBERTA_SPECIAL_TOKENS)
    return ByteLevelBpeTokenizer(
        vocabulary, merges, [{"content": str(token)} for token in unsplittable],
        add_prefix_space=bool(config.get("add_prefix_space", False)))


def _sentencepiece_tokenizer(path, family, config, config_path, directory):
    """KerasHub's `XLMRobertaTokenizer` (fairseq's ids: `<s>` 0, `<pad>` 1, `</s>` 2,
    `<unk>` 3, piece i at i + 1, `<mask>` last) or `AlbertTokenizer` (the model's
    ids), from assets/tokenizer/vocabulary.spm. The text is given to the model as
    it is (KerasHub adds no lower-casing or accent stripping)."""
    from nlpzoo.tasks.text.sentence_piece_tokenizer import SentencePieceTokenizer

    if config.get("proto") not in (None, ""):
        raise ValueError(f"{config_path}: an inline 'proto' is not supported; save the "
                         "tokenizer with save_to_preset (its model is an asset)")
    if config.get("add_bos") or config.get("add_eos"):
        raise ValueError(f"{config_path}: add_bos/add_eos=True is not supported (the packer "
                         "adds the special tokens)")
    return SentencePieceTokenizer.from_sentencepiece_model(
        _asset(directory, SENTENCEPIECE_FILE, config_path), family.sentencepiece_family,
        lowercase=False, keep_accents=True)


_TOKENIZER_READERS = {"wordpiece": _wordpiece_tokenizer, "byte_pair": _byte_pair_tokenizer,
                      "sentencepiece": _sentencepiece_tokenizer}


def load_keras_hub_tokenizer(path):
    """The `SubwordTokenizer` of a KerasHub preset, with KerasHub's ids.

    A `WordPieceTokenizer` (see `read_keras_hub_tokenizer`), a
    `ByteLevelBpeTokenizer` (RoBERTa: assets/tokenizer/vocabulary.json and
    merges.txt) or a `SentencePieceTokenizer` (XLM-R, ALBERT:
    assets/tokenizer/vocabulary.spm), as tokenizer.json's class says.

    Raises:
        ValueError: an unknown tokenizer class or a setting that cannot be
            reproduced (named).
        FileNotFoundError: tokenizer.json or an asset is missing (named).
    """
    family, config, config_path, directory = _read_tokenizer_config(path)
    return _TOKENIZER_READERS[family.tokenizer](path, family, config, config_path, directory)


def export_keras_hub_preset(encoder, directory, vocabulary, lowercase, overwrite=False):
    """Writes `encoder` and its tokenizer as a KerasHub BertBackbone preset directory.

    `keras_hub.models.BertBackbone.from_preset(directory)` and
    `keras_hub.models.BertTokenizer.from_preset(directory)` load the result.
    The directory is written atomically (a temporary sibling, then a rename).

    Args:
        encoder: a zoo encoder (or its `TransformerEncoder` layer).
        directory: the preset directory to create.
        vocabulary: the WordPiece tokens (id = position), as many as the
            encoder's `vocabulary_size`, including [CLS], [SEP], [PAD], [MASK]
            and [UNK] (KerasHub's BertTokenizer needs all five).
        lowercase: whether the tokenizer lower-cases; accents are stripped
            exactly when it does, as our `WordPieceTokenizer` does.
        overwrite: replace an existing non-empty `directory`.

    LoRA updates are exported merged into the kernels they update.

    Raises:
        ValueError: the encoder has a setting BertBackbone cannot represent
            (`norm_first`, `embedding_dim`, `share_layers`,
            `layer_norm_epsilon`, adapters; named), the vocabulary does not fit, or the
            directory exists and is not empty (without `overwrite`).
    """
    import keras
    import keras_hub

    from nlpzoo.zoo.checkpoints.native import as_functional_encoder, check_vocabulary

    transformer = transformer_of(as_functional_encoder(encoder))
    if transformer.adapter_size:
        raise ValueError(f"the encoder has adapters (adapter_size={transformer.adapter_size}), "
                         "which BertBackbone cannot represent")
    if transformer.layer_norm_epsilon != KERAS_HUB_LAYER_NORM_EPSILON:
        raise ValueError(f"layer_norm_epsilon={transformer.layer_norm_epsilon:g}: BertBackbone "
                         f"always uses {KERAS_HUB_LAYER_NORM_EPSILON:g}")
    if transformer.position_offset or transformer.num_segments < 2:
        raise ValueError(
            f"position_offset={transformer.position_offset}, num_segments="
            f"{transformer.num_segments} (RoBERTa, DistilBERT): BertBackbone's positions start "
            "at 0 and it has a segment table; export a Hugging Face checkpoint instead")
    plan = _weight_plan(transformer, _BERT)  # refuses norm_first, embedding_dim, share_layers
    tokens = check_vocabulary(vocabulary, transformer)
    missing = [token for token in _KERAS_HUB_SPECIAL_TOKENS if token not in tokens]
    if missing:
        raise ValueError(f"the vocabulary lacks {missing}, which KerasHub's BertTokenizer needs")
    if not transformer.gelu_approximate:
        logger.warning("the encoder uses exact GELU (gelu_approximate=False); KerasHub's "
                       "BertBackbone always applies the tanh approximation, so its outputs "
                       "will differ slightly (typically ~1e-3) from this encoder's")
    if transformer.attention_dropout != transformer.dropout:
        logger.warning("attention_dropout=%g differs from dropout=%g; BertBackbone uses "
                       "dropout for both (this only matters when training)",
                       transformer.attention_dropout, transformer.dropout)

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=transformer.vocabulary_size,
        num_layers=transformer.num_layers,
        num_heads=transformer.num_heads,
        hidden_dim=transformer.hidden_dim,
        intermediate_dim=transformer.intermediate_dim,
        dropout=transformer.dropout,
        max_sequence_length=transformer.max_sequence_length,
        num_segments=transformer.num_segments,
        dtype="float32",
    )
    variables = {variable.path: variable for variable in backbone.weights}
    unassigned = set(variables)
    for name, planned in plan:
        target = variables.get(name)
        if target is None:
            raise ValueError(f"this keras_hub's BertBackbone has no variable {name!r}; "
                             "the installed KerasHub version is not supported")
        value = np.asarray(keras.ops.convert_to_numpy(planned.variable), dtype="float32")
        target.assign(value.reshape(planned.source_shape))
        unassigned.discard(name)
    if unassigned:
        raise ValueError(f"this keras_hub's BertBackbone has variables with no counterpart "
                         f"here: {', '.join(sorted(unassigned))}")
    tokenizer = keras_hub.models.BertTokenizer(
        vocabulary=tokens, lowercase=bool(lowercase), strip_accents=bool(lowercase))

    def write(temporary):
        backbone.save_to_preset(temporary)
        tokenizer.save_to_preset(temporary)

    write_directory_atomically(directory, write, overwrite=overwrite)
