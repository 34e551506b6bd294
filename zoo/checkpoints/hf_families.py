"""The one table of BERT-family checkpoints: Hugging Face `model_type` → our settings and names.

Every family is the same `TransformerEncoder` with other option values
(`layers.transformer_encoder` explains the seam); what tells the families apart
on the Hugging Face side — config.json fields, fixed settings, tensor names,
the `*Model` class — is one `HFFamily` row here. `zoo.checkpoints.huggingface`
reads and writes checkpoints through these rows only: no other module of
`zoo/` or `tools/` looks at a family name. Adding a family (DeBERTa-v3,
ModernBERT) = new option values in the layers + one row here (+ presets).

    model_type    tensors (after the model prefix, e.g. "roberta.")       pooler
    bert          embeddings.*, encoder.layer.{i}.attention.self.query…  pooler.dense
    roberta       as bert; positions from padding_idx + 1                 pooler.dense
    xlm-roberta   as roberta                                              pooler.dense
    distilbert    embeddings.*, transformer.layer.{i}.attention.q_lin…    none
    albert        …, encoder.embedding_hidden_mapping_in,                 pooler
                  encoder.albert_layer_groups.0.albert_layers.0.*
    electra       as bert + embeddings_project                            none
    deberta-v2    embeddings.* (no positions), encoder.layer.{i}.          none
                  attention.self.query_proj…, encoder.rel_embeddings,
                  encoder.LayerNorm (of the relative embeddings)
    modernbert    embeddings.tok_embeddings, layers.{i}.attn.Wqkv (query,  none
                  key and value fused), layers.{i}.mlp.Wi (GeGLU), final_norm

A family without a pooler in its checkpoints gets a freshly initialised one
(logged by the loader) with the activation of its classification head.
ModernBERT's head (`ModernBertPredictionHead`: dense, gelu, LayerNorm) is that
pooler with its norm (`pooler_norm=True`); its taggers and question answerers put
one of their own over every token (`layers.token_transform`), and
`hf_task_heads` exports each as the class's `head`.

Examples:
>>> family_for_model_type("xlm-roberta").architecture
'XLMRobertaModel'
>>> family_for_model_type("albert").block_names(0)["feedforward_norm"]
'encoder.albert_layer_groups.0.albert_layers.0.full_layer_layer_norm'
"""

import dataclasses
from typing import Callable, Optional

# hidden_act → gelu_approximate (exact erf GELU or its tanh approximation).
GELU_APPROXIMATE = {"gelu": False, "gelu_new": True, "gelu_pytorch_tanh": True}

# The roles of a block's tensors (our layer ↔ the checkpoint's module).
BLOCK_ROLES = ("query", "key", "value", "attention_output", "attention_norm", "intermediate",
               "output", "feedforward_norm")

# Roles a block may have instead: "qkv", query, key and value fused in one Linear
# ([3 · hidden, hidden], query rows first), as ModernBERT's Wqkv.
_BERT_BLOCK = {
    "query": "attention.self.query", "key": "attention.self.key",
    "value": "attention.self.value", "attention_output": "attention.output.dense",
    "attention_norm": "attention.output.LayerNorm", "intermediate": "intermediate.dense",
    "output": "output.dense", "feedforward_norm": "output.LayerNorm",
}
_BERT_EMBEDDINGS = {
    "token": "embeddings.word_embeddings", "position": "embeddings.position_embeddings",
    "segment": "embeddings.token_type_embeddings", "norm": "embeddings.LayerNorm",
    "projection": None,
}
# config.json field → (encoder argument, default when absent; None = required).
_BERT_FIELDS = {
    "vocab_size": ("vocabulary_size", None),
    "hidden_size": ("hidden_dim", None),
    "num_hidden_layers": ("num_layers", None),
    "num_attention_heads": ("num_heads", None),
    "intermediate_size": ("intermediate_dim", None),
    "max_position_embeddings": ("max_sequence_length", 512),
    "type_vocab_size": ("num_segments", 2),
    "hidden_dropout_prob": ("dropout", 0.1),
    "attention_probs_dropout_prob": ("attention_dropout", 0.1),
    "layer_norm_eps": ("layer_norm_epsilon", 1e-12),
}


