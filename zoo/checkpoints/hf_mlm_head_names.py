"""The masked-LM head's tensor names in each family's `*ForMaskedLM` checkpoints.

Our `MaskedLMHead` is stored under BERT's names (`cls.predictions.*`: what
`heads.head_tensors` writes and native checkpoints keep); the other families
hold the same head (dense, activation, LayerNorm, decoder tied to the word
embeddings, its own bias) under their own modules. `MLM_HEAD_NAMES` maps
BERT's names to a family's: the export (`hf_task_heads.HEAD_ROWS`) renames
through it, the import (`heads.read_head_tensors`) through its inverse,
`mlm_import_names`. Checked against transformers 5.24's modeling code:

    family        dense                         LayerNorm                 bias / decoder
    roberta,      lm_head.dense (exact gelu)    lm_head.layer_norm        lm_head.bias,
    xlm-roberta                                                           lm_head.decoder
    albert        predictions.dense (hidden_act) predictions.LayerNorm    predictions.bias,
                  at the embedding width                                  predictions.decoder
    distilbert    vocab_transform (activation)  vocab_layer_norm (1e-12)  vocab_projector
    electra       generator_predictions.dense   generator_predictions     generator_lm_head
    (generator)   (exact gelu)                  .LayerNorm
    deberta-v2    lm_predictions.lm_head.dense  lm_predictions.lm_head    lm_predictions.lm_head
    (legacy=false) (hidden_act)                 .LayerNorm                .bias; no decoder
                                                                          module (the word
                                                                          embeddings)
    modernbert    head.dense (classifier_       head.norm (norm_eps, no   decoder.bias,
                  activation, classifier_bias)  bias: norm_bias=false)    decoder

An ELECTRA discriminator (`ElectraForPreTraining`) has no masked-LM head.
DebertaV2ForMaskedLM holds its head under BERT's names when its config says
`legacy: true` (transformers' default; `cls.predictions.*`, read as they are)
and under `lm_predictions.lm_head.*` with `legacy: false`, the layout of
DeBERTa's own code, which the export writes (with `legacy: false`); the import
reads both. ModernBERT's `head` is the `ModernBertPredictionHead` its task
classes share; a checkpoint without its dense bias (`classifier_bias: false`,
the Hub models') reads as a zero bias.

Examples:
>>> MLM_HEAD_NAMES["roberta"][0]
('cls.predictions.transform.dense.weight', 'lm_head.dense.weight')
>>> mlm_import_names("albert")["predictions.bias"]
'cls.predictions.bias'
>>> mlm_import_names("modernbert")["head.norm.weight"]
'cls.predictions.transform.LayerNorm.weight'
>>> mlm_import_names("bert")
{}
"""

_BERT = "cls.predictions."


def _mlm_names(dense, norm, bias, decoder):
    """BERT's masked-LM tensor names → a family's (its dense, LayerNorm, bias and decoder
    modules; the decoder's matrix is the tied word embeddings, named for the importer's
    check, and its bias, when it has its own name, is the head's bias; decoder None: the
    family's head multiplies by the word embeddings without a module of its own)."""
    names = tuple((f"{_BERT}transform.{ours}.{kind}", f"{theirs}.{kind}")
                  for ours, theirs in (("dense", dense), ("LayerNorm", norm))
                  for kind in ("weight", "bias"))
    names += ((f"{_BERT}bias", bias),)
    if decoder is None:
        return names
    names += ((f"{_BERT}decoder.weight", f"{decoder}.weight"),)
    if f"{decoder}.bias" != bias:
        names += ((f"{_BERT}decoder.bias", f"{decoder}.bias"),)
    return names


_ROBERTA = _mlm_names("lm_head.dense", "lm_head.layer_norm", "lm_head.bias", "lm_head.decoder")

# model_type → ((BERT's name, the family's name), ...); BERT's own are the identity.
MLM_HEAD_NAMES = {
    "roberta": _ROBERTA,
    "xlm-roberta": _ROBERTA,
    "distilbert": _mlm_names("vocab_transform", "vocab_layer_norm", "vocab_projector.bias",
                             "vocab_projector"),
    "albert": _mlm_names("predictions.dense", "predictions.LayerNorm", "predictions.bias",
                         "predictions.decoder"),
    "electra": _mlm_names("generator_predictions.dense", "generator_predictions.LayerNorm",
                          "generator_lm_head.bias", "generator_lm_head"),
    "deberta-v2": _mlm_names("lm_predictions.lm_head.dense", "lm_predictions.lm_head.LayerNorm",
                             "lm_predictions.lm_head.bias", None),
    "modernbert": _mlm_names("head.dense", "head.norm", "decoder.bias", "decoder"),
}


def mlm_import_names(model_type):
    """A family's masked-LM tensor names → BERT's `cls.predictions.*` names, which the
    importer reads; {} for BERT or a family without a masked-LM class.

    >>> mlm_import_names("roberta")["lm_head.dense.weight"]
    'cls.predictions.transform.dense.weight'
    """
    return {theirs: ours for ours, theirs in reversed(MLM_HEAD_NAMES.get(model_type, ()))}
