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
    None means "as `dropout`").
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
    "albert_base": EncoderPreset(12, 768, 12, 3072, vocabulary_size=30000,
                                 embedding_dim=128, share_layers=True,
                                 gelu_approximate=True, dropout=0.0,
                                 attention_dropout=0.0, layer_norm_epsilon=1e-12,
                                 fine_tuning=FineTuningDefaults(3e-5),
                                 description="ALBERT-Base (Lan et al. 2020): "
                                             "factorised embeddings, shared layers"),
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
