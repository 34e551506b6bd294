"""Every BERT-family checkpoint against `transformers`' own outputs, and back out.

The fixtures (tests/fixtures/families/<model_type>/) are tiny transformers models with
every parameter perturbed, saved with `save_pretrained`, and their outputs in float32
eval mode; tests/fixtures/make_family_reference.py makes them (and checks that our
export of each loads in transformers with identical outputs).
"""

import json
import logging
import os
import shutil

import numpy as np
import pytest

from nlpzoo.layers import transformer_of
from nlpzoo.zoo import build_encoder
from nlpzoo.zoo.checkpoints import export_hf_checkpoint, load_hf_encoder, read_hf_config
from nlpzoo.zoo.checkpoints.hf_families import FAMILIES, family_for_encoder

from tests.helpers.paths import ROOT

FAMILY_DIR = os.path.join(ROOT, "tests", "fixtures", "families")
MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra",
               "deberta-v2", "modernbert")
TOLERANCE = 1e-5


def _reference(model_type):
    with np.load(os.path.join(FAMILY_DIR, model_type, "reference.npz")) as stored:
        return {name: stored[name] for name in stored.files}


def _outputs(encoder, reference):
    ids = reference["input_ids"].astype("int32")
    outputs = encoder({"token_ids": ids,
                       "segment_ids": reference["token_type_ids"].astype("int32"),
                       "padding_mask": reference["attention_mask"].astype("int32")})
    return {"hidden_states": [np.asarray(state) for state in outputs["hidden_states"]],
            "pooled_output": np.asarray(outputs["pooled_output"])}


def _max_difference(states, expected, mask):
    real = mask.astype(bool)  # padding positions are not compared (HF gives them positions too)
    return max(float(np.abs(state - reference)[real].max())
               for state, reference in zip(states, expected))


@pytest.fixture(scope="module")
def loaded():
    return {model_type: load_hf_encoder(os.path.join(FAMILY_DIR, model_type), dropout=0.0,
                                        attention_dropout=0.0)
            for model_type in MODEL_TYPES}


@pytest.mark.parametrize("pack_length", [0, 4])
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_every_hidden_state_matches_transformers(loaded, model_type, pack_length):
    reference = _reference(model_type)
    encoder = loaded[model_type]
    transformer_of(encoder).pack_length = pack_length
    try:
        outputs = _outputs(encoder, reference)
    finally:
        transformer_of(encoder).pack_length = 0
    assert len(outputs["hidden_states"]) == len(reference["hidden_states"])
    assert _max_difference(outputs["hidden_states"], reference["hidden_states"],
                           reference["attention_mask"]) < TOLERANCE
    if "pooler_output" in reference:
        np.testing.assert_allclose(outputs["pooled_output"], reference["pooler_output"],
                                   atol=TOLERANCE)


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_export_then_import_round_trips(loaded, tmp_path, model_type):
    encoder = loaded[model_type]
    directory = tmp_path / "exported"
    export_hf_checkpoint(encoder, str(directory), model_type=model_type)
    with open(directory / "config.json", encoding="utf-8") as f:
        config = json.load(f)
    assert config["model_type"] == model_type
    assert config["architectures"] == [FAMILIES[model_type].architecture]
    original = read_hf_config(os.path.join(FAMILY_DIR, model_type))
    assert read_hf_config(directory) == dict(original, dropout=0.0, attention_dropout=0.0)
    again = load_hf_encoder(directory, dropout=0.0, attention_dropout=0.0)
    reference = _reference(model_type)
    first, second = _outputs(encoder, reference), _outputs(again, reference)
    assert _max_difference(second["hidden_states"], first["hidden_states"],
                           reference["attention_mask"]) == 0.0
    if FAMILIES[model_type].pooler is not None:
        np.testing.assert_array_equal(second["pooled_output"], first["pooled_output"])


@pytest.mark.parametrize("model_type, family_settings", [
    ("roberta", dict(position_offset=2, num_segments=1, max_sequence_length=24,
                     layer_norm_epsilon=1e-5, pooler_activation="tanh")),
    ("distilbert", dict(num_segments=0, pooler_activation="relu", embedding_dim=None)),
    ("albert", dict(embedding_dim=16, share_layers=True, gelu_approximate=True)),
    ("electra", dict(embedding_dim=16, share_layers=False, pooler_activation="gelu")),
    ("deberta-v2", dict(num_segments=0, absolute_positions=False, position_buckets=4,
                        relative_attention="disentangled", max_relative_positions=6,
                        layer_norm_epsilon=1e-7, pooler_activation="gelu")),
    ("modernbert", dict(norm_first=True, gated_feedforward=True, use_bias=False,
                        first_attention_norm=False, num_segments=0, absolute_positions=False,
                        global_rope_theta=100.0, local_rope_theta=10.0, local_attention=4,
                        global_attn_every_n_layers=2, layer_norm_epsilon=1e-5,
                        pooler_activation="gelu")),
])
def test_config_gives_the_family_settings(model_type, family_settings):
    config = read_hf_config(os.path.join(FAMILY_DIR, model_type))
    assert {name: config[name] for name in family_settings} == family_settings


