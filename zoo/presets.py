"""Named presets: encoder shapes, their fine-tuning defaults and task heads, as plain data.

An encoder preset gives the published shape of a BERT-family model and the
fine-tuning settings that suit it; a task preset names an encoder and a head.
Every encoder has `<encoder>_classifier`, `<encoder>_pair_classifier`,
`<encoder>_tagger`, `<encoder>_crf_tagger`, `<encoder>_span_ner` and
`<encoder>_question_answerer` task presets.
"""

import dataclasses

from nlpzoo.layers.transformer_encoder import architecture_defaults


@dataclasses.dataclass(frozen=True)
class FineTuningDefaults:
    """What `tools/train.py` and `zoo.build_model` use when they are not told otherwise.

    `head_learning_rate` drives what starts from scratch on top of a
    *pretrained* encoder (the task head, CRF transitions, span scorer): a
    fresh head at the encoder's small rate learns far too slowly. A model
    trained from random weights uses `learning_rate` everywhere.
    `max_seq_length` covers the longest CoNLL-2003 sentence (164 wordpieces
    with the BERT uncased vocabulary); length bucketing keeps short inputs
    cheap.
    """

    learning_rate: float = 5e-5
    head_learning_rate: float = 1e-3
    warmup_fraction: float = 0.1
    epochs: int = 3
    max_seq_length: int = 256


# The encoder's own defaults: a preset keeps them unless it states its own.
_ENCODER_DEFAULTS = architecture_defaults()


@dataclasses.dataclass(frozen=True)
class EncoderPreset:
    """The shape and numerics of a transformer encoder.

    The fields are `TransformerEncoder` arguments with the layer's defaults
    (`architecture_defaults`), but for the vocabulary (BERT's uncased
    WordPiece vocabulary) and an explicit `attention_dropout` (the layer's
    None means "as `dropout`"). A BERT-family member is a set of values of
    these fields (`layers.transformer_encoder` has the table): RoBERTa's
    `position_offset=2, num_segments=1`, DistilBERT's `num_segments=0`,
    ALBERT's `embedding_dim` and `share_layers`, ELECTRA's `embedding_dim`,
    DeBERTa-v3's relative attention without absolute positions, ModernBERT's
    rotary positions, local/global layers, GeGLU and no biases.
    """

    num_layers: int
    hidden_dim: int
    num_heads: int
    intermediate_dim: int
    vocabulary_size: int = 30522
    max_sequence_length: int = _ENCODER_DEFAULTS["max_sequence_length"]
    num_segments: int = _ENCODER_DEFAULTS["num_segments"]
    embedding_dim: int = _ENCODER_DEFAULTS["embedding_dim"]
    share_layers: bool = _ENCODER_DEFAULTS["share_layers"]
    norm_first: bool = _ENCODER_DEFAULTS["norm_first"]
    gelu_approximate: bool = _ENCODER_DEFAULTS["gelu_approximate"]
    dropout: float = _ENCODER_DEFAULTS["dropout"]
    attention_dropout: float = _ENCODER_DEFAULTS["dropout"]
    layer_norm_epsilon: float = _ENCODER_DEFAULTS["layer_norm_epsilon"]
    position_offset: int = _ENCODER_DEFAULTS["position_offset"]
    pooler_activation: str = _ENCODER_DEFAULTS["pooler_activation"]
    pooler_norm: bool = _ENCODER_DEFAULTS["pooler_norm"]
    absolute_positions: bool = _ENCODER_DEFAULTS["absolute_positions"]
    relative_attention: str = _ENCODER_DEFAULTS["relative_attention"]
    position_buckets: int = _ENCODER_DEFAULTS["position_buckets"]
    max_relative_positions: int = _ENCODER_DEFAULTS["max_relative_positions"]
    global_rope_theta: float = _ENCODER_DEFAULTS["global_rope_theta"]
    local_rope_theta: float = _ENCODER_DEFAULTS["local_rope_theta"]
    local_attention: int = _ENCODER_DEFAULTS["local_attention"]
    global_attn_every_n_layers: int = _ENCODER_DEFAULTS["global_attn_every_n_layers"]
    gated_feedforward: bool = _ENCODER_DEFAULTS["gated_feedforward"]
    use_bias: bool = _ENCODER_DEFAULTS["use_bias"]
    first_attention_norm: bool = _ENCODER_DEFAULTS["first_attention_norm"]
    # Fine-tuning settings that suit this size (smaller models want larger rates).
    fine_tuning: FineTuningDefaults = FineTuningDefaults()
    description: str = ""

    def encoder_arguments(self):
        """The `Encoder` arguments this preset gives (all fields but the fine-tuning
        defaults and the description).

        >>> ENCODER_PRESETS["bert_tiny"].encoder_arguments()["num_layers"]
        2
        """
        return {name: getattr(self, name) for name in ENCODER_FIELDS}


# The fields of an `EncoderPreset` that are `Encoder` arguments.
ENCODER_FIELDS = tuple(field.name for field in dataclasses.fields(EncoderPreset)
                       if field.name not in ("description", "fine_tuning"))


