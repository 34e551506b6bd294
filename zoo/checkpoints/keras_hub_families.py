"""The one table of KerasHub backbones: `config.json`'s `class_name` → our settings and names.

A KerasHub preset directory (`save_to_preset`) names its backbone class in
config.json; each class we import is one `KerasHubFamily` row here: its config
fields, the numerics KerasHub fixes in code (GELU form, LayerNorm epsilon,
positions, segments, pooler), where each variable lives in model.weights.h5,
and the tokenizer classes it comes with. `zoo.checkpoints.keras_hub` reads
presets through these rows only, and writes them by the same rows (the
backbone and its first tokenizer class, the config fields read backwards,
every weight where the import reads it; the row is the first, in this
table's order, that holds the encoder with its tokenizer): no other module
looks at a backbone's name.

    class_name            embeddings                         blocks (GELU, eps)      pooler
    BertBackbone          token+position+segment             tanh GELU, 1e-12        pooled_dense
    RobertaBackbone       token+position from 0, no segment  erf GELU, 1e-5          none
    XLMRobertaBackbone    as RobertaBackbone                 erf GELU, 1e-5          none
    DistilBertBackbone    token+position, no segment         erf GELU, 1e-12         none
    AlbertBackbone        width E, always projected to H     tanh GELU, 1e-12,       pooled_dense
                                                             num_groups blocks
    ElectraBackbone       width E, projected when E != H     tanh GELU, 1e-12        pooled_dense
    DebertaV3Backbone     token only (relative positions:    erf GELU, 1e-7,         none
                          rel_embedding, bucket_size)        disentangled attention

KerasHub's RoBERTa-family position table starts at position 0 (its converter
drops the two rows Hugging Face reserves before `padding_idx + 1`), so these
import with `position_offset=0`. A backbone without a pooler leaves ours
freshly initialised, with the activation of KerasHub's classifier head for the
family (tanh; DistilBERT relu; DeBERTa-v3 gelu, its ContextPooler's).

KerasHub's DeBERTa-v3 is transformers' DeBERTa-v2 layout with v3's settings
(shared attention keys, c2p and p2c, layer-normalised relative embeddings, no
absolute positions, no segments): `bucket_size` is `position_buckets`
(the table has 2 · bucket_size rows) and `max_sequence_length` doubles as
`max_relative_positions`, the longest distance told apart by the log buckets
(512 in its presets, as in microsoft/deberta-v3-*). Its outputs at real
tokens are ours (and transformers'); at padding they differ, as KerasHub does
not zero the embeddings of padding before the blocks (transformers and we do),
which no real token reads. Its log bucket multiplies by (mid - 1) before
dividing, transformers after; in float32 both give the same bucket at every
distance for bucket_size 256 up to 512 (checked) and for the test's 4 up to 32.

Where a weight is in model.weights.h5: Keras saves a functional model's
layers under their class name in snake case, numbered in the order of the
model's layers when a class repeats ("dense", "dense_1"; "transformer_encoder",
"transformer_encoder_1"); `saved_layer_groups` computes those names from a
row's layers in that order.

Examples:
>>> family_for_backbone("AlbertBackbone").block_label(0)
'group_0_inner_layer_0'
>>> family_for_tokenizer("XLMRobertaTokenizer").tokenizer
'sentencepiece'
>>> electra = family_for_backbone("ElectraBackbone")
>>> sorted(saved_layer_groups(electra, ("projection", "pooler")).items())
[('pooler', 'layers/dense_1'), ('projection', 'layers/dense')]
"""

import dataclasses
from typing import NamedTuple, Optional


class SavedLayer(NamedTuple):
    """A top-level layer of a KerasHub backbone.

    Attributes:
        role: what it is to our encoder ("token", "position", "segment",
            "norm", "projection", "pooler").
        path: its KerasHub variable path prefix (`variable.path` less the
            variable's own name), as errors name it.
        saved_as: its group in model.weights.h5 under "layers/", before
            numbering: the Keras class in snake case, then any nested layer.
    """

    role: str
    path: str
    saved_as: str