@pytest.mark.parametrize("model_type, tensor", [
    ("roberta", "embeddings.token_type_embeddings.weight"),
    ("distilbert", "distilbert.transformer.layer.1.sa_layer_norm.weight"),
    ("albert", "encoder.embedding_hidden_mapping_in.bias"),
    ("albert", "encoder.albert_layer_groups.0.albert_layers.0.ffn_output.weight"),
    ("electra", "electra.embeddings_project.weight"),
    ("xlm-roberta", "roberta.embeddings.position_embeddings.weight"),
    ("deberta-v2", "deberta.encoder.rel_embeddings.weight"),
    ("deberta-v2", "deberta.encoder.LayerNorm.bias"),
    ("deberta-v2", "deberta.encoder.layer.1.attention.self.query_proj.weight"),
    ("modernbert", "model.layers.1.attn.Wqkv.weight"),
    ("modernbert", "model.final_norm.weight"),
])
def test_a_missing_tensor_names_itself(tmp_path, model_type, tensor):
    from safetensors.numpy import load_file, save_file

    directory = tmp_path / model_type
    shutil.copytree(os.path.join(FAMILY_DIR, model_type), directory)
    tensors = load_file(str(directory / "model.safetensors"))
    del tensors[tensor]
    save_file(tensors, str(directory / "model.safetensors"))
    with pytest.raises(ValueError, match=r"lacks 1 tensor\(s\).*: " + tensor.replace(".", r"\.")):
        load_hf_encoder(directory)


def test_a_checkpoint_without_pooler_says_so_in_one_line(caplog):
    with caplog.at_level(logging.INFO):
        load_hf_encoder(os.path.join(FAMILY_DIR, "electra"))
    lines = [record.getMessage() for record in caplog.records if "pooler" in record.getMessage()]
    assert len(lines) == 1 and "starts at random" in lines[0], lines


def test_albert_with_several_layer_groups_is_refused(tmp_path):
    directory = tmp_path / "albert"
    shutil.copytree(os.path.join(FAMILY_DIR, "albert"), directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps(dict(config, num_hidden_groups=2)))
    with pytest.raises(ValueError, match="num_hidden_groups=2"):
        read_hf_config(directory)


@pytest.mark.parametrize("field, value", [
    ("conv_kernel_size", 3), ("share_att_key", False), ("position_biased_input", True),
    ("norm_rel_ebd", "none"), ("pos_att_type", ["c2p"]), ("relative_attention", None),
])
def test_deberta_settings_we_do_not_compute_are_refused(tmp_path, field, value):
    directory = tmp_path / "deberta"
    shutil.copytree(os.path.join(FAMILY_DIR, "deberta-v2"), directory)
    config = json.loads((directory / "config.json").read_text())
    config[field] = value
    if value is None:
        del config[field]  # absent: the config class's default
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=f"{field}=.* is not supported"):
        read_hf_config(directory)


def test_deberta_max_relative_positions_below_one_is_the_position_count(tmp_path):
    directory = tmp_path / "deberta"
    shutil.copytree(os.path.join(FAMILY_DIR, "deberta-v2"), directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps(dict(config, max_relative_positions=-1)))
    assert read_hf_config(directory)["max_relative_positions"] == 24


@pytest.mark.parametrize("preset, model_type", [
    ("bert_tiny", "bert"), ("roberta_tiny", "roberta"), ("distilbert_tiny", "distilbert"),
    ("albert_tiny", "albert"), ("electra_tiny", "electra"), ("xlm_roberta_base", "roberta"),
    ("deberta_tiny", "deberta-v2"),
    ("modernbert_tiny", "modernbert"),
])
def test_each_tiny_preset_exports_as_its_family(preset, model_type):
    encoder = build_encoder(preset, vocabulary_size=30, num_layers=1, hidden_dim=16,
                            intermediate_dim=32, num_heads=2)
    assert family_for_encoder(transformer_of(encoder)).model_type == model_type


def test_one_segment_type_ignores_segment_ids_and_none_has_no_table():
    ids = np.array([[2, 9, 7, 3, 8, 3]], "int32")
    features = {"token_ids": ids, "padding_mask": np.ones_like(ids)}
    for preset in ("roberta_tiny", "distilbert_tiny"):
        encoder = build_encoder(preset, vocabulary_size=30, dropout=0.0)
        zeros = encoder(dict(features, segment_ids=np.zeros_like(ids)))["sequence_output"]
        pair = encoder(dict(features, segment_ids=np.array([[0, 0, 0, 0, 1, 1]], "int32")))
        np.testing.assert_array_equal(np.asarray(zeros), np.asarray(pair["sequence_output"]))
    distilbert = transformer_of(build_encoder("distilbert_tiny", vocabulary_size=30))
    assert distilbert.embeddings.segment_embedding is None
    assert not any("segment" in variable.path for variable in distilbert.weights)


