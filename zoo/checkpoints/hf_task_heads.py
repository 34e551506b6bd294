"""Hugging Face export of a fine-tuned task model *with* its head (`BertFor...` classes).

`export_hf_checkpoint` writes an encoder alone (`BertModel`). This module
writes a trained task model so that `transformers.AutoModelFor<...>
.from_pretrained(directory)` loads it with its labels (`id2label`,
`label2id`) and gives the logits ours give (float32, to rounding):

=====================  ====================================  ==========================
our model              transformers class (BERT row)         head tensors
=====================  ====================================  ==========================
Classifier             BertForSequenceClassification         bert.pooler.dense,
                       (single label, regression:            classifier
                       num_labels=1, multi-label)
SequenceTagger         BertForTokenClassification            classifier (+ CRF file)
(softmax or CRF)
FillMaskModel,         BertForMaskedLM                       cls.predictions.*
Pretrainer ("mlm")     (BertForPreTraining with NSP)         (+ cls.seq_relationship)
QuestionAnswerer       BertForQuestionAnswering              qa_outputs
anything else          BertModel + head_weights.safetensors  (Keras variable paths)
(span NER, ...)
=====================  ====================================  ==========================

RoBERTa, XLM-R, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2 and ModernBERT export as
their own `<Family>For...` classes (`HEAD_ROWS`' comment lists their head tensors),
and the model's tokenizer of any kind goes with it
(`hf_tokenizers.export_hf_tokenizer`).

The table is `HEAD_ROWS`, keyed by the encoder family (config.json's
`model_type`, as `export_hf_checkpoint` writes it) and the head kind
(`head_kind`); another family is another row (its class names, the prefix
of its encoder's tensors, the names of its head's tensors and the
activation its sequence classifier applies to the first token's vector).

How each head maps:

- A sequence classifier in transformers computes
  `out(dropout(act(dense(h[CLS]))))`. Ours maps when its vector is BERT's
  pooler (`pooling="pooler"`: the pooler is that dense, tanh) or the first
  token's vector through one hidden layer of the encoder's width with that
  activation (`pooling="cls"`, `head_hidden_dim=hidden_dim`); mean or max
  pooling, a plain [CLS] vector, or another hidden width have no class and
  are refused, as is a layer mix (`layer_mix`: the class reads the last
  layer). Regression exports `num_labels=1`, `problem_type="regression"`;
  multi-label `problem_type="multi_label_classification"`, with the tuned
  per-label thresholds in `label_thresholds.json` (`THRESHOLDS_FILE`).
- A tagger's emission layer is the token classifier; transformers gives
  logits for every token, ours read a word from its first subword (or its
  last: `subword_aggregation="last"`; "mean": the mean of its subwords'
  logits, which equals ours as the layer is linear); the card says which.
  "max" (the max over subword vectors before the layer) and casing features
  (a word-shape embedding beside the vector) are refused. A CRF's
  `transitions` [from, to], `start_transitions`, `end_transitions` and its
  constraint masks go into `crf_transitions.safetensors` (`CRF_FILE`).
- The masked-LM head is `heads.head_tensors`'s (the names the importer
  reads back); its decoder is tied to the word embeddings, as
  `BertForMaskedLM` ties it.
- Heads no transformers class holds (span NER's span scorer, ...): the
  encoder is exported as `BertModel`, and every other weight of the model
  goes into `head_weights.safetensors` under its Keras variable path, with
  the model's class and head config in `head_config.json`.

Nothing of the model is dropped silently: weights no row maps (an SBO head
beside a masked-LM head) go into `head_weights.safetensors` too.

Examples:
>>> import json, os, tempfile
>>> from nlpzoo.zoo import build_model
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
>>> model = build_model("bert_tiny_classifier", num_classes=2, vocabulary_size=7,
...                     labels=["neg", "pos"])
>>> directory = os.path.join(tempfile.mkdtemp(), "hf")
>>> result = export_hf_task_model(model, directory, vocabulary=vocabulary, lowercase=True)
>>> result.architecture, result.labels
('BertForSequenceClassification', ('neg', 'pos'))
>>> config = json.load(open(os.path.join(directory, "config.json")))
>>> config["id2label"], config["problem_type"]
({'0': 'neg', '1': 'pos'}, 'single_label_classification')
"""

import dataclasses
import json
import logging
import os
import shutil
import tempfile

import numpy as np

from nlpzoo.layers import encoder_head_settings, transformer_of
from nlpzoo.tasks.io.json_text import read_json_file
from nlpzoo.zoo.checkpoints.hf_mlm_head_names import MLM_HEAD_NAMES
from nlpzoo.zoo.checkpoints.huggingface import (
    CONFIG_FILE,
    SAFETENSORS_FILE,
    export_hf_checkpoint,
    read_hf_weights,
)

logger = logging.getLogger(__name__)