@dataclasses.dataclass(frozen=True)
class HFFamily:
    """How one `model_type` maps onto our encoder.

    Attributes:
        model_type: config.json's `model_type`.
        architecture: the `transformers` class of the bare encoder (what export writes).
        class_prefix: what the names in config.json's `architectures` start with.
        config_fields: config.json field → (encoder argument, default; None = required).
        activation_field: the config field naming the feed-forward activation.
        activation_default: its value when absent (the family's config class default).
        settings: encoder arguments the family fixes (not in config.json).
        required: config.json fields that must have one value (else refused), with it.
        embeddings: embedding role → module name (None: the family has no such module).
        block_template: the module of block `{index}`, e.g. "encoder.layer.{index}".
        block: block role → module name inside it.
        pooler: the pooler's module name, None when the family's checkpoints have none.
        positions_after_padding: positions start at `pad_token_id + 1` (RoBERTa's
            `padding_idx + 1`); the table has that many extra rows.
        shared_block: every layer applies block 0 (ALBERT with one group).
        projection_always: the embeddings are projected even when as wide as
            the blocks (ALBERT); we only project between different widths, so
            such checkpoints are refused.
        export_fields: fixed config.json fields export writes.
        required_values: config.json field → (the values accepted, the value
            when absent: the config class's default); other values are refused.
        relative_embeddings: role → module name of the relative-position table
            ("table") and its LayerNorm ("norm"); None: the family has none.
        segments_optional: checkpoints may have a segment table or none
            (DeBERTa's `type_vocab_size` 0 or more).
        fallbacks: encoder argument → the argument whose value it takes when
            config.json gives it below 1 (DeBERTa's `max_relative_positions` -1).
        final_norm: the module of the layer norm after the last block (pre-LN
            families), None when the family has none.
        read_settings: reads encoder arguments the field table cannot (nested or
            derived fields): `read_settings(config, config_path)` → dict; None: none.
        write_settings: the config.json fields for them, `write_settings(transformer)`.
    """

    model_type: str
    architecture: str
    class_prefix: str
    config_fields: dict
    activation_field: str = "hidden_act"
    activation_default: str = "gelu"
    settings: dict = dataclasses.field(default_factory=dict)
    required: dict = dataclasses.field(default_factory=dict)
    embeddings: dict = dataclasses.field(default_factory=lambda: dict(_BERT_EMBEDDINGS))
    block_template: str = "encoder.layer.{index}"
    block: dict = dataclasses.field(default_factory=lambda: dict(_BERT_BLOCK))
    pooler: Optional[str] = "pooler.dense"
    positions_after_padding: bool = False
    shared_block: bool = False
    projection_always: bool = False
    export_fields: dict = dataclasses.field(default_factory=dict)
    required_values: dict = dataclasses.field(default_factory=dict)
    relative_embeddings: Optional[dict] = None
    segments_optional: bool = False
    fallbacks: dict = dataclasses.field(default_factory=dict)
    final_norm: Optional[str] = None
    read_settings: Optional[Callable] = None
    write_settings: Optional[Callable] = None

    def block_names(self, index):
        """Block role → the module name of block `index` (without the model prefix)."""
        prefix = self.block_template.format(index=index)
        return {role: f"{prefix}.{name}" for role, name in self.block.items()}


def _modernbert_rope_theta(config, config_path, layer_type, field, default):
    """A rotary base: transformers 5's `rope_parameters[layer_type]`, else the Hub's
    `global_rope_theta` / `local_rope_theta`, else the config class default."""
    parameters = (config.get("rope_parameters") or {}).get(layer_type) or {}
    rope_type = parameters.get("rope_type", "default")
    if rope_type != "default" or config.get("rope_scaling"):
        raise ValueError(f"{config_path}: rope_type={rope_type!r} / rope_scaling="
                         f"{config.get('rope_scaling')!r} is not supported (default rotary "
                         "positions only)")
    return float(parameters.get("rope_theta", config.get(field, default)))


