"""The model zoo: named presets that build compiled Keras models.

>>> from nlpzoo.zoo import build_model
>>> model = build_model("bert_tiny_classifier", num_classes=6, vocabulary_size=1000)
>>> model.output_shape
(None, 6)
"""

# The built-in task families register themselves (the registry imports none of them).
from nlpzoo.tasks import builtin as _builtin_tasks  # noqa: F401
from nlpzoo.zoo.builder import (
    build_encoder,
    build_model,
    build_task_model,
    check_adaptation,
    get_preset,
    list_presets,
    load_pretrained,
)
from nlpzoo.zoo.checkpoints import (
    export_hf_task_model,
    load_encoder,
    load_hf_encoder,
    load_hf_tokenizer,
    load_tokenizer,
)
from nlpzoo.zoo.presets import ENCODER_PRESETS, TASK_PRESETS, EncoderPreset, TaskPreset

__all__ = [
    "ENCODER_PRESETS",
    "TASK_PRESETS",
    "EncoderPreset",
    "TaskPreset",
    "build_encoder",
    "build_model",
    "build_task_model",
    "check_adaptation",
    "export_hf_task_model",
    "get_preset",
    "list_presets",
    "load_encoder",
    "load_hf_encoder",
    "load_hf_tokenizer",
    "load_pretrained",
    "load_tokenizer",
]