CRF_FILE = "crf_transitions.safetensors"
THRESHOLDS_FILE = "label_thresholds.json"
HEAD_WEIGHTS_FILE = "head_weights.safetensors"
HEAD_CONFIG_FILE = "head_config.json"
_SAFETENSORS_METADATA = {"format": "pt"}
_MARKER = ".nlpzoo"  # tasks.io.ownership.MARKER: the scratch export's, not carried over

# Head kinds (`head_kind`).
SEQUENCE_CLASSIFICATION = "sequence_classification"
TOKEN_CLASSIFICATION = "token_classification"
MASKED_LM = "masked_lm"
PRETRAINING = "pretraining"  # masked LM + next sentence
QUESTION_ANSWERING = "question_answering"


@dataclasses.dataclass(frozen=True)
class HeadRow:
    """How one encoder family's transformers class holds one kind of head.

    architecture / auto_class: the class written to config.json and the Auto
    class that loads it; prefix: what the encoder's tensor names get
    ("bert."); pooler: whether the class keeps the encoder's pooler; names:
    our part of the head → the tensor name (without ".weight"/".bias") or,
    for "mlm", a map from BERT's `cls.predictions.*` names to the family's
    (`hf_mlm_head_names.MLM_HEAD_NAMES`);
    cls_activation: what a sequence classifier applies after its dense layer
    over the first token ("tanh" for BERT's pooler); mlm_activation: the
    masked-LM head's activation ("hidden_act": the encoder's, or "gelu":
    exact GELU whatever the encoder's); mlm_epsilon: its LayerNorm's epsilon
    (None: the encoder's `layer_norm_eps`); dropout_field: the config.json
    field of the head's dropout; head_norm: the class's head ends with a
    LayerNorm after its activation (ModernBERT's `ModernBertPredictionHead`:
    our pooler with `pooler_norm=True`, or the tagger's and question answerer's
    `head_transform`, named "transform" in `names`); head_config: config.json
    fields the class's head reads, written with it; mlm_norm_bias: whether the
    masked-LM head's LayerNorm has a bias (ModernBERT's has none).
    """

    architecture: str
    auto_class: str
    prefix: str
    pooler: bool = False
    names: tuple = ()
    cls_activation: str = None
    mlm_activation: str = "hidden_act"
    mlm_epsilon: float = None
    dropout_field: str = "classifier_dropout"
    head_norm: bool = False
    head_config: tuple = ()
    mlm_norm_bias: bool = True

    def name(self, part):
        return dict(self.names)[part]


def _family_rows(model_type, class_prefix, prefix, cls_names, cls_activation, mlm=None,
                 cls_pooler=False, token_names=(("output", "classifier"),),
                 qa_names=(("output", "qa_outputs"),), mlm_config=(), **options):
    """The four rows of a family: sequence and token classification, QA, masked LM.

    cls_names: the sequence classifier's (dense over the first token, output[, its
    LayerNorm]) modules; token_names, qa_names: the token classifier's and question
    answerer's parts (BERT's: one output layer); mlm_config: the config.json fields
    the masked-LM class reads (its `head_config`); mlm: the family's `MLM_HEAD_NAMES`
    map, None when the family's masked-LM class does not match our head; cls_pooler: the
    sequence classifier's dense is the encoder's pooler (ALBERT), so that class keeps it.
    """
    def row(kind, names, **more):
        return HeadRow(f"{class_prefix}For{kind}", f"AutoModelFor{kind}", prefix,
                       names=names, **dict(options, **more))

    cls_parts = ("cls_dense", "output", "cls_norm")
    rows = {
        (model_type, SEQUENCE_CLASSIFICATION): row(
            "SequenceClassification", tuple(zip(cls_parts, cls_names)),
            cls_activation=cls_activation, pooler=cls_pooler),
        (model_type, TOKEN_CLASSIFICATION): row("TokenClassification", token_names),
        (model_type, QUESTION_ANSWERING): row("QuestionAnswering", qa_names),
    }
    if mlm is not None:
        rows[(model_type, MASKED_LM)] = row("MaskedLM", (("mlm", mlm),), head_config=mlm_config)
    return rows


