"""KerasHub presets of every BERT-family backbone (DeBERTa-v3 included) → our encoder and
tokenizer.

For each backbone KerasHub 0.32 has (`zoo.checkpoints.keras_hub_families`), a
tiny KerasHub backbone with perturbed random weights and its tokenizer (from the
fixture vocabularies and SentencePiece models) are saved with `save_to_preset`;
our `load_encoder` must give KerasHub's outputs on the same ids, and our
`load_tokenizer` KerasHub's ids.
"""

import json
import os

import h5py
import keras
import keras_hub
import numpy as np
import pytest

from nlpzoo.layers import transformer_of
from nlpzoo.zoo.checkpoints import checkpoint_format, load_encoder, load_tokenizer
from nlpzoo.zoo.checkpoints.keras_hub import read_keras_hub_config
from tests.helpers.family_fixtures import encoded_batch

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tokenizers")
TOLERANCE = 1e-5
SENTENCES = [
    "The cat sat on the mat.",
    "Hello world, this is a test of 42 tokens!",
    "Café opens at nine; naïve visitors queue early.",
    "short",
]
SHAPE = dict(num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16,
             max_sequence_length=32)


def _wordpiece_vocabulary():
    with open(os.path.join(FIXTURES, "bert_uncased_wordpiece", "tokenizer.json"),
              encoding="utf-8") as file:
        vocab = json.load(file)["model"]["vocab"]
    return sorted(vocab, key=vocab.get)


def _roberta_tokenizer():
    directory = os.path.join(FIXTURES, "roberta_bpe", "legacy")
    with open(os.path.join(directory, "vocab.json"), encoding="utf-8") as file:
        vocabulary = json.load(file)
    with open(os.path.join(directory, "merges.txt"), encoding="utf-8") as file:
        merges = [line.rstrip("\n") for line in file
                  if line.strip() and not line.startswith("#version")]
    return keras_hub.models.RobertaTokenizer(vocabulary=vocabulary, merges=merges)


def _perturb(backbone, seed):
    """Every weight gets noise, LayerNorms included, so that no mapping error hides."""
    rng = np.random.default_rng(seed)
    for variable in backbone.weights:
        value = keras.ops.convert_to_numpy(variable)
        variable.assign(value + rng.normal(0, 0.2, value.shape).astype(value.dtype))


