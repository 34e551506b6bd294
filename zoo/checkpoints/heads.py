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

The other families' `*ForMaskedLM` checkpoints hold the same head under
their own names (`hf_mlm_head_names`: the names export writes), renamed to
the names above on reading: RoBERTa's and XLM-R's `lm_head.dense`,
`lm_head.layer_norm`, `lm_head.bias` (`lm_head.decoder` tied); ALBERT's
`predictions.dense`, `.LayerNorm`, `.bias` (at the embedding width, tied to
the factorised word embeddings); DistilBERT's `vocab_transform`,
`vocab_layer_norm`, `vocab_projector.bias`; an ELECTRA generator's
`generator_predictions.*`, `generator_lm_head.bias` (a discriminator,
`ElectraForPreTraining`, has no masked-LM head and is refused where one is
required); DeBERTa-v2's `lm_predictions.lm_head.*` (`legacy: false`; with
`legacy: true` BERT's own names); ModernBERT's `head.dense`, `head.norm` (no
bias), `decoder.bias` (a missing dense or decoder bias reads as zeros; a `head`
without a decoder, a task class's, is no masked-LM head). The head's activation and
epsilon are the encoder's (`layers.encoder_head_settings`), which is each family's.

A native checkpoint written by tools/pretrain.py keeps its heads under the
same (BERT) names and layouts (`head_tensors`, in `pretraining_heads.npz`), so one
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
from nlpzoo.zoo.checkpoints.hf_mlm_head_names import mlm_import_names
from nlpzoo.zoo.checkpoints.huggingface import CONFIG_FILE, read_hf_family, read_hf_weights
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
    plan = [
        PlannedWeight(kernel, (p + "transform.dense.weight",), tuple(kernel.shape)[::-1],
                      to_variable=_linear),
        PlannedWeight(head.transform.bias, (p + "transform.dense.bias",),
                      tuple(head.transform.bias.shape)),
        PlannedWeight(head.layer_norm.gamma, (p + "transform.LayerNorm.weight",
                                              p + "transform.LayerNorm.gamma"),
                      tuple(head.layer_norm.gamma.shape)),
        PlannedWeight(head.decoder.bias, (p + "bias", p + "decoder.bias"),
                      tuple(head.decoder.bias.shape)),
    ]
    if head.layer_norm.beta is not None:  # ModernBERT's head norm has none
        plan.append(PlannedWeight(head.layer_norm.beta, (p + "transform.LayerNorm.bias",
                                                         p + "transform.LayerNorm.beta"),
                                  tuple(head.layer_norm.beta.shape)))
    return plan


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


def hf_head_tensors(path, tensors=None):
    """The head tensors of a Hugging Face checkpoint directory under BERT's names: a
    family's masked-LM names (`hf_mlm_head_names.mlm_import_names`) renamed, then those
    `_HEADS` reads ({} when none). `tensors`: all of its tensors, if already read."""
    if tensors is None:
        tensors = read_hf_weights(path)
    renames = mlm_import_names(read_hf_family(path).model_type)
    renamed = {}
    for name, value in tensors.items():
        renamed.setdefault(renames.get(name, name), value)
    dense = renamed.get(HF_MLM_PREFIX + "transform.dense.weight")
    if dense is not None and renames:
        decoder = [HF_MLM_PREFIX + name for name in ("bias", "decoder.weight", "decoder.bias")
                   if HF_MLM_PREFIX + name in renamed]
        if not decoder:
            # A head without a decoder is a task class's (ModernBertForSequenceClassification's
            # `head`, named as its masked-LM head's), not a masked-LM head.
            renamed = {name: value for name, value in renamed.items()
                       if not name.startswith(HF_MLM_PREFIX)}
        else:
            # A module without a bias (ModernBERT's head.dense with classifier_bias=False,
            # its decoder with decoder_bias=False) computes what a zero bias does.
            renamed.setdefault(HF_MLM_PREFIX + "transform.dense.bias",
                               np.zeros(dense.shape[0], dense.dtype))
            table = renamed.get(HF_MLM_PREFIX + "decoder.weight")
            if table is not None and HF_MLM_PREFIX + "decoder.bias" not in renamed:
                renamed.setdefault(HF_MLM_PREFIX + "bias", np.zeros(table.shape[0], dense.dtype))
    return {name: value for name, value in renamed.items() if name.startswith(_HEAD_PREFIXES)}


def _missing_head(path, name):
    """What a checkpoint lacks, in its own names where it is a Hugging Face family's."""
    what = describe_head(name)
    if name == "mlm_head" and os.path.isfile(os.path.join(path, CONFIG_FILE)):
        family = read_hf_family(path)
        renames = mlm_import_names(family.model_type)
        if renames:
            dense = {ours: theirs for theirs, ours in renames.items()}[
                HF_MLM_PREFIX + "transform.dense.weight"]
            module = dense.split(".")[0]
            what = f"masked-LM head ({module}.*, as {family.class_prefix}ForMaskedLM holds it)"
    return what


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

    A Hugging Face checkpoint's `cls.*` tensors (another family's masked-LM
    head renamed to them: `hf_head_tensors`), a native checkpoint's
    `pretraining_heads.npz` (`native.read_native_heads`); KerasHub presets hold none.
    """
    path = checkpoint_directory(path)
    if is_native_checkpoint(path):
        return read_native_heads(path)
    if os.path.isfile(os.path.join(path, CONFIG_FILE)):
        return hf_head_tensors(path)
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
                    f"{path} has no {_missing_head(path, name)}, which this model needs; "
                    f"make a "
                    f"checkpoint with one by continued MLM pretraining: tools/pretrain.py "
                    f"--init_checkpoint={path} --objective=mlm --corpus=<text> "
                    "--model_dir=<run>, then use that run")
            continue
        head = model.get_layer(name)
        unused = assign_weights(plan(head), found, WeightSource(path, "checkpoint", "tensor"))
        if name == "mlm_head":
            _check_tied(found, head.decoder.get_embedding_layer(), path)
        if set(unused) - {HF_MLM_PREFIX + "decoder.weight", HF_MLM_PREFIX + "decoder.bias"}:
            logger.info("%s: not used by %s: %s", path, name, ", ".join(unused))
        loaded.append(name)
    return tuple(loaded)