# (model_type, head kind) → row; checked against transformers 5.24's modeling code
# (tests/fixtures/check_hf_head_export.py loads each class and compares the logits):
#
#   family       sequence classifier                     masked LM (decoder tied)
#   bert         bert.pooler.dense tanh, classifier      cls.predictions.*
#   roberta,     classifier.dense tanh,                  lm_head.dense (gelu),
#   xlm-roberta  classifier.out_proj                     lm_head.layer_norm, lm_head.bias
#   distilbert   pre_classifier relu, classifier         vocab_transform (activation),
#                                                        vocab_layer_norm (1e-12),
#                                                        vocab_projector.bias
#   albert       albert.pooler tanh, classifier          predictions.dense (hidden_act),
#                                                        predictions.LayerNorm, .bias
#   electra      classifier.dense gelu,                  generator_predictions.dense (gelu),
#                classifier.out_proj                     generator_predictions.LayerNorm,
#                                                        generator_lm_head.bias
#   deberta-v2   pooler.dense gelu (ContextPooler),      lm_predictions.lm_head.* (written
#                classifier                              with legacy=false; no decoder)
#   modernbert   head.dense gelu, head.norm (no bias),   head.dense (exact gelu), head.norm
#                classifier; token classification and    (no bias), decoder.bias
#                QA: head over every token, classifier
#
# Token classification is `classifier`, question answering `qa_outputs` in every family
# but ModernBERT (its `head` then `classifier`, QA's two columns start and end); only
# BERT has a class with a next-sentence head (ALBERT's is sentence order).
HEAD_ROWS = {
    ("bert", SEQUENCE_CLASSIFICATION): HeadRow(
        "BertForSequenceClassification", "AutoModelForSequenceClassification", "bert.",
        pooler=True, names=(("cls_dense", "bert.pooler.dense"), ("output", "classifier")),
        cls_activation="tanh"),
    ("bert", TOKEN_CLASSIFICATION): HeadRow(
        "BertForTokenClassification", "AutoModelForTokenClassification", "bert.",
        names=(("output", "classifier"),)),
    ("bert", MASKED_LM): HeadRow(
        "BertForMaskedLM", "AutoModelForMaskedLM", "bert.", names=(("mlm", ()),)),
    ("bert", PRETRAINING): HeadRow(
        "BertForPreTraining", "AutoModelForPreTraining", "bert.", pooler=True,
        names=(("mlm", ()),)),
    ("bert", QUESTION_ANSWERING): HeadRow(
        "BertForQuestionAnswering", "AutoModelForQuestionAnswering", "bert.",
        names=(("output", "qa_outputs"),)),
    **_family_rows("roberta", "Roberta", "roberta.", ("classifier.dense", "classifier.out_proj"),
                   "tanh", MLM_HEAD_NAMES["roberta"], mlm_activation="gelu"),
    **_family_rows("xlm-roberta", "XLMRoberta", "roberta.",
                   ("classifier.dense", "classifier.out_proj"), "tanh",
                   MLM_HEAD_NAMES["xlm-roberta"], mlm_activation="gelu"),
    **_family_rows("distilbert", "DistilBert", "distilbert.", ("pre_classifier", "classifier"),
                   "relu", MLM_HEAD_NAMES["distilbert"],
                   mlm_epsilon=1e-12, dropout_field="seq_classif_dropout"),
    **_family_rows("albert", "Albert", "albert.", ("albert.pooler", "classifier"), "tanh",
                   MLM_HEAD_NAMES["albert"],
                   cls_pooler=True, dropout_field="classifier_dropout_prob"),
    **_family_rows("electra", "Electra", "electra.", ("classifier.dense", "classifier.out_proj"),
                   "gelu", MLM_HEAD_NAMES["electra"],
                   mlm_activation="gelu"),
    **_family_rows("deberta-v2", "DebertaV2", "deberta.", ("pooler.dense", "classifier"), "gelu",
                   MLM_HEAD_NAMES["deberta-v2"], dropout_field="pooler_dropout",
                   mlm_config=(("legacy", False),)),
    # ModernBertPredictionHead: dense (classifier_bias; ours has a bias), classifier_activation,
    # LayerNorm without bias (norm_bias=False, the encoder's); [CLS] pooling.
    **_family_rows("modernbert", "ModernBert", "model.", ("head.dense", "classifier", "head.norm"),
                   "gelu", MLM_HEAD_NAMES["modernbert"], mlm_activation="gelu",
                   mlm_norm_bias=False,
                   mlm_config=(("classifier_activation", "gelu"), ("classifier_bias", True),
                               ("decoder_bias", True)),
                   token_names=(("transform", "head"), ("output", "classifier")),
                   qa_names=(("transform", "head"), ("output", "classifier")),
                   head_norm=True, head_config=(("classifier_pooling", "cls"),
                                                ("classifier_bias", True))),
}

# The pipeline tag of each kind (the card's front matter).
PIPELINE_TAGS = {
    SEQUENCE_CLASSIFICATION: "text-classification",
    TOKEN_CLASSIFICATION: "token-classification",
    MASKED_LM: "fill-mask", PRETRAINING: "fill-mask",
    QUESTION_ANSWERING: "question-answering",
}


@dataclasses.dataclass(frozen=True)
class HFTaskExport:
    """What `export_hf_task_model` wrote: the class, labels, extra files and card notes."""

    directory: str
    architecture: str
    auto_class: str
    kind: str
    labels: tuple
    extra_files: tuple
    notes: tuple


def head_kind(model):
    """The kind of head `model` has (a key of `HEAD_ROWS` with a family), or None for one
    that no transformers class holds (its weights then go into `HEAD_WEIGHTS_FILE`).

    >>> from nlpzoo.zoo import build_model
    >>> head_kind(build_model("bert_tiny_tagger", num_classes=3, vocabulary_size=30))
    'token_classification'
    >>> head_kind(build_model("bert_tiny_span_ner", vocabulary_size=30)) is None
    True
    """
    from nlpzoo.tasks.classification.model import Classifier
    from nlpzoo.tasks.question_answering.model import QuestionAnswerer
    from nlpzoo.tasks.tagging.model import SequenceTagger

    if isinstance(model, Classifier):
        return SEQUENCE_CLASSIFICATION
    if isinstance(model, SequenceTagger):
        return TOKEN_CLASSIFICATION
    if isinstance(model, QuestionAnswerer):
        return QUESTION_ANSWERING
    names = {layer.name for layer in model.layers}
    if "mlm_head" in names:
        return PRETRAINING if "nsp_head" in names else MASKED_LM
    return None