# family → (backbone, tokenizer) builders.
FAMILIES = {
    "bert": lambda: (
        keras_hub.models.BertBackbone(vocabulary_size=2000, **SHAPE),
        keras_hub.models.BertTokenizer(vocabulary=_wordpiece_vocabulary(), lowercase=True,
                                       strip_accents=True)),
    "roberta": lambda: (
        keras_hub.models.RobertaBackbone(vocabulary_size=3000, **SHAPE),
        _roberta_tokenizer()),
    "xlm_roberta": lambda: (
        keras_hub.models.XLMRobertaBackbone(vocabulary_size=3002, **SHAPE),
        keras_hub.models.XLMRobertaTokenizer(
            proto=os.path.join(FIXTURES, "xlm_roberta_spm", "legacy", "sentencepiece.bpe.model"))),
    "distil_bert": lambda: (
        keras_hub.models.DistilBertBackbone(vocabulary_size=2000, **SHAPE),
        keras_hub.models.DistilBertTokenizer(vocabulary=_wordpiece_vocabulary(), lowercase=True,
                                             strip_accents=True)),
    "albert": lambda: (
        keras_hub.models.AlbertBackbone(vocabulary_size=2500, embedding_dim=4, **SHAPE),
        keras_hub.models.AlbertTokenizer(
            proto=os.path.join(FIXTURES, "albert_spm", "legacy", "spiece.model"))),
    "albert_groups": lambda: (  # a block per layer: num_groups == num_layers
        keras_hub.models.AlbertBackbone(vocabulary_size=2500, embedding_dim=4, num_groups=2,
                                        **SHAPE),
        keras_hub.models.AlbertTokenizer(
            proto=os.path.join(FIXTURES, "albert_spm", "legacy", "spiece.model"))),
    "electra": lambda: (
        keras_hub.models.ElectraBackbone(vocab_size=2000, embedding_dim=4, **SHAPE),
        keras_hub.models.ElectraTokenizer(vocabulary=_wordpiece_vocabulary(), lowercase=True,
                                          strip_accents=True)),
    # DeBERTa-v3: relative attention over 4 log buckets of distances up to 32 (the
    # preset's max_sequence_length), so the sentences meet bucketed distances.
    "deberta_v3": lambda: (
        keras_hub.models.DebertaV3Backbone(vocabulary_size=2501, bucket_size=4, **SHAPE),
        keras_hub.models.DebertaV3Tokenizer(
            proto=os.path.join(FIXTURES, "deberta_v3_spm", "legacy", "spm.model"))),
    "electra_unprojected": lambda: (  # embedding_dim == hidden_dim: no projection
        keras_hub.models.ElectraBackbone(vocab_size=2000, embedding_dim=8, **SHAPE),
        keras_hub.models.ElectraTokenizer(vocabulary=_wordpiece_vocabulary(), lowercase=True,
                                          strip_accents=True)),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def preset(request, tmp_path_factory):
    backbone, tokenizer = FAMILIES[request.param]()
    _perturb(backbone, seed=len(request.param))
    directory = str(tmp_path_factory.mktemp(request.param) / "preset")
    backbone.save_to_preset(directory)
    tokenizer.save_to_preset(directory)
    return request.param, directory, backbone, tokenizer


def _outputs(outputs):
    if isinstance(outputs, dict):
        return {name: keras.ops.convert_to_numpy(value) for name, value in outputs.items()
                if name in ("sequence_output", "pooled_output")}
    return {"sequence_output": keras.ops.convert_to_numpy(outputs)}


def test_tokenizer_gives_keras_hub_ids(preset):
    _, directory, _, keras_hub_tokenizer = preset
    tokenizer = load_tokenizer(directory)
    ours = tokenizer.tokenize_flat(SENTENCES).to_list()
    theirs = [keras.ops.convert_to_numpy(keras_hub_tokenizer(text)).tolist()
              for text in SENTENCES]
    assert ours == theirs


def test_encoder_gives_keras_hub_outputs(preset):
    name, directory, backbone, _ = preset
    assert checkpoint_format(directory) == "keras_hub"
    tokenizer = load_tokenizer(directory)
    batch = encoded_batch(tokenizer, SENTENCES, SHAPE["max_sequence_length"])
    token_ids, segment_ids, padding_mask = (
        batch["token_ids"], batch["segment_ids"], batch["padding_mask"])
    inputs = {"token_ids": token_ids, "padding_mask": padding_mask}
    if "segment_ids" in backbone.input:
        inputs["segment_ids"] = segment_ids
    expected = _outputs(backbone(inputs))
    encoder = load_encoder(directory)
    actual = _outputs(encoder({"token_ids": token_ids, "segment_ids": segment_ids,
                               "padding_mask": padding_mask}))
    real = padding_mask.astype(bool)
    for output, value in expected.items():
        # At real tokens: KerasHub's DeBERTa-v3 does not zero the embeddings of padding
        # (transformers and we do), which changes the outputs there, never a real token's.
        got = actual[output][real] if output == "sequence_output" else actual[output]
        value = value[real] if output == "sequence_output" else value
        difference = float(np.max(np.abs(got - value)))
        print(f"{name} {output}: max abs difference {difference:.2e}")
        assert difference < TOLERANCE, (output, difference)
    transformer = transformer_of(encoder)
    assert transformer.share_layers == (name == "albert")
    assert read_keras_hub_config(directory)["gelu_approximate"] == (
        name not in ("roberta", "xlm_roberta", "distil_bert", "deberta_v3"))


def test_deberta_v3_at_the_longest_distance(tmp_path):
    """Full-length rows meet |d| = max_sequence_length - 1, the log bucket at the end of
    the range, where KerasHub's and transformers' formulas could round apart."""
    backbone, _ = FAMILIES["deberta_v3"]()
    _perturb(backbone, seed=3)
    directory = str(tmp_path / "preset")
    backbone.save_to_preset(directory)
    token_ids = np.random.default_rng(0).integers(5, 2400, (2, SHAPE["max_sequence_length"]))
    token_ids = token_ids.astype("int32")
    padding_mask = np.ones_like(token_ids)
    expected = keras.ops.convert_to_numpy(backbone({"token_ids": token_ids,
                                                    "padding_mask": padding_mask}))
    encoder = load_encoder(directory)
    transformer = transformer_of(encoder)
    assert (transformer.position_buckets, transformer.max_relative_positions,
            transformer.relative_attention) == (4, 32, "disentangled")
    actual = encoder({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                      "padding_mask": padding_mask})["sequence_output"]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(actual), expected, atol=TOLERANCE)


def test_a_missing_weight_is_named(tmp_path):
    directory = str(tmp_path / "preset")
    keras_hub.models.RobertaBackbone(vocabulary_size=50, **SHAPE).save_to_preset(directory)
    with h5py.File(os.path.join(directory, "model.weights.h5"), "a") as h5:
        del h5["layers/token_and_position_embedding/position_embedding/vars/0"]
    with pytest.raises(ValueError, match=r"lacks 1 weight.*embeddings/position_embedding/"
                                         r"embeddings \(model\.weights\.h5: layers/"
                                         r"token_and_position_embedding/position_embedding"):
        load_encoder(directory)


def test_unsupported_albert_groups_are_refused(tmp_path):
    backbone = keras_hub.models.AlbertBackbone(vocabulary_size=50, embedding_dim=4,
                                               num_inner_repetitions=2, **SHAPE)
    directory = str(tmp_path / "preset")
    backbone.save_to_preset(directory)
    with pytest.raises(ValueError, match="num_inner_repetitions=2 is not supported"):
        load_encoder(directory)


@pytest.mark.parametrize("class_name", ["ModernBertBackbone", "GemmaBackbone"])
def test_other_backbones_are_refused(tmp_path, class_name):
    directory = str(tmp_path / "preset")
    keras_hub.models.DistilBertBackbone(vocabulary_size=50, **SHAPE).save_to_preset(directory)
    path = os.path.join(directory, "config.json")
    with open(path) as file:
        config = json.load(file)
    config.update(class_name=class_name, registered_name=f"keras_hub>{class_name}")
    with open(path, "w") as file:
        json.dump(config, file)
    with pytest.raises(ValueError, match=f"class_name='{class_name}' is not supported"):
        load_encoder(directory)


def test_special_tokens_typed_in_text_are_their_ids(preset):
    """Where we differ from KerasHub on purpose: a special token typed in the text is
    its id (as in transformers); KerasHub's SentencePiece tokenizers cut it into pieces."""
    _, directory, _, _ = preset
    tokenizer = load_tokenizer(directory)
    mask = tokenizer.special_tokens["mask"]
    assert tokenizer.tokenize_flat([f"the {mask}"]).to_list()[0][-1] == tokenizer.mask_id