def test_deberta_exports_with_a_tokenizer_smaller_than_its_embedding_table(tmp_path):
    """microsoft/deberta-v3-*: 128,100 embedding rows for 128,001 tokens."""
    from nlpzoo.zoo import load_tokenizer

    tokenizer = load_tokenizer(os.path.join(ROOT, "tests", "fixtures", "tokenizers",
                                            "deberta_v3_spm", "legacy"))
    encoder = build_encoder("deberta_tiny", vocabulary_size=tokenizer.vocabulary_size + 99,
                            num_layers=1)
    export_hf_checkpoint(encoder, str(tmp_path / "hf"), tokenizer)
    assert read_hf_config(tmp_path / "hf")["vocabulary_size"] == 2600
    text = "Café  naïve\tZürich [MASK]."
    assert load_tokenizer(str(tmp_path / "hf")).encode(text) == tokenizer.encode(text)


@pytest.mark.parametrize("case", ["mean_pooling", "no_pooler_norm", "mean_subwords",
                                  "bert_pooler_norm"])
def test_heads_modernbert_cannot_hold_are_refused_in_one_line(tmp_path, case):
    """ModernBERT's task classes read `head` (dense, gelu, LayerNorm) over [CLS] or every
    token: a classifier without the encoder's pooler_norm (an encoder saved before it), a
    mean-pooled one, a tagger averaging subwords through the transform, and a BERT encoder
    given a pooler norm have no class, and are refused before anything is written."""
    from nlpzoo.tasks.tagging.model import SequenceTagger
    from nlpzoo.zoo import build_encoder, build_model, load_tokenizer
    from nlpzoo.zoo.checkpoints import export_hf_task_model

    tokenizer = load_tokenizer(os.path.join(ROOT, "tests", "fixtures", "tokenizers",
                                            "modernbert_bpe", "tokenizer_json"))
    size = dict(vocabulary_size=tokenizer.vocabulary_size)
    model, message = {
        "mean_pooling": lambda: (build_model("modernbert_tiny_classifier", num_classes=2,
                                             pooling="mean", **size), "pooling='mean'"),
        "no_pooler_norm": lambda: (build_model("modernbert_tiny_classifier", num_classes=2,
                                               pooler_norm=False, **size), "pooler_norm=False"),
        "mean_subwords": lambda: (SequenceTagger(build_encoder("modernbert_tiny", **size), 3,
                                                 subword_aggregation="mean"),
                                  "subword_aggregation='mean'"),
        "bert_pooler_norm": lambda: (build_model("bert_tiny_classifier", num_classes=2,
                                                 pooler_norm=True, **size),
                                     "pooler_norm=True"),
    }[case]()
    with pytest.raises(ValueError, match=message) as error:
        export_hf_task_model(model, str(tmp_path / "out"), vocabulary=tokenizer)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()


def test_a_modernbert_task_model_without_pooler_norm_has_no_transform():
    """Defaults keep old behaviour: an encoder without `pooler_norm` (every family but
    ModernBERT, and ModernBERT models saved before the option) gives taggers and question
    answerers no head transform, and its pooler no norm."""
    from nlpzoo.zoo import build_model

    old = build_model("modernbert_tiny_tagger", num_classes=3, pooler_norm=False,
                      vocabulary_size=50)
    new = build_model("modernbert_tiny_tagger", num_classes=3, vocabulary_size=50)
    assert "head_transform" not in {layer.name for layer in old.layers}
    assert "head_transform" in {layer.name for layer in new.layers}
    assert old.encoder.transformer.pooler_layer_norm is None
    assert new.encoder.transformer.get_config()["pooler_norm"] is True


def test_modernbert_config_of_the_hub_layout_reads_too(tmp_path):
    """answerdotai/ModernBERT-base's config.json (transformers 4.x) has no layer_types nor
    rope_parameters: global_attn_every_n_layers and global/local_rope_theta say it."""
    directory = tmp_path / "modernbert"
    shutil.copytree(os.path.join(FAMILY_DIR, "modernbert"), directory)
    config = json.loads((directory / "config.json").read_text())
    for field in ("layer_types", "rope_parameters"):
        del config[field]
    hub = dict(config, global_attn_every_n_layers=3, global_rope_theta=160000.0,
               local_rope_theta=10000.0, num_hidden_layers=4)
    (directory / "config.json").write_text(json.dumps(hub))
    read = read_hf_config(directory)
    assert (read["global_attn_every_n_layers"], read["global_rope_theta"],
            read["local_rope_theta"], read["num_layers"]) == (3, 160000.0, 10000.0, 4)
    odd = dict(config, layer_types=["sliding_attention", "full_attention", "full_attention"])
    (directory / "config.json").write_text(json.dumps(odd))
    with pytest.raises(ValueError, match="layer_types=.*not every n-th layer global"):
        read_hf_config(directory)
    (directory / "config.json").write_text(json.dumps(dict(config, norm_bias=True)))
    with pytest.raises(ValueError, match="norm_bias=True is not supported"):
        read_hf_config(directory)