def _encoder_of(model):
    encoder = getattr(model, "encoder", None)
    if encoder is None:
        try:
            encoder = model.get_layer("encoder")
        except ValueError:
            raise ValueError(f"{type(model).__name__} {model.name!r} has no encoder (a layer "
                             "named 'encoder') to export") from None
    return encoder


def _numpy(variable):
    import keras

    return np.asarray(keras.ops.convert_to_numpy(variable), dtype=np.float32)


def _linear(prefix, dense, tensors, covered):
    """A Keras Dense layer as a torch Linear: `prefix.weight` [out, in] and `prefix.bias`."""
    tensors[prefix + ".weight"] = np.ascontiguousarray(_numpy(dense.kernel).T)
    tensors[prefix + ".bias"] = _numpy(dense.bias)
    covered.update(id(variable) for variable in dense.weights)


def _norm(prefix, layer_norm, tensors, covered):
    """A Keras LayerNormalization as a torch LayerNorm (`.bias` only when it has one)."""
    tensors[prefix + ".weight"] = _numpy(layer_norm.gamma)
    if layer_norm.beta is not None:
        tensors[prefix + ".bias"] = _numpy(layer_norm.beta)
    covered.update(id(variable) for variable in layer_norm.weights)


def _token_transform(model, row, tensors, covered):
    """A tagger's or question answerer's `head_transform` as the row's "transform" module
    (dense, LayerNorm); whether there was one. Refuses a model and a class that differ."""
    names = {layer.name: layer for layer in model.layers}
    transform = names.get("head_transform")
    wanted = "transform" in dict(row.names)
    if (transform is not None) != wanted:
        raise ValueError(
            f"{row.architecture} has " + ("a" if wanted else "no")
            + " prediction head (dense, activation, LayerNorm) over each token; this model "
            + ("has none" if wanted else "has one (its encoder's pooler_norm=True)"))
    if transform is None:
        return False
    transformer = transformer_of(model.encoder)
    if (transform.activation != transformer.pooler_activation
            or transform.norm_bias != transformer.use_bias or not transform.use_bias):
        raise ValueError(f"the head transform's activation={transform.activation!r}, "
                         f"norm_bias={transform.norm_bias}, use_bias={transform.use_bias}: "
                         f"{row.architecture} reads the classifier_activation and norm_bias "
                         "its pooler's head has, with a dense bias")
    _linear(row.name("transform") + ".dense", transform.dense, tensors, covered)
    _norm(row.name("transform") + ".norm", transform.norm, tensors, covered)
    return True


def _head_config(model, row):
    """The config.json fields the class's head reads (ModernBERT's classifier_*)."""
    config = dict(row.head_config)
    if row.head_norm:
        config["classifier_activation"] = transformer_of(model.encoder).pooler_activation
    return config


def _refuse_layer_mix(encoder, architecture):
    layer_mix = getattr(encoder, "layer_mix", "last")
    if layer_mix != "last":
        raise ValueError(f"layer_mix={layer_mix!r}: the head reads a mix of the encoder's "
                         f"layers; {architecture} reads the last layer only")


def _activation_name(layer):
    import keras

    return keras.activations.serialize(layer.activation) if not isinstance(
        layer.activation, str) else layer.activation


def _options(model):
    return dict((getattr(model, "task_metadata", None) or {}).get("task_options") or {})


def _label_config(labels):
    labels = [str(label) for label in labels]
    return {"id2label": {str(i): label for i, label in enumerate(labels)},
            "label2id": {label: i for i, label in enumerate(labels)}}


# --- one function per head kind: (tensors, config, extra files, notes) -------------------