def _read_modernbert(config, config_path):
    """ModernBERT's rotary bases and its pattern of global and local layers."""
    layers = config.get("num_hidden_layers", 0)
    every = config.get("global_attn_every_n_layers", 3)
    layer_types = config.get("layer_types")
    if layer_types is not None:  # transformers 5 writes the pattern out
        every = next((n for n in range(1, len(layer_types) + 1) if layer_types == [
            "sliding_attention" if i % n else "full_attention" for i in range(len(layer_types))
        ]), None)
        if every is None or len(layer_types) != layers:
            raise ValueError(f"{config_path}: layer_types={layer_types!r} is not every n-th "
                             "layer global and the others local (the only pattern supported)")
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"{config_path}: global_attn_every_n_layers={every!r} is not an "
                         "integer >= 1")
    return dict(
        global_attn_every_n_layers=every,
        global_rope_theta=_modernbert_rope_theta(config, config_path, "full_attention",
                                                 "global_rope_theta", 160_000.0),
        local_rope_theta=_modernbert_rope_theta(config, config_path, "sliding_attention",
                                                "local_rope_theta", 10_000.0),
    )


def _write_modernbert(transformer):
    local_theta = transformer.local_rope_theta or transformer.global_rope_theta
    return dict(
        global_attn_every_n_layers=transformer.global_attn_every_n_layers,
        layer_types=["full_attention" if transformer.is_global_layer(index)
                     else "sliding_attention" for index in range(transformer.num_layers)],
        rope_parameters={
            "full_attention": {"rope_type": "default",
                               "rope_theta": transformer.global_rope_theta},
            "sliding_attention": {"rope_type": "default", "rope_theta": local_theta},
        },
        global_rope_theta=transformer.global_rope_theta,
        local_rope_theta=local_theta,
        embedding_dropout=transformer.dropout,
    )


_BERT_EXPORT = dict(position_embedding_type="absolute", classifier_dropout=None,
                    is_decoder=False, add_cross_attention=False, use_cache=True)

