"""Our encoders of every family KerasHub 0.32 has a backbone for → a KerasHub preset.

For each family, the tiny preset of `tests.helpers.family_fixtures` (BERT's too) with
perturbed weights (LayerNorms included, so that no misplaced weight hides) and its
fixture tokenizer is exported with `export_keras_hub_preset`; KerasHub's own
`<Family>Backbone.from_preset` and tokenizer `from_preset` must give our outputs at
real tokens and our ids, and our importer must read the preset back to the weights
that were exported. Where the tiny preset's GELU form is not the one KerasHub's
backbone fixes in code (BERT's and ELECTRA's exact GELU against KerasHub's tanh
approximation), the encoder is built with KerasHub's form so that the outputs are
compared at float32 precision (the form itself is warned about: see
`test_a_gelu_form_other_than_keras_hubs_is_exported_with_a_warning`).
"""

import logging
import os
import unicodedata

import keras
import keras_hub
import numpy as np
import pytest

from nlpzoo.layers import rebuild_encoder, transformer_of
from nlpzoo.zoo import build_encoder, load_tokenizer
from nlpzoo.zoo.checkpoints import export_keras_hub_preset, load_encoder
from nlpzoo.zoo.checkpoints.keras_hub import _export_values, _weight_plan
from nlpzoo.zoo.checkpoints.keras_hub_families import FAMILIES as FAMILIES_BY_BACKBONE
from tests.helpers.family_fixtures import FAMILIES, TOKENIZERS, encoded_batch

# Our float32 forward pass against KerasHub's on the same weights. Most families agree to
# the bit; RoBERTa's and XLM-R's exported position table holds position + segment row (we
# add the three embeddings one by one) and KerasHub's DeBERTa-v3 orders its attention
# sums differently: measured 9e-6 at outputs of magnitude 3 to 5 (~3e-6 relative).
TOLERANCE = 3e-5
SENTENCES = [
    "The cat sat on the mat.",
    "Hello world, this is a test of 42 tokens!",
    "Café opens at nine; naïve visitors queue early.",
    "short",
]
# family → (encoder preset, tokenizer fixture, overrides, KerasHub backbone, tokenizer).
EXPORTS = {
    "bert": ("bert_tiny", "bert_uncased_wordpiece", dict(gelu_approximate=True),
             "BertBackbone", "BertTokenizer"),
    "roberta": (*FAMILIES["roberta"], {}, "RobertaBackbone", "RobertaTokenizer"),
    "xlm-roberta": (*FAMILIES["xlm-roberta"], {}, "XLMRobertaBackbone", "XLMRobertaTokenizer"),
    "distilbert": (*FAMILIES["distilbert"], {}, "DistilBertBackbone", "DistilBertTokenizer"),
    "albert": (*FAMILIES["albert"], {}, "AlbertBackbone", "AlbertTokenizer"),
    "albert_unshared": (*FAMILIES["albert"], dict(share_layers=False), "AlbertBackbone",
                        "AlbertTokenizer"),
    "electra": (*FAMILIES["electra"], dict(gelu_approximate=True), "ElectraBackbone",
                "ElectraTokenizer"),
    "deberta-v2": (*FAMILIES["deberta-v2"], {}, "DebertaV3Backbone", "DebertaV3Tokenizer"),
}
# The default run exports RoBERTa (offset positions, its one segment row folded, BPE);
# `-m slow` every family.
DEFAULT = ("roberta",)


def _perturb(encoder, seed):
    rng = np.random.default_rng(seed)
    for variable in encoder.weights:
        value = keras.ops.convert_to_numpy(variable)
        variable.assign(value + rng.normal(0, 0.2, value.shape).astype(value.dtype))


def _tiny(name):
    preset, tokenizer_dir, overrides, _, _ = EXPORTS[name]
    tokenizer = load_tokenizer(os.path.join(TOKENIZERS, tokenizer_dir))
    keras.utils.set_random_seed(0)
    encoder = build_encoder(preset, vocabulary_size=tokenizer.vocabulary_size,
                            max_sequence_length=64, **overrides)
    _perturb(encoder, seed=len(name))
    return encoder, tokenizer


def _batch(tokenizer, texts):
    return encoded_batch(tokenizer, texts, max_length=64)


def _numpy(outputs):
    if not isinstance(outputs, dict):
        outputs = {"sequence_output": outputs}
    return {name: keras.ops.convert_to_numpy(value) for name, value in outputs.items()
            if name in ("sequence_output", "pooled_output")}


def _as_keras_hub_reads(text, tokenizer):
    """What KerasHub's SentencePiece tokenizers must be given for our ids: they neither
    lower-case nor strip accents (the export warns about it)."""
    if getattr(tokenizer, "kind", None) != "sentencepiece":
        return text
    if not tokenizer.keep_accents:
        text = "".join(c for c in unicodedata.normalize("NFKD", text)
                       if not unicodedata.combining(c))
    return text.lower() if tokenizer.lowercase else text