def _sequence_classification(model, row, labels, covered):
    """BERT's pooler (or the head's hidden layer) and the output layer."""
    _refuse_layer_mix(model.encoder, row.architecture)
    head = model.get_layer("classification_head")
    hidden_dim = transformer_of(model.encoder).hidden_dim
    tensors, notes = {}, []
    if model.pooling == "pooler":
        if head.hidden_layers:
            raise ValueError(f"head_hidden_dim={head.hidden_dim}: a hidden layer after the "
                             f"pooler; {row.architecture} has one dense layer over the first "
                             "token, the pooler, and none after it")
        pooler_activation = transformer_of(model.encoder).pooler_activation
        if pooler_activation != row.cls_activation:
            raise ValueError(f"pooling='pooler' with pooler_activation={pooler_activation!r}: "
                             f"{row.architecture} applies {row.cls_activation} to its "
                             "first-token dense layer")
        transformer = transformer_of(model.encoder)
        if transformer.pooler_norm != row.head_norm:
            raise ValueError(f"pooler_norm={transformer.pooler_norm}: {row.architecture}'s "
                             "head has " + ("a" if row.head_norm else "no")
                             + " LayerNorm after its activation")
        _linear(row.name("cls_dense"), transformer.pooler, tensors, covered)
        if row.head_norm:
            _norm(row.name("cls_norm"), transformer.pooler_layer_norm, tensors, covered)
    elif model.pooling == "cls" and len(head.hidden_layers) == 1 and not row.head_norm:
        hidden = head.hidden_layers[0]
        activation = _activation_name(hidden)
        if head.hidden_dim != hidden_dim or activation != row.cls_activation:
            raise ValueError(
                f"head_hidden_dim={head.hidden_dim} with {activation}: {row.architecture}'s "
                f"layer over the first token is {hidden_dim} wide with {row.cls_activation}")
        _linear(row.name("cls_dense"), hidden, tensors, covered)
        notes.append("The head's hidden layer over the [CLS] vector (`--pooling=cls`, "
                     f"`head_hidden_dim={hidden_dim}`) is exported as "
                     f"`{row.name('cls_dense')}`: the same dense + {activation}.")
    else:
        what = (f"pooling={model.pooling!r}" if model.pooling != "cls"
                else "pooling='cls' without a hidden layer")
        if row.head_norm:
            raise ValueError(f"{what}: {row.architecture} reads norm({row.cls_activation}("
                             "dense(first token))), the encoder's pooler with pooler_norm; "
                             "only pooling='pooler' maps onto it")
        raise ValueError(f"{what}: {row.architecture} reads {row.cls_activation}(dense(first "
                         "token)); only pooling='pooler', or 'cls' with one hidden layer "
                         "of the encoder's width, map onto it")
    _linear(row.name("output"), head.logits_dense, tensors, covered)

    options = _options(model)
    config, extra = {row.dropout_field: float(model.dropout), **_head_config(model, row)}, {}
    if options.get("objective") == "regression" or model.num_classes == 1:
        labels = list(labels) or ["score"]
        config.update(problem_type="regression", num_labels=1, **_label_config(labels[:1]))
        notes.append("Regression: the single logit is the predicted score "
                     "(`problem_type=\"regression\"`).")
    elif options.get("multi_label"):
        config.update(problem_type="multi_label_classification", num_labels=len(labels),
                      **_label_config(labels))
        thresholds = options.get("thresholds")
        thresholds = [0.5] * len(labels) if thresholds is None else list(thresholds)
        extra[THRESHOLDS_FILE] = {
            "thresholds": {label: float(t) for label, t in zip(labels, thresholds)},
            "rule": "a label is predicted when sigmoid(its logit) >= its threshold",
        }
        notes.append(f"Multi-label: one sigmoid per label; the per-label decision thresholds "
                     f"this model was tuned with are in `{THRESHOLDS_FILE}` ("
                     + ", ".join(f"{label} {float(t):.3f}" for label, t
                                 in zip(labels, thresholds)) + ").")
    else:
        config.update(problem_type="single_label_classification", num_labels=len(labels),
                      **_label_config(labels))
    if options.get("paired_input"):
        notes.append("Text pairs: feed `tokenizer(text, text_pair)` ([CLS] a [SEP] b [SEP], "
                     "token_type_ids 0 then 1), as the model was trained.")
    return tensors, config, extra, notes


_SUBWORD_NOTES = {
    "first": "its first subword",
    "last": "its last subword",
    "mean": "the mean of its subwords' logits (the classifier is linear, so this is exactly "
            "the logits of the mean of their vectors, which the model was trained on)",
}