_BERT_FIELDS = {
    "vocabulary_size": ("vocabulary_size", None),
    "num_layers": ("num_layers", None),
    "num_heads": ("num_heads", None),
    "hidden_dim": ("hidden_dim", None),
    "intermediate_dim": ("intermediate_dim", None),
    "max_sequence_length": ("max_sequence_length", 512),
    "num_segments": ("num_segments", 2),
    "dropout": ("dropout", 0.1),
}
# RoBERTa, XLM-R and DistilBERT have no segment table.
_NO_SEGMENT_FIELDS = {field: value for field, value in _BERT_FIELDS.items()
                      if field != "num_segments"}

_BERT_LAYERS = (
    SavedLayer("token", "token_embedding", "reversible_embedding"),
    SavedLayer("position", "position_embedding", "position_embedding"),
    SavedLayer("segment", "segment_embedding", "embedding"),
    SavedLayer("norm", "embeddings_layer_norm", "layer_normalization"),
    SavedLayer("pooler", "pooled_dense", "dense"),
)


def _token_and_position(prefix):
    """The layers of a backbone whose tokens and positions share a
    `TokenAndPositionEmbedding` (saved as "token_and_position_embedding/...")."""
    return (
        SavedLayer("token", f"{prefix}/token_embedding",
                   "token_and_position_embedding/token_embedding"),
        SavedLayer("position", f"{prefix}/position_embedding",
                   "token_and_position_embedding/position_embedding"),
        SavedLayer("norm", "embeddings_layer_norm", "layer_normalization"),
    )


def _factorised(projection):
    """BERT's layers with an embedding projection (saved before the pooler)."""
    return _BERT_LAYERS[:4] + (SavedLayer("projection", projection, "dense"),
                               _BERT_LAYERS[4])


# The tokenizer readers of `zoo.checkpoints.keras_hub`.
TOKENIZER_KINDS = ("wordpiece", "byte_pair", "sentencepiece")


@dataclasses.dataclass(frozen=True)
class KerasHubFamily:
    """How one KerasHub backbone class maps onto our encoder.

    Attributes:
        backbone: config.json's `class_name`.
        config_fields: backbone config field → (encoder argument, default when
            absent; None = required).
        settings: encoder arguments KerasHub fixes in the backbone's code.
        layers: the backbone's top-level layers with weights, in the order
            Keras saves them (`SavedLayer`); a role our encoder lacks (no
            projection when the widths are equal) is left out when naming.
        block_template: KerasHub's name of block `{index}`.
        layer_groups: the config has `num_groups` and `num_inner_repetitions`
            (ALBERT): one group shares its block across layers (`share_layers`),
            as many groups as layers have a block each; others are refused.
        projection_always: the embeddings are projected even when as wide as
            the blocks (ALBERT); we only project between different widths, so
            such presets are refused.
        tokenizer_classes: tokenizer.json `class_name`s that come with it.
        tokenizer: the kind of `SubwordTokenizer` they become (`TOKENIZER_KINDS`).
        sentencepiece_family: the `SentencePieceTokenizer` family (XLM-R's
            fairseq ids, which KerasHub's `XLMRobertaTokenizer` uses too).
        saved_block: the block class as model.weights.h5 names it (snake case).
        attention_parts: our attention layer's query, key, value and output
            dense layers → their names in the saved block's
            `_self_attention_layer` group.
        fallbacks: encoder argument → the argument whose value it takes
            (DeBERTa-v3's `max_relative_positions`: `max_sequence_length`).
        resolved_attributes: encoder argument → the encoder attribute that
            holds its resolved value, which export writes (DeBERTa-v3's
            `max_relative_positions` < 1 means a default:
            `relative_distance_limit`); other arguments are written as stored.
        output_per_head: the attention output kernel is saved as [heads,
            head_dim, hidden] (KerasHub's `TransformerEncoder`), else as
            [hidden, hidden] (its `DisentangledAttentionEncoder`).
    """

    backbone: str
    config_fields: dict
    settings: dict
    layers: tuple
    tokenizer_classes: tuple
    tokenizer: str
    block_template: str = "transformer_layer_{index}"
    layer_groups: bool = False
    projection_always: bool = False
    sentencepiece_family: Optional[str] = None
    saved_block: str = "transformer_encoder"
    attention_parts: tuple = (("query", "query_dense"), ("key", "key_dense"),
                              ("value", "value_dense"), ("attention_output", "output_dense"))
    fallbacks: tuple = ()
    resolved_attributes: tuple = ()
    output_per_head: bool = True

    @property
    def pooler(self):
        """The pooler's KerasHub name, None when the backbone has none."""
        return next((layer.path for layer in self.layers if layer.role == "pooler"), None)

    def block_label(self, index):
        """KerasHub's name of block `index`."""
        return self.block_template.format(index=index)


