"""Pretraining heads in checkpoints: BERT's masked-LM and next-sentence heads, read and kept.

A Hugging Face `BertForPreTraining` / `BertForMaskedLM` checkpoint carries the
heads pretraining trained beside the encoder; they are loaded into our
`MaskedLMHead` and `NextSentenceHead` (layers named "mlm_head", "nsp_head"):

    cls.predictions.transform.dense      → mlm_head/transform  (Linear [out, in] transposed)
    cls.predictions.transform.LayerNorm  → mlm_head/layer_norm
    cls.predictions.bias                 → mlm_head/decoder/bias
                                            (or cls.predictions.decoder.bias)
    cls.predictions.decoder.weight       → not loaded: our decoder is tied to the word
                                            embeddings, which is what BERT's is
    cls.seq_relationship                 → nsp_head/logits  (its two rows swapped: Hugging
                                            Face's label 0 is "is next", ours is 1)
    sop_classifier.classifier            → sop_head/logits  (ALBERT's sentence-order head,
                                            rows swapped likewise: its label 0 is "in order")

A native checkpoint written by tools/pretrain.py keeps its heads under the
same names and layouts (`head_tensors`, in `pretraining_heads.npz`), so one
plan reads both. Sentence-transformers checkpoints (all-MiniLM-L6-v2 among
them) and KerasHub backbone presets have none.

Examples:
>>> describe_head("mlm_head")
'masked-LM head (cls.predictions.*)'
"""

import logging
import os

import numpy as np

from nlpzoo.zoo.checkpoints.common import (
    PlannedWeight,
    WeightSource,
    assign_weights,
    checkpoint_directory,
)
from nlpzoo.zoo.checkpoints.huggingface import CONFIG_FILE, read_hf_weights
from nlpzoo.zoo.checkpoints.native import is_native_checkpoint, read_native_heads

logger = logging.getLogger(__name__)

HF_MLM_PREFIX = "cls.predictions."
HF_NSP_PREFIX = "cls.seq_relationship."
HF_SOP_PREFIX = "sop_classifier.classifier."
# Relative difference above which a stored decoder matrix is not the word embeddings.
_TIED_TOLERANCE = 1e-5


def _linear(value):
    return np.transpose(value)


def _swapped_linear(value):
    """[2, H] Linear weight, label 0 = is-next → [H, 2] kernel, label 1 = is-next."""
    return np.transpose(value[::-1])


def _swapped(value):
    return value[::-1]


def _mlm_head_plan(head):
    p = HF_MLM_PREFIX
    kernel = head.transform.kernel
    return [
        PlannedWeight(kernel, (p + "transform.dense.weight",), tuple(kernel.shape)[::-1],
                      to_variable=_linear),
        PlannedWeight(head.transform.bias, (p + "transform.dense.bias",),
                      tuple(head.transform.bias.shape)),
        PlannedWeight(head.layer_norm.gamma, (p + "transform.LayerNorm.weight",
                                              p + "transform.LayerNorm.gamma"),
                      tuple(head.layer_norm.gamma.shape)),
        PlannedWeight(head.layer_norm.beta, (p + "transform.LayerNorm.bias",
                                             p + "transform.LayerNorm.beta"),
                      tuple(head.layer_norm.beta.shape)),
        PlannedWeight(head.decoder.bias, (p + "bias", p + "decoder.bias"),
                      tuple(head.decoder.bias.shape)),
    ]


def _nsp_head_plan(head, prefix=HF_NSP_PREFIX):
    dense = head.logits_dense
    return [
        PlannedWeight(dense.kernel, (prefix + "weight",), tuple(dense.kernel.shape)[::-1],
                      to_variable=_swapped_linear),
        PlannedWeight(dense.bias, (prefix + "bias",), tuple(dense.bias.shape),
                      to_variable=_swapped),
    ]


def _sop_head_plan(head):
    return _nsp_head_plan(head, HF_SOP_PREFIX)


def _check_tied(tensors, embedding, directory):
    """Warns when the checkpoint's MLM decoder matrix is not its word embeddings."""
    decoder = tensors.get(HF_MLM_PREFIX + "decoder.weight")
    if decoder is None:
        return
    table = np.asarray(embedding.embeddings)
    difference = np.max(np.abs(decoder - table)) if decoder.shape == table.shape else np.inf
    if difference > _TIED_TOLERANCE * max(1.0, float(np.max(np.abs(table)))):
        logger.warning("%s: %sdecoder.weight is not the word embedding table; the MLM "
                       "decoder here is tied to the word embeddings, as in BERT, and that "
                       "matrix is not used", directory, HF_MLM_PREFIX)