def _token_classification(model, row, labels, covered):
    """The emission layer (and a CRF's transitions into `CRF_FILE`)."""
    _refuse_layer_mix(model.encoder, row.architecture)
    if model.casing_dim:
        raise ValueError(f"casing features (casing_dim={model.casing_dim}): each word's "
                         "shape embedding enters the tag scores beside its vector; "
                         f"{row.architecture} has no input for it (train with "
                         "--casing_features=false to export)")
    aggregation = model.subword_aggregation
    if aggregation not in _SUBWORD_NOTES:
        raise ValueError(f"subword_aggregation={aggregation!r}: the element-wise max of a "
                         "word's subword vectors goes into the tag layer; "
                         f"{row.architecture}'s per-token logits cannot give it")
    tensors = {}
    if _token_transform(model, row, tensors, covered) and aggregation == "mean":
        raise ValueError("subword_aggregation='mean' with the head transform: the mean of a "
                         "word's subword vectors goes through it (not linear), "
                         f"{row.architecture} transforms each token")
    _linear(row.name("output"), model.get_layer("emissions"), tensors, covered)
    config = {row.dropout_field: float(model.dropout), "num_labels": len(labels),
              **_label_config(labels), **_head_config(model, row)}
    notes = [f"transformers gives logits for every token; this model labels a word from "
             f"{_SUBWORD_NOTES[aggregation]} (`subword_aggregation={aggregation}`). Read "
             "the word's label there (e.g. with the fast tokenizer's `word_ids()`); the "
             "other subwords' and special tokens' logits were not trained."]
    if _options(model).get("context_sentences"):
        notes.append(f"The model was trained with `context_sentences="
                     f"{_options(model)['context_sentences']}`: the words of neighbouring "
                     "sentences around the sentence in the same input; feed them likewise.")
    extra = {}
    if model.crf is not None:
        crf = model.crf
        crf_tensors = {"transitions": _numpy(crf.transitions),
                       "start_transitions": _numpy(crf.start_transitions),
                       "end_transitions": _numpy(crf.end_transitions)}
        for name in ("allowed", "allowed_start", "allowed_end"):
            if getattr(crf, name) is not None:
                crf_tensors[name] = np.asarray(getattr(crf, name), np.float32)
        covered.update(id(variable) for variable in crf.weights)
        extra[CRF_FILE] = (crf_tensors, {
            "labels": json.dumps(list(labels)),
            "score": "start_transitions[y_1] + sum_i emissions[i, y_i] + sum_{i>1} "
                     "transitions[y_{i-1}, y_i] + end_transitions[y_n] over words",
            "forbidden": "allowed* == 0 adds -1e6 (tag scheme constraints), in training "
                         "and decoding",
            "emissions": "the classifier's logits at each word's token (see README.md)",
        })
        notes.append(f"CRF tagger: `{row.architecture}` gives the emission scores; the "
                     f"CRF's `transitions` [from tag, to tag], `start_transitions` and "
                     f"`end_transitions` (and the tag scheme's `allowed*` 0/1 masks, when "
                     f"constrained: a forbidden step scores -1e6) are in `{CRF_FILE}`. "
                     "Decode each sentence's word emissions with Viterbi over "
                     "start[y1] + sum emissions + sum transitions[y(i-1), y(i)] + end[y_n].")
    return tensors, config, extra, notes


def _masked_lm(model, row, labels, covered):
    """The masked-LM head (and NSP): `heads.head_tensors`, the importer's names."""
    from nlpzoo.zoo.checkpoints.heads import HF_MLM_PREFIX, HF_NSP_PREFIX, head_tensors

    _refuse_layer_mix(model.encoder, row.architecture)
    transformer = transformer_of(model.encoder)
    head = model.get_layer("mlm_head")
    activation = head.activation  # "gelu" (exact), GELU_APPROXIMATE or a Keras name
    if row.mlm_activation == "gelu":
        fits, theirs = activation == "gelu", "exact gelu"
    else:  # the encoder's hidden_act: exact gelu, or its tanh approximation
        fits = activation == encoder_head_settings(transformer)["activation"]
        theirs = "the encoder's hidden_act (gelu_approximate=" \
                 f"{transformer.gelu_approximate})"
    if not fits:
        raise ValueError(f"the masked-LM head's activation {activation!r}: "
                         f"{row.architecture}'s head uses {theirs}")
    epsilon = transformer.layer_norm_epsilon if row.mlm_epsilon is None else row.mlm_epsilon
    if abs(head.layer_norm_epsilon - epsilon) > 1e-15:
        whose = "the encoder's" if row.mlm_epsilon is None else "a fixed"
        raise ValueError(f"the masked-LM head's layer_norm_epsilon={head.layer_norm_epsilon}: "
                         f"{row.architecture}'s head uses {whose} {epsilon}")
    if head.layer_norm_bias != row.mlm_norm_bias:
        raise ValueError(f"the masked-LM head's layer_norm_bias={head.layer_norm_bias}: "
                         f"{row.architecture}'s head norm has "
                         + ("a bias" if row.mlm_norm_bias else "no bias"))
    renames = dict(row.name("mlm"))
    keep = (HF_MLM_PREFIX, HF_NSP_PREFIX) if row.pooler else (HF_MLM_PREFIX,)
    tensors = {renames.get(name, name): value for name, value in head_tensors(model).items()
               if name.startswith(keep)}
    heads = [model.get_layer(name) for name in ("mlm_head", "nsp_head")
             if name in {layer.name for layer in model.layers}]
    for layer in heads:
        # The decoder's table is the encoder's word embeddings (tied), exported with it.
        covered.update(id(variable) for variable in layer.weights)
    notes = [f"The masked-LM decoder is tied to the word embeddings, as in "
             f"{row.architecture}."]
    if row.pooler:
        notes.append("Next-sentence head: label 0 is \"b follows a\" (transformers' order).")
    return tensors, dict(row.head_config), {}, notes


def _question_answering(model, row, labels, covered):
    _refuse_layer_mix(model.encoder, row.architecture)
    tensors = {}
    _token_transform(model, row, tensors, covered)
    _linear(row.name("output"), model.get_layer("span_endpoints").dense, tensors, covered)
    notes = ["`start_logits` and `end_logits` are given for every token; this model let "
             "an answer start or end only in the context and at [CLS] (no answer), so mask "
             "the question's tokens before picking the best span."]
    return tensors, _head_config(model, row), {}, notes


