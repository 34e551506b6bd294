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
`AlbertBackbone`, `ElectraBackbone` and `DebertaV3Backbone`; what tells them
apart (config fields, the numerics KerasHub fixes in code, where each weight is
saved) is one row of `zoo.checkpoints.keras_hub_families`, and an imported
encoder reproduces KerasHub's outputs: its GELU form (tanh for BERT, ALBERT,
ELECTRA; erf for RoBERTa, XLM-R, DistilBERT, DeBERTa-v3), LayerNorm epsilon,
positions from 0 and segments. Every variable of the encoder is set, or import
fails: a missing weight or one of the wrong shape raises `ValueError` naming it
(by its KerasHub variable path and its place in model.weights.h5). A backbone without a pooler (RoBERTa,
XLM-R, DistilBERT, DeBERTa-v3) leaves ours freshly initialised (logged).

The tokenizer becomes our `SubwordTokenizer` of the same scheme, with
KerasHub's ids: `WordPieceTokenizer` (BERT, DistilBERT, ELECTRA),
`ByteLevelBpeTokenizer` (RoBERTa: KerasHub's special tokens are cut out of the
text as they are, without transformers' `lstrip` on `<mask>`) or
`SentencePieceTokenizer` (XLM-R with KerasHub's ids, which are fairseq's;
ALBERT with the model's ids and, as KerasHub, no lower-casing or accent
stripping of its own, where transformers' `AlbertTokenizer` does both).

Exporting (`export_keras_hub_preset`) writes the backbone of the row that holds
the encoder with its tokenizer (`keras_hub_export_family`: the tokenizer's kind
and, for SentencePiece, its family narrow the rows; the encoder's segments,
embedding projection, layer sharing and relative attention pick among them; of
those left, one with the encoder's LayerNorm epsilon and GELU form): it builds
that KerasHub backbone and tokenizer (WordPiece vocabulary; BPE vocabulary and
merges; the SentencePiece model with its own ids,
`SentencePieceTokenizer.legacy_model`), sets every backbone variable by the
import's plan read backwards (a variable left unset fails the export, naming
it), checks that KerasHub's tokenizer numbers the tokens as ours, and saves both
with KerasHub's own `save_to_preset`, so
`keras_hub.models.<Family>Backbone.from_preset(dir)` and the tokenizer's
`from_preset` load the result. Positions offset by
`position_offset` (RoBERTa, XLM-R) lose their first rows, as KerasHub's
converter drops them; a single segment row is added to the position table of a
backbone without segments (or written as both rows of one with): both exact.
DeBERTa-v3's `max_sequence_length` is written as the encoder's
`max_relative_positions`, which is what KerasHub's backbone uses it for (it has no
position table), and read back as both.
Refused in one line: what no KerasHub backbone holds (pre-LN, rotary positions,
local attention, gated feedforward, no biases, a pooler LayerNorm: ModernBERT;
adapters), a layout no row of the tokenizer's kind has (segments with a BPE
tokenizer), and a LayerNorm epsilon other than the backbone's. Warned about,
as the weights still carry over: a GELU form other than the backbone's (~1e-3
differences), a pooler activation other than its pooled_output's tanh,
SentencePiece lower-casing or accent stripping, which KerasHub's tokenizers do
not do, and KerasHub's single dropout rate.

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
'BertBackbone'
>>> read_keras_hub_config(directory)["gelu_approximate"]
True
>>> imported = load_keras_hub_encoder(directory)
>>> imported.transformer.num_layers
1
>>> tokenizer = load_keras_hub_tokenizer(directory)
>>> tokenizer.kind, tokenizer.encode("The cat")
('wordpiece', [2, 5, 6, 3])
"""

import logging
import os

import numpy as np

from nlpzoo.tasks.io.atomic_files import write_directory_atomically
from nlpzoo.tasks.io.json_text import read_json_file
from nlpzoo.layers import architecture_defaults, transformer_of
from nlpzoo.tasks.text.subword_tokenizer import SubwordTokenizer
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

_BERT = FAMILIES["BertBackbone"]
# Block options every KerasHub backbone here has at `architecture_defaults()` (post-LN
# BERT blocks with biases, absolute or relative positions, no pooler LayerNorm).
_POST_LN_BLOCK_OPTIONS = ("global_rope_theta", "local_attention", "gated_feedforward",
                          "use_bias", "first_attention_norm", "pooler_norm")
# Our tokenizer's special ids → the attribute of KerasHub's tokenizers holding theirs.
_SPECIAL_ID_ATTRIBUTES = {"pad": "pad_token_id", "cls": "start_token_id",
                          "sep": "end_token_id", "mask": "mask_token_id"}

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
        return _is_keras_hub_object(read_json_file(config_path))
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


def _check_layout(transformer, family, exporting=False):
    """Raises `ValueError` (one line, naming the setting) when `family`'s backbone
    cannot hold the encoder's layout.

    Importing builds the encoder from the preset, so only overrides can fail here.
    Exporting also refuses what no KerasHub backbone has (rotary positions, local
    attention, gated feedforward, no biases, a pooler LayerNorm) and allows what is
    exported exactly in another form: positions offset by `position_offset` (the
    first rows are dropped, as KerasHub's RoBERTa converter drops them) and one
    segment row (added to the position table of a backbone without segments, or
    written twice to one with).
    """
    roles = {layer.role for layer in family.layers}
    embeddings = transformer.embeddings
    hidden = transformer.hidden_dim
    if exporting:
        defaults = architecture_defaults()
        for name in _POST_LN_BLOCK_OPTIONS:
            if name == "pooler_norm" and family.pooler is None:
                continue  # the pooler is not exported
            if getattr(transformer, name) != defaults[name]:
                raise ValueError(f"{name}={getattr(transformer, name)!r}: {family.backbone} "
                                 f"has {name}={defaults[name]!r} (post-LN BERT blocks)")
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
    if transformer.position_offset and not exporting:
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
    segments = transformer.num_segments
    if "segment" in roles:
        if segments == 0:
            raise ValueError(f"num_segments=0: {family.backbone} has a segment table")
    elif segments > (1 if exporting and "position" in roles else 0):
        raise ValueError(f"num_segments={segments}: {family.backbone} has no segment table")


def _weight_plan(transformer, family=_BERT, exporting=False):
    """(KerasHub variable path, `PlannedWeight`) per encoder variable, for `family`.

    The planned weight is read from the dataset "<group>/vars/<index>" of
    model.weights.h5, with KerasHub's shape; its `to_variable` reshapes it
    to ours, and exporting reshapes ours to `source_shape` (`_export_values`).

    Raises:
        ValueError: the encoder has a setting the backbone cannot hold (named;
            `_check_layout`).
    """
    hidden, heads = transformer.hidden_dim, transformer.num_heads
    head_dim = hidden // heads
    embeddings = transformer.embeddings
    _check_layout(transformer, family, exporting)
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


def _export_values(transformer, family, plan):
    """{KerasHub variable path: numpy value in KerasHub's layout} of `plan`.

    The position table loses its first `position_offset` rows (KerasHub's
    positions start at 0); one segment row is added to every position of a
    backbone without a segment table, or written as both rows of one with
    (both exact: our encoder adds that row to every token).
    """
    import keras

    layer_paths = {layer.role: layer.path for layer in family.layers}
    segment_path = f"{layer_paths.get('segment')}/embeddings"
    embeddings = transformer.embeddings
    fold = (transformer.num_segments == 1 and "segment" not in layer_paths)
    values = {}
    for name, planned in plan:
        value = np.asarray(keras.ops.convert_to_numpy(planned.variable), dtype="float32")
        if planned.position_table:
            value = value[transformer.position_offset:]
            if fold:
                value = value + np.asarray(keras.ops.convert_to_numpy(
                    embeddings.segment_embedding.embeddings), dtype="float32")
        elif name == segment_path and transformer.num_segments == 1:
            value = np.repeat(value, 2, axis=0)  # KerasHub's packers give pairs segment 1
        else:
            value = value.reshape(planned.source_shape)
        values[name] = value
    return values


def _backbone_arguments(transformer, family):
    """The backbone's constructor arguments (config.json's `config`) for `transformer`:
    each config field from the encoder argument it is read into, or, for an argument
    that takes its value from another on import (`family.fallbacks`: DeBERTa-v3's
    `max_sequence_length` is its `max_relative_positions`), from that one; an argument
    with a default resolved by the encoder is read from where the row says it is
    resolved (`family.resolved_attributes`)."""
    arguments = {}
    fallbacks = {source: argument for argument, source in family.fallbacks}
    resolved = dict(family.resolved_attributes)
    for field, (argument, _) in family.config_fields.items():
        argument = fallbacks.get(argument, argument)
        arguments[field] = getattr(transformer, resolved.get(argument, argument))
    if "num_segments" in arguments and transformer.num_segments == 1:
        arguments["num_segments"] = 2  # the one row twice (`_export_values`)
    if family.layer_groups:
        arguments.update(num_groups=1 if transformer.share_layers else transformer.num_layers,
                         num_inner_repetitions=1)
    return arguments


def _check_numerics(transformer, family):
    """Refuses what the backbone fixes in code and changes its outputs everywhere (the
    LayerNorm epsilon); warns about what it changes slightly or only in one output."""
    settings = family.settings
    if transformer.layer_norm_epsilon != settings["layer_norm_epsilon"]:
        raise ValueError(f"layer_norm_epsilon={transformer.layer_norm_epsilon:g}: "
                         f"{family.backbone} always uses {settings['layer_norm_epsilon']:g}")
    if transformer.gelu_approximate != settings["gelu_approximate"]:
        forms = {True: "the tanh approximation of GELU", False: "exact (erf) GELU"}
        logger.warning("the encoder uses %s (gelu_approximate=%s); KerasHub's %s always "
                       "applies %s, so its outputs will differ slightly (typically ~1e-3) "
                       "from this encoder's", forms[transformer.gelu_approximate],
                       transformer.gelu_approximate, family.backbone,
                       forms[settings["gelu_approximate"]])
    if family.pooler is None:
        logger.info("%s has no pooler: the encoder's pooler is not exported", family.backbone)
    elif transformer.pooler_activation != settings["pooler_activation"]:
        logger.warning("pooler_activation=%r: KerasHub's %s applies %s to its pooled_output, "
                       "so that output differs from this encoder's pooler (the sequence output "
                       "does not)", transformer.pooler_activation, family.backbone,
                       settings["pooler_activation"])
    if transformer.attention_dropout != transformer.dropout:
        logger.warning("attention_dropout=%g differs from dropout=%g; %s uses dropout for "
                       "both (this only matters when training)",
                       transformer.attention_dropout, transformer.dropout, family.backbone)


def _numerics_match(transformer, family):
    return all(getattr(transformer, name) == family.settings[name]
               for name in ("layer_norm_epsilon", "gelu_approximate"))


def _takes_tokenizer(family, tokenizer):
    return family.tokenizer == tokenizer.kind and family.sentencepiece_family in (
        None, getattr(tokenizer, "family", None))


def keras_hub_export_family(encoder, tokenizer):
    """The `keras_hub_families.KerasHubFamily` that `encoder` with `tokenizer` exports as.

    Of the rows whose tokenizer is of `tokenizer`'s kind (and SentencePiece
    family) and whose backbone holds the encoder's layout (`_check_layout`:
    segments, embedding projection, layer sharing, relative attention), the
    first, in the table's order, that also has the encoder's LayerNorm epsilon
    and GELU form; else the first with its epsilon (the GELU form is warned
    about on export).

    Raises:
        ValueError: no KerasHub backbone takes the tokenizer, or none holds the
            encoder (one line: each candidate with why).

    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> from nlpzoo.zoo import build_encoder
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    >>> keras_hub_export_family(build_encoder("distilbert_tiny", vocabulary_size=5),
    ...                         tokenizer).backbone
    'DistilBertBackbone'
    >>> keras_hub_export_family(build_encoder("electra_tiny", vocabulary_size=5),
    ...                         tokenizer).backbone
    'ElectraBackbone'
    """
    transformer = transformer_of(encoder)
    candidates = [family for family in FAMILIES.values() if _takes_tokenizer(family, tokenizer)]
    if not candidates:
        family = getattr(tokenizer, "family", None)
        raise ValueError(f"no KerasHub backbone comes with a {tokenizer.kind} tokenizer"
                         + (f" of the {family} family" if family else ""))
    reasons, fitting = [], []
    for family in candidates:
        try:
            _check_layout(transformer, family, exporting=True)
        except ValueError as error:
            reasons.append(f"{family.backbone}: {error}")
        else:
            fitting.append(family)
    if not fitting:
        raise ValueError(f"no KerasHub backbone with a {tokenizer.kind} tokenizer holds this "
                         f"encoder ({'; '.join(reasons)})")
    epsilon = [family for family in fitting
               if family.settings["layer_norm_epsilon"] == transformer.layer_norm_epsilon]
    exact = [family for family in epsilon if _numerics_match(transformer, family)]
    return (exact or epsilon or fitting)[0]


def _wordpiece_arguments(tokenizer, class_name):
    return dict(vocabulary=list(tokenizer.vocabulary), lowercase=tokenizer.lowercase,
                strip_accents=tokenizer.lowercase)  # ours strips accents when it lower-cases


def _byte_pair_arguments(tokenizer, class_name):
    if tokenizer.lowercase or tokenizer.normalization:
        raise ValueError(f"a byte-level BPE with lowercase={tokenizer.lowercase}, "
                         f"normalization={tokenizer.normalization!r}: KerasHub's {class_name} "
                         "has no normaliser")
    return dict(vocabulary={token: index for index, token in enumerate(tokenizer.vocabulary)},
                merges=list(tokenizer.merges), add_prefix_space=tokenizer.add_prefix_space)


def _sentencepiece_arguments(tokenizer, class_name):
    if tokenizer.lowercase or not tokenizer.keep_accents:
        logger.warning("the tokenizer lower-cases (%s) or strips accents (%s); KerasHub's %s "
                       "does neither, so give it text that is already lower-cased without "
                       "accents to get this tokenizer's ids", tokenizer.lowercase,
                       not tokenizer.keep_accents, class_name)
    return dict(proto=tokenizer.legacy_model())


# The arguments of KerasHub's tokenizer classes, by the kind of our tokenizer (the
# counterpart of `_TOKENIZER_READERS`). Each writer takes (tokenizer, KerasHub class
# name); the name is only for messages, so WordPiece, which refuses nothing, ignores it.
_TOKENIZER_ARGUMENTS = {"wordpiece": _wordpiece_arguments, "byte_pair": _byte_pair_arguments,
                        "sentencepiece": _sentencepiece_arguments}


def _keras_hub_tokenizer(tokenizer, family):
    """KerasHub's tokenizer of `family` built from ours, checked to have the same ids."""
    import keras_hub

    arguments = _TOKENIZER_ARGUMENTS[tokenizer.kind](tokenizer, family.tokenizer_classes[0])
    tokenizer_class = getattr(keras_hub.models, family.tokenizer_classes[0])
    try:
        theirs = tokenizer_class(**arguments)
    except ValueError as error:
        raise ValueError(f"KerasHub's {family.tokenizer_classes[0]} refuses the tokenizer: "
                         f"{error}") from None
    vocabulary = list(theirs.get_vocabulary())
    if vocabulary != tokenizer.vocabulary:

        def token(tokens, index):
            return tokens[index] if index < len(tokens) else None

        first = next((index for index, (a, b) in enumerate(zip(vocabulary, tokenizer.vocabulary))
                      if a != b), min(len(vocabulary), tokenizer.vocabulary_size))
        raise ValueError(f"KerasHub's {family.tokenizer_classes[0]} numbers the tokens "
                         f"differently: {len(vocabulary)} tokens, id {first} is "
                         f"{token(vocabulary, first)!r}; here {tokenizer.vocabulary_size} "
                         f"tokens, id {first} is {token(tokenizer.vocabulary, first)!r}")
    for role, attribute in _SPECIAL_ID_ATTRIBUTES.items():
        ours, kept = getattr(tokenizer, f"{role}_id"), getattr(theirs, attribute, None)
        if kept is not None and kept != ours:
            raise ValueError(f"KerasHub's {family.tokenizer_classes[0]} fixes the {role} token "
                             f"at id {kept} ({vocabulary[kept]!r}); this tokenizer's is {ours} "
                             f"({tokenizer.vocabulary[ours]!r})")
    return theirs