FAMILIES = {
    family.model_type: family for family in (
        HFFamily("bert", "BertModel", "Bert", _BERT_FIELDS,
                 settings=dict(embedding_dim=None, share_layers=False,
                               pooler_activation="tanh"),
                 export_fields=_BERT_EXPORT),
        HFFamily("roberta", "RobertaModel", "Roberta", _BERT_FIELDS,
                 settings=dict(embedding_dim=None, share_layers=False,
                               pooler_activation="tanh"),
                 positions_after_padding=True,
                 export_fields=dict(_BERT_EXPORT, bos_token_id=0, eos_token_id=2)),
        HFFamily("xlm-roberta", "XLMRobertaModel", "XLMRoberta", _BERT_FIELDS,
                 settings=dict(embedding_dim=None, share_layers=False,
                               pooler_activation="tanh"),
                 positions_after_padding=True,
                 export_fields=dict(_BERT_EXPORT, bos_token_id=0, eos_token_id=2)),
        HFFamily("distilbert", "DistilBertModel", "DistilBert", {
                     "vocab_size": ("vocabulary_size", None),
                     "dim": ("hidden_dim", None),
                     "n_layers": ("num_layers", None),
                     "n_heads": ("num_heads", None),
                     "hidden_dim": ("intermediate_dim", None),
                     "max_position_embeddings": ("max_sequence_length", 512),
                     "dropout": ("dropout", 0.1),
                     "attention_dropout": ("attention_dropout", 0.1),
                 },
                 activation_field="activation",
                 # DistilBERT's LayerNorms have a fixed epsilon; its classifier's
                 # `pre_classifier` is dense + relu.
                 settings=dict(embedding_dim=None, share_layers=False, num_segments=0,
                               layer_norm_epsilon=1e-12, pooler_activation="relu"),
                 embeddings=dict(_BERT_EMBEDDINGS, segment=None),
                 block_template="transformer.layer.{index}",
                 block={"query": "attention.q_lin", "key": "attention.k_lin",
                        "value": "attention.v_lin", "attention_output": "attention.out_lin",
                        "attention_norm": "sa_layer_norm", "intermediate": "ffn.lin1",
                        "output": "ffn.lin2", "feedforward_norm": "output_layer_norm"},
                 pooler=None,
                 export_fields=dict(sinusoidal_pos_embds=False, qa_dropout=0.1,
                                    seq_classif_dropout=0.2)),
        HFFamily("albert", "AlbertModel", "Albert",
                 dict(_BERT_FIELDS, embedding_size=("embedding_dim", 128),
                      hidden_dropout_prob=("dropout", 0.0),
                      attention_probs_dropout_prob=("attention_dropout", 0.0)),
                 settings=dict(share_layers=True, pooler_activation="tanh"),
                 required={"num_hidden_groups": 1, "inner_group_num": 1},
                 embeddings=dict(_BERT_EMBEDDINGS,
                                 projection="encoder.embedding_hidden_mapping_in"),
                 block_template="encoder.albert_layer_groups.{index}.albert_layers.0",
                 block={"query": "attention.query", "key": "attention.key",
                        "value": "attention.value", "attention_output": "attention.dense",
                        "attention_norm": "attention.LayerNorm", "intermediate": "ffn",
                        "output": "ffn_output", "feedforward_norm": "full_layer_layer_norm"},
                 pooler="pooler",
                 shared_block=True,
                 projection_always=True,
                 activation_default="gelu_new",
                 export_fields=dict(num_hidden_groups=1, inner_group_num=1,
                                    position_embedding_type="absolute",
                                    classifier_dropout_prob=0.1)),
        HFFamily("electra", "ElectraModel", "Electra",
                 dict(_BERT_FIELDS, embedding_size=("embedding_dim", 128)),
                 # ELECTRA's checkpoints have no pooler; its classification head's
                 # dense layer is followed by (exact) gelu.
                 settings=dict(share_layers=False, pooler_activation="gelu"),
                 embeddings=dict(_BERT_EMBEDDINGS, projection="embeddings_project"),
                 pooler=None,
                 export_fields=dict(_BERT_EXPORT, summary_type="first", summary_use_proj=True,
                                    summary_activation="gelu", summary_last_dropout=0.1)),
        HFFamily("deberta-v2", "DebertaV2Model", "DebertaV2",
                 dict(_BERT_FIELDS, type_vocab_size=("num_segments", 0),
                      layer_norm_eps=("layer_norm_epsilon", 1e-7),
                      position_buckets=("position_buckets", -1),
                      max_relative_positions=("max_relative_positions", -1)),
                 # DeBERTa's checkpoints have no pooler; its ContextPooler (in the task
                 # heads) is dense + pooler_hidden_act, gelu.
                 settings=dict(embedding_dim=None, share_layers=False, pooler_activation="gelu",
                               absolute_positions=False, relative_attention="disentangled"),
                 required_values={
                     "relative_attention": ((True,), False),
                     "position_biased_input": ((False,), True),
                     "share_att_key": ((True,), False),
                     "norm_rel_ebd": (("layer_norm",), "none"),
                     "pos_att_type": ((["p2c", "c2p"], ["c2p", "p2c"], "p2c|c2p", "c2p|p2c"),
                                      None),
                     "conv_kernel_size": ((0,), 0),  # DeBERTa-v2's convolution: not in v3
                 },
                 embeddings=dict(_BERT_EMBEDDINGS, position=None),
                 block=dict(_BERT_BLOCK, query="attention.self.query_proj",
                            key="attention.self.key_proj", value="attention.self.value_proj"),
                 pooler=None,
                 relative_embeddings={"table": "encoder.rel_embeddings",
                                      "norm": "encoder.LayerNorm"},
                 segments_optional=True,
                 fallbacks={"max_relative_positions": "max_sequence_length"},
                 export_fields=dict(relative_attention=True, pos_att_type=["p2c", "c2p"],
                                    share_att_key=True, norm_rel_ebd="layer_norm",
                                    position_biased_input=False, pooler_hidden_act="gelu",
                                    pooler_dropout=0.0)),
        HFFamily("modernbert", "ModernBertModel", "ModernBert", {
                     "vocab_size": ("vocabulary_size", None),
                     "hidden_size": ("hidden_dim", None),
                     "num_hidden_layers": ("num_layers", None),
                     "num_attention_heads": ("num_heads", None),
                     "intermediate_size": ("intermediate_dim", None),
                     "max_position_embeddings": ("max_sequence_length", 8192),
                     "norm_eps": ("layer_norm_epsilon", 1e-5),
                     "local_attention": ("local_attention", 128),
                     "mlp_dropout": ("dropout", 0.0),
                     "attention_dropout": ("attention_dropout", 0.0),
                 },
                 activation_field="hidden_activation",
                 # Pre-LN with a final norm, GeGLU, no biases, rotary positions (no
                 # table), no segments; layer 0 reads the embeddings' norm directly.
                 # Its classification head's dense layer is followed by gelu.
                 settings=dict(embedding_dim=None, share_layers=False, num_segments=0,
                               absolute_positions=False, norm_first=True, gated_feedforward=True, use_bias=False,
                               first_attention_norm=False, pooler_activation="gelu",
                               pooler_norm=True),
                 required={"norm_bias": False, "attention_bias": False, "mlp_bias": False},
                 embeddings={"token": "embeddings.tok_embeddings", "position": None,
                             "segment": None, "norm": "embeddings.norm", "projection": None},
                 block_template="layers.{index}",
                 block={"qkv": "attn.Wqkv", "attention_output": "attn.Wo",
                        "attention_norm": "attn_norm", "intermediate": "mlp.Wi",
                        "output": "mlp.Wo", "feedforward_norm": "mlp_norm"},
                 pooler=None,
                 final_norm="final_norm",
                 read_settings=_read_modernbert,
                 write_settings=_write_modernbert,
                 export_fields=dict(norm_bias=False, attention_bias=False, mlp_bias=False,
                                    classifier_pooling="cls", classifier_activation="gelu",
                                    classifier_bias=False, classifier_dropout=0.0,
                                    decoder_bias=True)),
    )
}
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)