_KIND_TENSORS = {
    SEQUENCE_CLASSIFICATION: _sequence_classification,
    TOKEN_CLASSIFICATION: _token_classification,
    MASKED_LM: _masked_lm,
    PRETRAINING: _masked_lm,
    QUESTION_ANSWERING: _question_answering,
}


def _leftover_weights(model, encoder, covered):
    """The model's weights outside the encoder and the mapped head, by Keras path."""
    encoder_ids = {id(variable) for variable in encoder.weights}
    leftovers = {}
    for variable in model.weights:
        if id(variable) in encoder_ids or id(variable) in covered:
            continue
        leftovers[variable.path] = _numpy(variable)
    return leftovers


def _plan(model, model_type, labels):
    """(row or None, kind, head tensors, config updates, extra files, notes, leftovers)."""
    encoder = _encoder_of(model)
    kind = head_kind(model)
    covered = set()
    if kind is None:
        row, tensors, config, extra, notes = None, {}, {}, {}, []
    else:
        row = HEAD_ROWS.get((model_type, kind))
        if row is None:
            raise ValueError(f"no transformers class for a {kind} head on a {model_type!r} "
                             f"encoder here yet (rows: "
                             f"{', '.join(sorted({t for t, k in HEAD_ROWS if k == kind}))})")
        tensors, config, extra, notes = _KIND_TENSORS[kind](model, row, labels, covered)
    leftovers = _leftover_weights(model, encoder, covered)
    if leftovers:
        extra[HEAD_WEIGHTS_FILE] = (leftovers, {"format": "keras-variable-paths"})
        extra[HEAD_CONFIG_FILE] = {
            "class": type(model).__name__,
            "task_config": (model._task_config() if hasattr(model, "_task_config") else {}),
            "labels": list(labels),
            "weights": sorted(leftovers),
        }
        what = ("The task head has no transformers class" if row is None
                else f"Weights {row.architecture} has no place for")
        notes.append(f"{what}: its weights are in `{HEAD_WEIGHTS_FILE}` under their Keras "
                     f"variable paths ({', '.join(sorted(leftovers)[:6])}"
                     f"{', ...' if len(leftovers) > 6 else ''}) and its settings in "
                     f"`{HEAD_CONFIG_FILE}`; transformers loads the encoder alone.")
    return row, kind, tensors, config, extra, notes


def _model_metadata(model, vocabulary, lowercase, labels):
    """(tokenizer, lowercase, labels): the tokenizer as a `SubwordTokenizer` (the model's
    preprocessor's, of any kind) or a WordPiece token list."""
    preprocessor = getattr(model, "preprocessor", None)
    metadata = getattr(model, "task_metadata", None) or {}
    if vocabulary is None:
        if preprocessor is None:
            raise ValueError("the model carries no tokenizer: give vocabulary= (a tokenizer, "
                             "or WordPiece tokens and lowercase=)")
        vocabulary = preprocessor.tokenizer()
    if lowercase is None:
        lowercase = (vocabulary.lowercase if _is_tokenizer(vocabulary)
                     else preprocessor.lowercase if preprocessor is not None else True)
    if labels is None:
        labels = metadata.get("labels")
    if labels is None:
        labels = [str(i) for i in range(int(model.output_shape[-1]))]
    if not _is_tokenizer(vocabulary):
        vocabulary = list(vocabulary)
    return vocabulary, bool(lowercase), [str(label) for label in labels]


def _is_tokenizer(vocabulary):
    return hasattr(vocabulary, "kind") and hasattr(vocabulary, "vocabulary")


def _save_extra(path, value):
    from safetensors.numpy import save_file

    from nlpzoo.tasks.io.atomic_files import write_json_atomically

    if isinstance(value, tuple):
        tensors, metadata = value
        save_file({name: np.ascontiguousarray(t) for name, t in tensors.items()}, path,
                  metadata=dict(metadata))
    else:
        write_json_atomically(value, path)


def _card_markdown(result):
    """A short model card for `result` (README.md); `zoo.runs.hf_task_export` writes the
    full one (command, software, sizes) through `write_card`."""
    if result.kind is None:
        load = ("Load the encoder with `transformers.AutoModel.from_pretrained(\"<this "
                "directory>\")`; the task head has no transformers class (see below).")
    else:
        load = (f"Load it with `transformers.{result.auto_class}.from_pretrained(\"<this "
                f"directory>\")` (`{result.architecture}`); its logits are the fine-tuned "
                "model's.")
    lines = ["---", "library_name: transformers"]
    if result.kind is not None:
        lines.append(f"pipeline_tag: {PIPELINE_TAGS[result.kind]}")
    lines += ["tags:", "- nlp-transfer-zoo", "---", "",
              f"# {result.architecture}: a fine-tuned model with its head", "",
              f"Exported by nlp-transfer-zoo. {load}", ""]
    if result.labels:
        lines += [f"Labels ({len(result.labels)}, in label-id order): "
                  + ", ".join(f"`{label}`" for label in result.labels), ""]
    if result.notes:
        lines += ["## Reading the outputs", ""] + [f"- {note}" for note in result.notes]
    return "\n".join(lines).rstrip("\n") + "\n"