@pytest.fixture(scope="module", params=[
    pytest.param(name, marks=() if name in DEFAULT else pytest.mark.slow)
    for name in sorted(EXPORTS)])
def exported(request, tmp_path_factory):
    name = request.param
    encoder, tokenizer = _tiny(name)
    directory = str(tmp_path_factory.mktemp("keras_hub_export") / name)
    family = FAMILIES_BY_BACKBONE[export_keras_hub_preset(encoder, directory, tokenizer)]
    return name, encoder, tokenizer, directory, family


def test_keras_hub_loads_the_export_with_our_outputs(exported):
    name, encoder, tokenizer, directory, family = exported
    backbone_class, tokenizer_class = EXPORTS[name][3:]
    assert family.backbone == backbone_class
    backbone = getattr(keras_hub.models, backbone_class).from_preset(directory)
    batch = _batch(tokenizer, SENTENCES)
    inputs = {key: value for key, value in batch.items() if key in backbone.input}
    theirs = _numpy(backbone(inputs))
    ours = _numpy(encoder(batch))
    real = batch["padding_mask"].astype(bool)
    transformer = transformer_of(encoder)
    # KerasHub's pooled_output is tanh(dense(first token)), ours with the encoder's
    # activation: compared where they are the same (not ELECTRA's gelu pooler).
    compared = ["sequence_output"] + (
        ["pooled_output"] if "pooled_output" in theirs
        and transformer.pooler_activation == family.settings["pooler_activation"] else [])
    for output in compared:
        got, expected = ours[output], theirs[output]
        if output == "sequence_output":  # KerasHub's DeBERTa-v3 differs at padding only
            got, expected = got[real], expected[real]
        difference = float(np.max(np.abs(got - expected)))
        print(f"{name} {output}: max abs difference {difference:.2e}, "
              f"max abs value {np.max(np.abs(expected)):.1f}")
        assert difference < TOLERANCE, (output, difference)
    keras_hub_tokenizer = getattr(keras_hub.models, tokenizer_class).from_preset(directory)
    theirs_ids = [keras.ops.convert_to_numpy(keras_hub_tokenizer(
        _as_keras_hub_reads(text, tokenizer))).tolist() for text in SENTENCES]
    assert theirs_ids == tokenizer.tokenize_flat(SENTENCES).to_list()
    assert list(keras_hub_tokenizer.get_vocabulary()) == tokenizer.vocabulary


def test_our_importer_reads_the_export_back(exported):
    """Back to the weights that were exported: identical in KerasHub's layout (RoBERTa's
    table without the two rows before its first position, its one segment row added);
    the same outputs at real tokens."""
    name, encoder, tokenizer, directory, family = exported
    imported = load_encoder(directory)
    original, reread = transformer_of(encoder), transformer_of(imported)
    expected = _export_values(original, family, _weight_plan(original, family, exporting=True))
    actual = _export_values(reread, family, _weight_plan(reread, family, exporting=True))
    assert sorted(actual) == sorted(expected)
    for path, value in expected.items():
        np.testing.assert_array_equal(actual[path], value, err_msg=path)
    # Read as KerasHub reads it: ALBERT's tokenizer then neither lower-cases nor strips
    # accents (`load_keras_hub_tokenizer`).
    reread_ids = load_tokenizer(directory).tokenize_flat(
        [_as_keras_hub_reads(text, tokenizer) for text in SENTENCES]).to_list()
    assert reread_ids == tokenizer.tokenize_flat(SENTENCES).to_list()
    batch = _batch(tokenizer, SENTENCES)
    real = batch["padding_mask"].astype(bool)
    got = _numpy(imported(batch))["sequence_output"][real]
    np.testing.assert_allclose(got, _numpy(encoder(batch))["sequence_output"][real],
                               atol=TOLERANCE)


def test_a_gelu_form_other_than_keras_hubs_is_exported_with_a_warning(tmp_path, caplog):
    """ELECTRA's tiny preset keeps exact GELU (as transformers' ELECTRA); KerasHub's
    ElectraBackbone always applies the tanh approximation, and its pooler tanh."""
    tokenizer = load_tokenizer(os.path.join(TOKENIZERS, FAMILIES["electra"][1]))
    encoder = build_encoder("electra_tiny", vocabulary_size=tokenizer.vocabulary_size,
                            num_layers=1)
    with caplog.at_level(logging.WARNING):
        backbone = export_keras_hub_preset(encoder, str(tmp_path / "preset"), tokenizer)
    assert backbone == "ElectraBackbone"
    assert "exact (erf) GELU (gelu_approximate=False)" in caplog.text
    assert "pooler_activation='gelu'" in caplog.text