def saved_layer_groups(family, roles):
    """role → its group in model.weights.h5 ("layers/dense_1"), for the layers of
    `family` whose role is in `roles` (the ones the encoder has), numbered as Keras
    numbers repeated classes."""
    seen, containers, groups = {}, {}, {}
    for layer in family.layers:
        if layer.role not in roles:
            continue
        head, _, nested = layer.saved_as.partition("/")
        if nested and head in containers:  # another layer inside the same top-level layer
            name = containers[head]
        else:
            count = seen.get(head, 0)
            seen[head] = count + 1
            name = head if count == 0 else f"{head}_{count}"
            if nested:
                containers[head] = name
        groups[layer.role] = "layers/" + name + (f"/{nested}" if nested else "")
    return groups


def saved_block_group(index, saved_block="transformer_encoder"):
    """The model.weights.h5 group of the `index`-th distinct block.

    >>> saved_block_group(0), saved_block_group(2)
    ('layers/transformer_encoder', 'layers/transformer_encoder_2')
    >>> saved_block_group(1, "disentangled_attention_encoder")
    'layers/disentangled_attention_encoder_1'
    """
    return f"layers/{saved_block}" + (f"_{index}" if index else "")


_POST_LN = dict(norm_first=False, position_offset=0, embedding_dim=None, share_layers=False)
_ROBERTA_SETTINGS = dict(_POST_LN, num_segments=0, gelu_approximate=False,
                         layer_norm_epsilon=1e-5, pooler_activation="tanh")

