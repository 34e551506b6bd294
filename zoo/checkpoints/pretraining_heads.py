"""Continued pretraining: a `Pretrainer` on a checkpoint's encoder, with its heads when it has them.

A Hugging Face `BertForPreTraining` / `BertForMaskedLM` checkpoint carries the
heads pretraining trained beside the encoder, and a native checkpoint written
by tools/pretrain.py keeps them too (`zoo.checkpoints.heads`); they are loaded
into our `MaskedLMHead` and `NextSentenceHead` (the mapping is in that module).

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

from nlpzoo.zoo.checkpoints.common import checkpoint_directory
from nlpzoo.zoo.checkpoints.formats import load_encoder
from nlpzoo.zoo.checkpoints.heads import hf_head_tensors, load_pretraining_heads

logger = logging.getLogger(__name__)


def load_hf_pretraining_heads(model, path, tensors=None):
    """Sets a `Pretrainer`'s MLM (and NSP) head from a Hugging Face checkpoint's head tensors
    (`cls.*`, or another family's masked-LM head: `heads.hf_head_tensors`).

    `load_pretraining_heads` for a Hugging Face directory (`tensors`: all of
    its tensors, if already read).

    Returns:
        The names of the heads set ("mlm_head", "nsp_head"), in that order.

    Raises:
        ValueError: a head's tensors are incomplete or of the wrong shape (named).
    """
    path = checkpoint_directory(path)
    return load_pretraining_heads(model, path, hf_head_tensors(path, tensors))


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
    loaded = load_pretraining_heads(model, path)
    fresh = [layer.name for layer in model.layers
             if layer.name.endswith("_head") and layer.name not in loaded]
    if fresh:
        logger.info("%s holds no weights for %s: initialised at random", path,
                    ", ".join(fresh))
    return model, loaded
