"""Continued pretraining: a `Pretrainer` on a checkpoint's encoder, with its heads when it has them.

A Hugging Face `BertForPreTraining` / `BertForMaskedLM` checkpoint carries the
heads pretraining trained beside the encoder; they are loaded into our
`MaskedLMHead` and `NextSentenceHead`:

    cls.predictions.transform.dense      → mlm_head/transform  (Linear [out, in] transposed)
    cls.predictions.transform.LayerNorm  → mlm_head/layer_norm
    cls.predictions.bias                 → mlm_head/decoder/bias
                                            (or cls.predictions.decoder.bias)
    cls.predictions.decoder.weight       → not loaded: our decoder is tied to the word
                                            embeddings, which is what BERT's is
    cls.seq_relationship                 → nsp_head/logits  (its two rows swapped: Hugging
                                            Face's label 0 is "is next", ours is 1)

Sentence-transformers checkpoints (all-MiniLM-L6-v2 among them), KerasHub
backbone presets and our own encoder checkpoints have no heads: those start
from their initialiser, and `load_pretrainer` says which heads did. The SBO
head of `span_sbo` is SpanBERT's own and always starts fresh.

Examples (a tiny Hugging Face directory without heads):
>>> import os, tempfile
>>> from nlpzoo.zoo import build_encoder
>>> from nlpzoo.zoo.checkpoints import export_hf_checkpoint
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
>>> directory = os.path.join(tempfile.mkdtemp(), "hf")
>>> export_hf_checkpoint(build_encoder("bert_tiny", vocabulary_size=7), directory,
...                      vocabulary, lowercase=True)
>>> model, loaded = load_pretrainer(directory, "mlm")
>>> model.objective, loaded
('mlm', ())
"""

import logging

import numpy as np

from nlpzoo.zoo.checkpoints.common import (
    PlannedWeight,
    WeightSource,
    assign_weights,
    checkpoint_directory,
)
from nlpzoo.zoo.checkpoints.formats import HUGGINGFACE, checkpoint_format, load_encoder
from nlpzoo.zoo.checkpoints.huggingface import read_hf_weights

logger = logging.getLogger(__name__)

HF_MLM_PREFIX = "cls.predictions."
HF_NSP_PREFIX = "cls.seq_relationship."
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


def _nsp_head_plan(head):
    dense = head.logits_dense
    return [
        PlannedWeight(dense.kernel, (HF_NSP_PREFIX + "weight",), tuple(dense.kernel.shape)[::-1],
                      to_variable=_swapped_linear),
        PlannedWeight(dense.bias, (HF_NSP_PREFIX + "bias",), tuple(dense.bias.shape),
                      to_variable=_swapped),
    ]


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


def load_hf_pretraining_heads(model, path, tensors=None):
    """Sets a `Pretrainer`'s MLM (and NSP) head from a Hugging Face checkpoint's `cls.*` tensors.

    A head whose tensors are all absent is left as it is; one whose tensors
    are partly there, or of the wrong shape, fails without changing anything
    of that head.

    Args:
        model: a `tasks.pretraining.model.Pretrainer` on the checkpoint's encoder.
        path: the Hugging Face checkpoint directory.
        tensors: its tensors if already read (`read_hf_weights`).

    Returns:
        The names of the heads set ("mlm_head", "nsp_head"), in that order.

    Raises:
        ValueError: a head's tensors are incomplete or of the wrong shape (named).
    """
    path = checkpoint_directory(path)
    if tensors is None:
        tensors = read_hf_weights(path)
    heads = [(model.get_layer("mlm_head"), HF_MLM_PREFIX, _mlm_head_plan)]
    if model.objective == "mlm_nsp":
        heads.append((model.get_layer("nsp_head"), HF_NSP_PREFIX, _nsp_head_plan))
    loaded = []
    for head, prefix, plan in heads:
        found = {name: value for name, value in tensors.items() if name.startswith(prefix)}
        if not found:
            continue
        unused = assign_weights(plan(head), found, WeightSource(path, "checkpoint", "tensor"))
        if head.name == "mlm_head":
            _check_tied(found, head.decoder.get_embedding_layer(), path)
        if unused and unused != [HF_MLM_PREFIX + "decoder.weight"]:
            logger.info("%s: not used by %s: %s", path, head.name, ", ".join(unused))
        loaded.append(head.name)
    return tuple(loaded)


def load_pretrainer(path, objective="mlm", **overrides):
    """(a `Pretrainer` that continues pretraining from `path`, the heads it loaded).

    The encoder is `load_encoder(path, **overrides)` (any of the three
    formats); the MLM decoder (and the SBO decoder) are tied to its word
    embeddings. The heads a Hugging Face checkpoint carries (see the module
    docstring) are loaded; every other head starts from its initialiser and
    is logged as such.

    Args:
        path: a native, KerasHub or Hugging Face checkpoint directory.
        objective: "mlm", "mlm_nsp" or "span_sbo".
        **overrides: encoder fields for `load_encoder` (`dropout`, ...).

    Returns:
        (model, loaded): the uncompiled `Pretrainer` and the names of the
        heads set from the checkpoint, e.g. ("mlm_head",) or ().
    """
    from nlpzoo.tasks.pretraining.model import Pretrainer

    path = checkpoint_directory(path)
    encoder = load_encoder(path, **overrides)
    model = Pretrainer(encoder, objective=objective, name="pretrainer")
    loaded = ()
    if checkpoint_format(path) == HUGGINGFACE:
        loaded = load_hf_pretraining_heads(model, path)
    fresh = [layer.name for layer in model.layers
             if layer.name.endswith("_head") and layer.name not in loaded]
    if fresh:
        logger.info("%s holds no weights for %s: initialised at random", path,
                    ", ".join(fresh))
    return model, loaded