FAMILIES = {
    family.backbone: family for family in (
        KerasHubFamily("BertBackbone", _BERT_FIELDS,
                       dict(_POST_LN, gelu_approximate=True, layer_norm_epsilon=1e-12,
                            pooler_activation="tanh"),
                       _BERT_LAYERS, ("BertTokenizer", "WordPieceTokenizer"), "wordpiece"),
        KerasHubFamily("RobertaBackbone", _NO_SEGMENT_FIELDS, _ROBERTA_SETTINGS,
                       _token_and_position("embeddings"), ("RobertaTokenizer",), "byte_pair"),
        KerasHubFamily("XLMRobertaBackbone", _NO_SEGMENT_FIELDS, _ROBERTA_SETTINGS,
                       _token_and_position("embeddings"), ("XLMRobertaTokenizer",),
                       "sentencepiece", sentencepiece_family="xlm-roberta"),
        KerasHubFamily("DistilBertBackbone", _NO_SEGMENT_FIELDS,
                       dict(_POST_LN, num_segments=0, gelu_approximate=False,
                            layer_norm_epsilon=1e-12, pooler_activation="relu"),
                       _token_and_position("token_and_position_embedding"),
                       ("DistilBertTokenizer",), "wordpiece"),
        KerasHubFamily("AlbertBackbone",
                       dict(_BERT_FIELDS, embedding_dim=("embedding_dim", None),
                            dropout=("dropout", 0.0)),
                       dict(norm_first=False, position_offset=0, gelu_approximate=True,
                            layer_norm_epsilon=1e-12, pooler_activation="tanh"),
                       _factorised("embedding_projection"), ("AlbertTokenizer",),
                       "sentencepiece", block_template="group_{index}_inner_layer_0",
                       layer_groups=True, projection_always=True,
                       sentencepiece_family="albert"),
        KerasHubFamily("ElectraBackbone",
                       dict({"vocab_size": ("vocabulary_size", None)},  # ELECTRA's name
                            **{field: value for field, value in _BERT_FIELDS.items()
                               if field != "vocabulary_size"},
                            embedding_dim=("embedding_dim", None)),
                       dict(norm_first=False, position_offset=0, share_layers=False,
                            gelu_approximate=True, layer_norm_epsilon=1e-12,
                            pooler_activation="tanh"),
                       _factorised("embeddings_projection"), ("ElectraTokenizer",),
                       "wordpiece"),
        KerasHubFamily("DebertaV3Backbone",
                       dict(_NO_SEGMENT_FIELDS, bucket_size=("position_buckets", 256)),
                       dict(_POST_LN, num_segments=0, gelu_approximate=False,
                            layer_norm_epsilon=1e-7, pooler_activation="gelu",
                            absolute_positions=False, relative_attention="disentangled"),
                       (SavedLayer("token", "token_embedding", "reversible_embedding"),
                        SavedLayer("norm", "embeddings_layer_norm", "layer_normalization"),
                        SavedLayer("relative", "rel_embedding", "relative_embedding")),
                       ("DebertaV3Tokenizer",), "sentencepiece",
                       block_template="disentangled_attention_encoder_layer_{index}",
                       sentencepiece_family="deberta-v2",
                       saved_block="disentangled_attention_encoder",
                       attention_parts=(("query", "_query_dense"), ("key", "_key_dense"),
                                        ("value", "_value_dense"),
                                        ("attention_output", "_output_dense")),
                       fallbacks=(("max_relative_positions", "max_sequence_length"),),
                       resolved_attributes=(("max_relative_positions",
                                             "relative_distance_limit"),),
                       output_per_head=False),
    )
}
SUPPORTED_BACKBONES = tuple(FAMILIES)
SUPPORTED_TOKENIZERS = tuple(name for family in FAMILIES.values()
                             for name in family.tokenizer_classes)


def family_for_backbone(class_name):
    """The `KerasHubFamily` of a config.json `class_name`.

    Raises:
        ValueError: not a backbone this project imports (the message lists them).

    >>> family_for_backbone("RobertaBackbone").settings["layer_norm_epsilon"]
    1e-05
    >>> family_for_backbone("ModernBertBackbone")
    Traceback (most recent call last):
    ...
    ValueError: class_name='ModernBertBackbone' is not supported; only KerasHub BertBackbone, ...
    """
    family = FAMILIES.get(class_name)
    if family is None:
        raise ValueError(f"class_name={class_name!r} is not supported; only KerasHub "
                         f"{', '.join(SUPPORTED_BACKBONES)} presets can be imported (other "
                         "backbones have different architectures)")
    return family


def family_for_tokenizer(class_name):
    """The `KerasHubFamily` whose tokenizer class is `class_name` (tokenizer.json's).

    Raises:
        ValueError: not a tokenizer this project reads (the message lists them).

    >>> family_for_tokenizer("DistilBertTokenizer").backbone
    'DistilBertBackbone'
    """
    for family in FAMILIES.values():
        if class_name in family.tokenizer_classes:
            return family
    raise ValueError(f"class_name={class_name!r} is not supported; expected one of "
                     f"{', '.join(SUPPORTED_TOKENIZERS)}")