def family_for_model_type(model_type):
    """The `HFFamily` of a config.json `model_type`.

    Raises:
        ValueError: not a family this project imports (the message lists them).
    """
    family = FAMILIES.get(model_type)
    if family is None:
        raise ValueError(f"model_type={model_type!r} is not supported; only "
                         f"{', '.join(map(repr, SUPPORTED_MODEL_TYPES))} checkpoints can be "
                         "imported")
    return family


def family_for_architecture(architectures):
    """The family whose classes `architectures` names (for configs without `model_type`),
    or None. The longest matching class prefix wins ("XLMRoberta" over "Roberta")."""
    matches = [family for family in FAMILIES.values()
               if architectures and all(str(name).startswith(family.class_prefix)
                                        for name in architectures)]
    return max(matches, key=lambda family: len(family.class_prefix), default=None)


def family_for_encoder(transformer):
    """The family an encoder exports as, from its options alone.

    Relative attention → DeBERTa-v2; rotary positions → ModernBERT; shared layers →
    ALBERT; no segment table → DistilBERT; an offset of the positions → RoBERTa;
    factorised embeddings or a gelu pooler → ELECTRA; else BERT. Options a family
    cannot hold are refused by the exporter.

    >>> from nlpzoo.layers import TransformerEncoder
    >>> family_for_encoder(TransformerEncoder(vocabulary_size=9, num_layers=1, num_heads=1,
    ...     hidden_dim=4, intermediate_dim=8, position_offset=2, num_segments=1)).model_type
    'roberta'
    """
    if transformer.relative_attention is not None:
        return FAMILIES["deberta-v2"]
    if transformer.global_rope_theta:  # rotary positions
        return FAMILIES["modernbert"]
    if transformer.share_layers:
        return FAMILIES["albert"]
    if transformer.num_segments == 0:
        return FAMILIES["distilbert"]
    if transformer.position_offset:
        return FAMILIES["roberta"]
    if (transformer.embedding_dim != transformer.hidden_dim
            or transformer.pooler_activation == "gelu"):
        return FAMILIES["electra"]
    return FAMILIES["bert"]