_HEAD_PREFIXES = (HF_MLM_PREFIX, HF_NSP_PREFIX, HF_SOP_PREFIX)
# The heads a checkpoint may carry: their layer name → (tensor prefix, plan, what they are).
_HEADS = {
    "mlm_head": (HF_MLM_PREFIX, _mlm_head_plan, "masked-LM head"),
    "nsp_head": (HF_NSP_PREFIX, _nsp_head_plan, "next-sentence head"),
    "sop_head": (HF_SOP_PREFIX, _sop_head_plan, "sentence-order head"),
}
def describe_head(name):
    """What a head layer is, for messages: "masked-LM head (cls.predictions.*)".

    >>> describe_head("mlm_head")
    'masked-LM head (cls.predictions.*)'
    """
    prefix, _, what = _HEADS[name]
    return f"{what} ({prefix}*)"


def head_tensors(model):
    """The tensors of `model`'s pretraining heads ("mlm_head", "nsp_head": those it has),
    named and laid out as in a Hugging Face checkpoint (numpy arrays): what
    `save_encoder_checkpoint(..., heads=...)` keeps beside a native encoder."""
    tensors = {}
    for name, (prefix, plan, _) in _HEADS.items():
        if name not in {layer.name for layer in model.layers}:
            continue
        for planned in plan(model.get_layer(name)):
            value = np.asarray(planned.variable)
            if planned.to_variable is _linear:
                value = np.transpose(value)
            elif planned.to_variable is _swapped_linear:
                value = np.transpose(value)[::-1]
            elif planned.to_variable is _swapped:
                value = value[::-1]
            tensors[planned.source_names[0]] = np.ascontiguousarray(value, np.float32)
    return tensors


def read_head_tensors(path):
    """The pretraining-head tensors a checkpoint directory holds ({} when none).

    A Hugging Face checkpoint's `cls.*` tensors, a native checkpoint's
    `pretraining_heads.npz` (`native.read_native_heads`); KerasHub presets hold none.
    """
    path = checkpoint_directory(path)
    if is_native_checkpoint(path):
        return read_native_heads(path)
    if os.path.isfile(os.path.join(path, CONFIG_FILE)):
        return {name: value for name, value in read_hf_weights(path).items()
                if name.startswith(_HEAD_PREFIXES)}
    return {}


def load_pretraining_heads(model, path, tensors=None, required=()):
    """Sets the pretraining heads of `model` (layers "mlm_head", "nsp_head") from a checkpoint.

    A head whose tensors are all absent is left as it is (unless
    `required`); one whose tensors are partly there, or of the wrong shape,
    fails without changing anything of that head.

    Args:
        model: a model with layers of those names (a `Pretrainer`, a fill-mask model).
        path: a checkpoint directory of any format (`read_head_tensors`).
        tensors: its head tensors if already read.
        required: names of heads the checkpoint must hold.

    Returns:
        The names of the heads set, in `_HEADS` order.

    Raises:
        ValueError: a required head is missing (one line: what is missing and
            how to make a checkpoint with it), or a head's tensors are
            incomplete or of the wrong shape (named).
    """
    path = checkpoint_directory(path)
    if tensors is None:
        tensors = read_head_tensors(path)
    names = {layer.name for layer in model.layers}
    loaded = []
    for name, (prefix, plan, _) in _HEADS.items():
        if name not in names:
            continue
        found = {key: value for key, value in tensors.items() if key.startswith(prefix)}
        if not found:
            if name in required:
                raise ValueError(
                    f"{path} has no {describe_head(name)}, which this model needs; make a "
                    f"checkpoint with one by continued MLM pretraining: tools/pretrain.py "
                    f"--init_checkpoint={path} --objective=mlm --corpus=<text> "
                    "--model_dir=<run>, then use that run")
            continue
        head = model.get_layer(name)
        unused = assign_weights(plan(head), found, WeightSource(path, "checkpoint", "tensor"))
        if name == "mlm_head":
            _check_tied(found, head.decoder.get_embedding_layer(), path)
        if unused and unused != [HF_MLM_PREFIX + "decoder.weight"]:
            logger.info("%s: not used by %s: %s", path, name, ", ".join(unused))
        loaded.append(name)
    return tuple(loaded)