def _write_card(directory, result):
    from nlpzoo.tasks.io.atomic_files import write_text_atomically

    write_text_atomically(os.path.join(directory, "README.md"), [_card_markdown(result)])


def export_hf_task_model(model, directory, *, vocabulary=None, lowercase=None, labels=None,
                         overwrite=False, write_card=None, model_type=None):
    """Writes a task model as a Hugging Face directory its `AutoModelFor...` class loads.

    See the module docstring for what maps to which class. The directory
    holds what `export_hf_checkpoint` writes (config.json with the class in
    `architectures`, `id2label`/`label2id`, `num_labels`, `problem_type`;
    model.safetensors with the class's names; vocab.txt;
    tokenizer_config.json), the extra files of heads or parts transformers
    has no class for, and a model card (README.md) saying how to read the
    logits. It is written into a temporary sibling and renamed into place.

    Args:
        model: a task model (`Classifier`, `SequenceTagger`, `FillMaskModel`,
            `Pretrainer`, `QuestionAnswerer`, or any model with an encoder).
        directory: the directory to create.
        vocabulary, lowercase, labels: the tokenizer (a `SubwordTokenizer` of
            any kind, or WordPiece tokens with `lowercase`) and the label
            names; by default those the model carries (`attach_metadata`).
            The tokenizer is written as its family's transformers class reads
            it (`hf_tokenizers.export_hf_tokenizer`).
        overwrite: replace an existing directory of ours.
        model_type: the family to write (`export_hf_checkpoint`'s); None: the
            encoder's options decide, XLM-R when a RoBERTa-layout encoder
            comes with XLM-R's SentencePiece tokenizer.
        write_card: `write_card(directory, result)` writes the model card
            (README.md) into the new directory; by default a short one with
            the class, labels and the notes on reading the outputs.

    Returns:
        An `HFTaskExport` (class, labels, extra files, the card's notes).

    Raises:
        ValueError: one line naming the option transformers has no class
            for (pooling, head_hidden_dim, layer_mix, subword_aggregation,
            casing features, ...), or what `export_hf_checkpoint` refuses;
            nothing is written then.
    """
    from safetensors.numpy import save_file

    from nlpzoo.tasks.io.atomic_files import write_directory_atomically, write_json_atomically
    from nlpzoo.tasks.io.ownership import check_replaceable
    check_replaceable(directory, None, overwrite=overwrite)
    directory = os.path.abspath(os.fspath(directory))
    encoder = _encoder_of(model)
    vocabulary, lowercase, labels = _model_metadata(model, vocabulary, lowercase, labels)
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{os.path.basename(directory)}.encoder-",
                                     dir=parent) as scratch:
        encoder_dir = os.path.join(scratch, "encoder")
        with _quiet_layer_mix_warning():
            export_hf_checkpoint(encoder, encoder_dir, vocabulary, lowercase,
                                 model_type=model_type)
        config = read_json_file(os.path.join(encoder_dir, CONFIG_FILE), dict)
        row, kind, head, config_updates, extra, notes = _plan(model, config["model_type"],
                                                              labels)
        encoder_tensors = read_hf_weights(encoder_dir)
        if row is not None:
            tensors = {row.prefix + name: value for name, value in encoder_tensors.items()
                       if row.pooler or not name.startswith("pooler.")}
            tensors.update(head)
            config.update(architectures=[row.architecture], **config_updates)
        else:
            tensors = encoder_tensors
        if "id2label" in config_updates:  # the labels transformers will report
            labels = [config["id2label"][str(i)] for i in range(config["num_labels"])]
        elif kind is not None:
            labels = []  # a masked LM or QA head has no label names
        result = HFTaskExport(
            directory, row.architecture if row else config["architectures"][0],
            row.auto_class if row else "AutoModel", kind, tuple(labels),
            tuple(sorted(extra)), tuple(notes))
        write_card = write_card or _write_card

        def write(temporary):
            for name in os.listdir(encoder_dir):
                if name not in (_MARKER, SAFETENSORS_FILE, CONFIG_FILE):
                    shutil.copy2(os.path.join(encoder_dir, name), os.path.join(temporary, name))
            save_file(tensors, os.path.join(temporary, SAFETENSORS_FILE),
                      metadata=_SAFETENSORS_METADATA)
            write_json_atomically(config, os.path.join(temporary, CONFIG_FILE))
            for name, value in extra.items():
                _save_extra(os.path.join(temporary, name), value)
            write_card(temporary, result)

        write_directory_atomically(directory, write, overwrite=overwrite)
    return result


class _quiet_layer_mix_warning:
    """Our exporter refuses a layer mix itself (or notes it); the encoder exporter's warning
    about it would only repeat that."""

    def __enter__(self):
        self._logger = logging.getLogger("nlpzoo.zoo.checkpoints.huggingface")
        self._level = self._logger.level
        self._logger.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        self._logger.setLevel(self._level)