@dataclasses.dataclass(frozen=True)
class TaskPreset:
    """A registered task (`tasks.registry`) with its head on a named encoder.

    `head_options` are the task's `build_model` arguments (`num_classes`,
    `head`, ...); `task_options` its options (`paired_input`, ...).
    """

    encoder: str
    task: str
    head_options: dict = dataclasses.field(default_factory=dict)
    task_options: dict = dataclasses.field(default_factory=dict)
    description: str = ""


# What sets each BERT-family member apart from BERT, as `EncoderPreset` fields (the same
# values `zoo.checkpoints.hf_families` reads from a Hugging Face checkpoint).
_ROBERTA = dict(position_offset=2, num_segments=1, layer_norm_epsilon=1e-5)
_DISTILBERT = dict(num_segments=0, pooler_activation="relu")
_ALBERT = dict(embedding_dim=128, share_layers=True, gelu_approximate=True, dropout=0.0,
               attention_dropout=0.0)
_ELECTRA = dict(pooler_activation="gelu")
# DeBERTa-v3 (microsoft/deberta-v3-*): disentangled attention over 256 log buckets of
# distances up to 512, no absolute positions, no segment table, no pooler in the
# checkpoints (its ContextPooler is dense + gelu).
_DEBERTA_V3 = dict(absolute_positions=False, relative_attention="disentangled",
                   position_buckets=256, max_relative_positions=512, num_segments=0,
                   layer_norm_epsilon=1e-7, pooler_activation="gelu", vocabulary_size=128100)
# ModernBERT (Warner et al. 2024): pre-LN with a final norm, GeGLU, no biases, rotary
# positions (global layers base 160,000, local ones 10,000; no position table), every
# third layer global and the others a 128-token window, no segments, BPE vocabulary of
# 50,368 ids; its task heads' prediction head (dense, gelu, LayerNorm) is the pooler with
# its norm, and the taggers' and question answerers' transform over each token.
_MODERNBERT = dict(num_segments=0, absolute_positions=False, norm_first=True,
                   gated_feedforward=True, use_bias=False,
                   first_attention_norm=False, pooler_activation="gelu", pooler_norm=True,
                   global_rope_theta=160_000.0, local_rope_theta=10_000.0,
                   local_attention=128, global_attn_every_n_layers=3,
                   layer_norm_epsilon=1e-5, dropout=0.0, attention_dropout=0.0,
                   vocabulary_size=50368, max_sequence_length=8192)