def export_keras_hub_preset(encoder, directory, vocabulary, lowercase=True, overwrite=False):
    """Writes `encoder` and its tokenizer as a KerasHub preset directory.

    The backbone is the one of `keras_hub_export_family` (BERT, RoBERTa,
    XLM-R, DistilBERT, ALBERT, ELECTRA or DeBERTa-v3), its tokenizer the
    family's (`BertTokenizer`, `RobertaTokenizer`, ...): built, every variable
    set from the encoder (`_weight_plan` read backwards) and saved with
    KerasHub's own `save_to_preset`, so `keras_hub.models.<Family>Backbone.from_preset(directory)`
    and the tokenizer's `from_preset` load the result. The directory is
    written atomically (a temporary sibling, then a rename).

    Args:
        encoder: a zoo encoder (or its `TransformerEncoder` layer).
        directory: the preset directory to create.
        vocabulary: the tokenizer: a `SubwordTokenizer` (WordPiece, byte-level
            BPE, SentencePiece), or the WordPiece tokens (id = position), as
            many as the encoder's `vocabulary_size`, with [CLS], [SEP], [PAD],
            [MASK] and [UNK].
        lowercase: whether a WordPiece token list lower-cases (accents are
            stripped exactly when it does); a `SubwordTokenizer` says so itself.
        overwrite: replace an existing non-empty `directory`.

    Returns:
        The backbone class written (config.json's `class_name`), e.g. "RobertaBackbone".

    LoRA updates are exported merged into the kernels they update.

    Raises:
        ValueError: no KerasHub backbone can represent the encoder with its
            tokenizer (pre-LN, rotary positions, adapters, a LayerNorm epsilon
            other than the backbone's, ...; named), KerasHub's tokenizer would
            number the tokens differently, the vocabulary does not fit, or the
            directory exists and is not empty (without `overwrite`). Nothing is
            written then.
    """
    import keras_hub

    from nlpzoo.zoo.checkpoints.native import as_functional_encoder, check_vocabulary

    transformer = transformer_of(as_functional_encoder(encoder))
    if transformer.adapter_size:
        raise ValueError(f"the encoder has adapters (adapter_size={transformer.adapter_size}), "
                         "which no KerasHub backbone can represent")
    if isinstance(vocabulary, SubwordTokenizer):
        tokenizer = vocabulary
        if tokenizer.vocabulary_size > transformer.vocabulary_size:
            raise ValueError(f"the tokenizer has {tokenizer.vocabulary_size} tokens but the "
                             f"encoder has vocabulary_size={transformer.vocabulary_size}")
    else:
        tokenizer = WordPieceTokenizer(check_vocabulary(vocabulary, transformer),
                                       lowercase=bool(lowercase))
    family = keras_hub_export_family(transformer, tokenizer)
    plan = _weight_plan(transformer, family, exporting=True)
    _check_numerics(transformer, family)
    layer_mix = getattr(encoder, "layer_mix", "last")
    if layer_mix != "last":  # it feeds a task head; the encoder's weights are exact
        logger.warning("the encoder's layer_mix=%r is not exported: %s's output is the last "
                       "layer", layer_mix, family.backbone)
    keras_hub_tokenizer = _keras_hub_tokenizer(tokenizer, family)
    backbone = getattr(keras_hub.models, family.backbone)(
        **_backbone_arguments(transformer, family), dtype="float32")
    variables = {variable.path: variable for variable in backbone.weights}
    unassigned = set(variables)
    for name, value in _export_values(transformer, family, plan).items():
        target = variables.get(name)
        if target is None:
            raise ValueError(f"this keras_hub's {family.backbone} has no variable {name!r}; "
                             "the installed KerasHub version is not supported")
        if tuple(target.shape) != value.shape:
            raise ValueError(f"{family.backbone}'s {name} has shape {tuple(target.shape)}, the "
                             f"encoder's weight {value.shape}")
        target.assign(value)
        unassigned.discard(name)
    if unassigned:
        raise ValueError(f"this keras_hub's {family.backbone} has variables with no "
                         f"counterpart here: {', '.join(sorted(unassigned))}")

    def write(temporary):
        backbone.save_to_preset(temporary)
        keras_hub_tokenizer.save_to_preset(temporary)

    write_directory_atomically(directory, write, overwrite=overwrite)
    return family.backbone