@pytest.mark.parametrize("preset, tokenizer_dir, overrides, message", [
    ("modernbert_tiny", FAMILIES["modernbert"][1], {},
     "no KerasHub backbone with a byte_pair tokenizer holds this encoder (RobertaBackbone: "
     "global_rope_theta=160000.0: RobertaBackbone has global_rope_theta=0.0"),
    ("roberta_tiny", FAMILIES["roberta"][1], dict(num_segments=2),
     "(RobertaBackbone: num_segments=2: RobertaBackbone has no segment table)"),
    ("roberta_tiny", FAMILIES["roberta"][1], dict(adaptation=dict(adapter_size=4)),
     "the encoder has adapters (adapter_size=4)"),
    ("roberta_tiny", FAMILIES["roberta"][1], dict(layer_norm_epsilon=1e-12),
     "layer_norm_epsilon=1e-12: RobertaBackbone always uses 1e-05"),
    ("bert_tiny", FAMILIES["roberta"][1], {},
     "(RobertaBackbone: num_segments=2: RobertaBackbone has no segment table)"),
    ("deberta_tiny", FAMILIES["distilbert"][1], {},
     "no KerasHub backbone with a wordpiece tokenizer holds this encoder (BertBackbone: "
     "relative_attention='disentangled'"),
    ("albert_tiny", FAMILIES["albert"][1], dict(embedding_dim=128),
     "(AlbertBackbone: embedding_dim=128 equals hidden_dim: AlbertBackbone always projects"),
])
def test_what_keras_hub_cannot_represent_is_refused(tmp_path, preset, tokenizer_dir, overrides,
                                                    message):
    tokenizer = load_tokenizer(os.path.join(TOKENIZERS, tokenizer_dir))
    adaptation = overrides.pop("adaptation", None)  # as fine-tuning adds them
    encoder = build_encoder(preset, vocabulary_size=tokenizer.vocabulary_size, num_layers=1,
                            **overrides)
    if adaptation:
        encoder = rebuild_encoder(encoder, **adaptation)
    directory = tmp_path / "preset"
    with pytest.raises(ValueError) as error:
        export_keras_hub_preset(encoder, str(directory), tokenizer)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not directory.exists() and os.listdir(tmp_path) == []


def test_a_keras_hub_variable_left_unset_fails_the_export(tmp_path, monkeypatch):
    """Every variable of KerasHub's backbone must get a weight: one the plan misses is
    named, and nothing is written."""
    from nlpzoo.zoo.checkpoints import keras_hub as keras_hub_module

    tokenizer = load_tokenizer(os.path.join(TOKENIZERS, FAMILIES["distilbert"][1]))
    encoder = build_encoder("distilbert_tiny", vocabulary_size=tokenizer.vocabulary_size,
                            num_layers=1)
    plan = keras_hub_module._weight_plan

    def without_the_last(*args, **kwargs):
        return plan(*args, **kwargs)[:-1]

    monkeypatch.setattr(keras_hub_module, "_weight_plan", without_the_last)
    with pytest.raises(ValueError, match=r"DistilBertBackbone has variables with no "
                                         r"counterpart here: transformer_layer_0/"
                                         r"feedforward_layer_norm/beta$"):
        export_keras_hub_preset(encoder, str(tmp_path / "preset"), tokenizer)
    assert os.listdir(tmp_path) == []


def _bpe_with_another_start_token():
    from nlpzoo.tasks.text.byte_pair_tokenizer import ByteLevelBpeTokenizer

    tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "<cls>", "a", "t", "at"]
    return ByteLevelBpeTokenizer(tokens, ["a t"], cls="<cls>")


@pytest.mark.parametrize("preset, make_vocabulary, message", [
    ("bert_tiny", lambda: ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"],  # no [MASK]
     "KerasHub's BertTokenizer refuses the tokenizer: "),
    ("roberta_tiny", _bpe_with_another_start_token,
     "KerasHub's RobertaTokenizer fixes the cls token at id 0 ('<s>'); this tokenizer's is 5 "
     "('<cls>')"),
])
def test_a_tokenizer_keras_hub_cannot_take_is_refused(tmp_path, preset, make_vocabulary,
                                                       message):
    vocabulary = make_vocabulary()
    size = getattr(vocabulary, "vocabulary_size", None) or len(vocabulary)
    encoder = build_encoder(preset, vocabulary_size=size, num_layers=1)
    with pytest.raises(ValueError) as error:
        export_keras_hub_preset(encoder, str(tmp_path / "preset"), vocabulary, lowercase=True)
    assert message in str(error.value)
    assert os.listdir(tmp_path) == []