ENCODER_PRESETS = {
    "bert_tiny": EncoderPreset(2, 128, 2, 512, fine_tuning=FineTuningDefaults(3e-4),
                               description="BERT-Tiny (Turc et al. 2019)"),
    "bert_mini": EncoderPreset(4, 256, 4, 1024, fine_tuning=FineTuningDefaults(1e-4),
                               description="BERT-Mini (Turc et al. 2019)"),
    "bert_small": EncoderPreset(4, 512, 8, 2048, fine_tuning=FineTuningDefaults(5e-5),
                                description="BERT-Small (Turc et al. 2019)"),
    "bert_medium": EncoderPreset(8, 512, 8, 2048, fine_tuning=FineTuningDefaults(5e-5),
                                 description="BERT-Medium (Turc et al. 2019)"),
    "bert_base": EncoderPreset(12, 768, 12, 3072, fine_tuning=FineTuningDefaults(3e-5),
                               description="BERT-Base (Devlin et al. 2019)"),
    "bert_large": EncoderPreset(24, 1024, 16, 4096, fine_tuning=FineTuningDefaults(2e-5),
                                description="BERT-Large (Devlin et al. 2019)"),
    "minilm_l6_h384": EncoderPreset(6, 384, 12, 1536, fine_tuning=FineTuningDefaults(1e-4),
                                    description="MiniLM-L6-H384, the shape of all-MiniLM-L6-v2"),
    # Cased and multilingual BERT: BERT's layout, another vocabulary (and a cased tokenizer).
    "bert_base_cased": EncoderPreset(12, 768, 12, 3072, vocabulary_size=28996,
                                     fine_tuning=FineTuningDefaults(3e-5),
                                     description="BERT-Base, cased (Devlin et al. 2019)"),
    "bert_base_multilingual_cased": EncoderPreset(
        12, 768, 12, 3072, vocabulary_size=119547, fine_tuning=FineTuningDefaults(3e-5),
        description="multilingual BERT-Base, cased, 104 languages"),
    "roberta_base": EncoderPreset(12, 768, 12, 3072, **_ROBERTA, vocabulary_size=50265,
                                  fine_tuning=FineTuningDefaults(2e-5),
                                  description="RoBERTa-Base (Liu et al. 2019): positions "
                                              "offset by padding_idx + 1, one segment type"),
    "xlm_roberta_base": EncoderPreset(12, 768, 12, 3072, **_ROBERTA, vocabulary_size=250002,
                                      fine_tuning=FineTuningDefaults(2e-5),
                                      description="XLM-RoBERTa-Base (Conneau et al. 2020): "
                                                  "RoBERTa's layout, 100 languages"),
    "distilbert_base": EncoderPreset(6, 768, 12, 3072, **_DISTILBERT,
                                     fine_tuning=FineTuningDefaults(5e-5),
                                     description="DistilBERT-Base (Sanh et al. 2019): no "
                                                 "segment embeddings, relu pre-classifier"),
    "albert_base": EncoderPreset(12, 768, 12, 3072, **_ALBERT, vocabulary_size=30000,
                                 fine_tuning=FineTuningDefaults(3e-5),
                                 description="ALBERT-Base v2 (Lan et al. 2020): "
                                             "factorised embeddings, shared layers"),
    "electra_base": EncoderPreset(12, 768, 12, 3072, **_ELECTRA,
                                  fine_tuning=FineTuningDefaults(5e-5),
                                  description="ELECTRA-Base discriminator (Clark et al. 2020)"),
    "deberta_v3_base": EncoderPreset(12, 768, 12, 3072, **_DEBERTA_V3,
                                     fine_tuning=FineTuningDefaults(2e-5),
                                     description="DeBERTa-v3-Base (He et al. 2023): "
                                                 "disentangled relative attention"),
    "deberta_v3_small": EncoderPreset(6, 768, 12, 3072, **_DEBERTA_V3,
                                      fine_tuning=FineTuningDefaults(3e-5),
                                      description="DeBERTa-v3-Small: 6 layers of "
                                                  "DeBERTa-v3-Base's width"),
    "deberta_v3_xsmall": EncoderPreset(12, 384, 6, 1536, **_DEBERTA_V3,
                                       fine_tuning=FineTuningDefaults(5e-5),
                                       description="DeBERTa-v3-XSmall: 12 layers, 384 wide"),
    "modernbert_base": EncoderPreset(22, 768, 12, 1152, **_MODERNBERT,
                                     fine_tuning=FineTuningDefaults(5e-5),
                                     description="ModernBERT-base (Warner et al. 2024): rotary, "
                                                 "local/global attention, GeGLU, 8,192 tokens"),
    "modernbert_large": EncoderPreset(28, 1024, 16, 2624, **_MODERNBERT,
                                      fine_tuning=FineTuningDefaults(3e-5),
                                      description="ModernBERT-large (Warner et al. 2024)"),
    # Tiny members of each family, for tests and quick runs (random weights).
    "roberta_tiny": EncoderPreset(2, 128, 2, 512, **_ROBERTA,
                                  fine_tuning=FineTuningDefaults(3e-4),
                                  description="a tiny RoBERTa-layout encoder"),
    "distilbert_tiny": EncoderPreset(2, 128, 2, 512, **_DISTILBERT,
                                     fine_tuning=FineTuningDefaults(3e-4),
                                     description="a tiny DistilBERT-layout encoder"),
    "albert_tiny": EncoderPreset(2, 128, 2, 512, **dict(_ALBERT, embedding_dim=64),
                                 fine_tuning=FineTuningDefaults(3e-4),
                                 description="a tiny ALBERT-layout encoder"),
    "electra_tiny": EncoderPreset(2, 128, 2, 512, **dict(_ELECTRA, embedding_dim=64),
                                  fine_tuning=FineTuningDefaults(3e-4),
                                  description="a tiny ELECTRA-layout encoder (factorised "
                                              "embeddings, as ELECTRA-Small)"),
    "deberta_tiny": EncoderPreset(2, 128, 2, 512,
                                  **dict(_DEBERTA_V3, vocabulary_size=30522,
                                         position_buckets=32, max_relative_positions=128),
                                  fine_tuning=FineTuningDefaults(3e-4),
                                  description="a tiny DeBERTa-v3-layout encoder"),
    "modernbert_tiny": EncoderPreset(3, 128, 2, 192, **dict(_MODERNBERT, local_attention=16),
                                     fine_tuning=FineTuningDefaults(3e-4),
                                     description="a tiny ModernBERT-layout encoder (layers 0 "
                                                 "global, 1-2 a 16-token window)"),
}


def _task_presets():
    presets = {}
    for name in ENCODER_PRESETS:
        presets[f"{name}_classifier"] = TaskPreset(
            name, "classification", {"num_classes": 2},
            description=f"{name} + pooled-output classifier (single text)")
        presets[f"{name}_pair_classifier"] = TaskPreset(
            name, "classification", {"num_classes": 2}, {"paired_input": True},
            description=f"{name} + pooled-output classifier ([CLS] a [SEP] b [SEP])")
        presets[f"{name}_tagger"] = TaskPreset(
            name, "tagging", {"head": "softmax", "num_classes": 9},
            description=f"{name} + per-word softmax tagger (first subword)")
        presets[f"{name}_crf_tagger"] = TaskPreset(
            name, "tagging", {"head": "crf", "num_classes": 9},
            description=f"{name} + linear-chain CRF tagger over words")
        presets[f"{name}_span_ner"] = TaskPreset(
            name, "span_ner", {"num_classes": 5},
            description=f"{name} + span classifier over every span of <= L words")
        presets[f"{name}_question_answerer"] = TaskPreset(
            name, "question_answering",
            description=f"{name} + start/end head: extractive question answering (SQuAD)")
    return presets


TASK_PRESETS = _task_presets()
