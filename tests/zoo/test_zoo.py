import keras
import numpy as np
import pytest

from nlpzoo.zoo import ENCODER_PRESETS, build_encoder, build_model, get_preset, list_presets

PUBLISHED_SHAPES = {
    "bert_tiny": (2, 128, 2), "bert_mini": (4, 256, 4), "bert_small": (4, 512, 8),
    "bert_medium": (8, 512, 8), "bert_base": (12, 768, 12), "bert_large": (24, 1024, 16),
    "minilm_l6_h384": (6, 384, 12), "albert_base": (12, 768, 12),
}


def test_encoder_presets_have_published_shapes():
    for name, (layers, hidden, heads) in PUBLISHED_SHAPES.items():
        preset = get_preset(name)
        assert (preset.num_layers, preset.hidden_dim, preset.num_heads) == (layers, hidden, heads)
        assert preset.intermediate_dim == 4 * hidden
    albert = get_preset("albert_base")
    assert albert.embedding_dim == 128 and albert.share_layers


def test_list_presets_names_what_get_preset_knows():
    encoders, tasks = list_presets("encoder"), list_presets("task")
    assert list_presets() == encoders + tasks
    assert encoders == sorted(encoders) and tasks == sorted(tasks)
    assert set(PUBLISHED_SHAPES) <= set(encoders) and not set(encoders) & set(tasks)
    for name in tasks:  # each task preset names a known encoder preset
        assert get_preset(name).encoder in encoders, name
    for name in encoders:
        assert get_preset(name).num_layers >= 1
    with pytest.raises(ValueError, match="kind must be 'encoder', 'task' or None"):
        list_presets("tasks")


def test_bert_base_parameter_count_matches_bert():
    # BERT-Base has 109,482,240 encoder parameters (with pooler) for 30,522 tokens.
    encoder = build_encoder("bert_base")
    assert encoder.count_params() == 109_482_240


def test_albert_base_shares_layers():
    # ALBERT-Base: about 11.7M parameters with its 30,000-token vocabulary.
    encoder = build_encoder("albert_base")
    assert 11_000_000 < encoder.count_params() < 12_500_000


def test_a_fresh_head_on_a_pretrained_encoder_learns_at_the_preset_head_rate():
    shape = dict(vocabulary_size=50, num_layers=1, hidden_dim=16, num_heads=2,
                 intermediate_dim=32)
    defaults = ENCODER_PRESETS["bert_tiny"].fine_tuning
    # From random weights everything learns at one rate: the preset's.
    scratch = build_model("bert_tiny_classifier", **shape)
    assert type(scratch.optimizer).__name__ == "AdamW"
    assert np.isclose(float(scratch.optimizer.learning_rate), defaults.learning_rate)
    # On a given (pretrained) encoder the head learns at the preset's head rate ...
    tuned = build_model("bert_tiny_classifier", encoder=build_encoder("bert_tiny", **shape),
                        **shape)
    encoder_paths = {v.path for v in tuned.get_layer("encoder").weights}
    factors = {v.path: tuned.optimizer.multiplier(v.path) for v in tuned.trainable_variables}
    head = [path for path in factors if path not in encoder_paths]
    assert head and all(np.isclose(factors[path],
                                   defaults.head_learning_rate / defaults.learning_rate)
                        for path in head)
    assert all(factors[path] == 1.0 for path in encoder_paths)
    # ... unless told otherwise.
    same = build_model("bert_tiny_classifier", encoder=build_encoder("bert_tiny", **shape),
                       head_learning_rate=defaults.learning_rate, **shape)
    assert type(same.optimizer).__name__ == "AdamW"


def test_build_model_is_compiled_with_overrides():
    model = build_model("bert_tiny_classifier", num_classes=6, vocabulary_size=500,
                        dropout=0.0, max_sequence_length=64, learning_rate=1e-3)
    assert model.output_shape == (None, 6)
    assert model.optimizer is not None and model.loss is not None
    transformer = model.get_layer("encoder").get_layer("transformer")
    assert transformer.max_sequence_length == 64 and transformer.dropout == 0.0
    assert np.isclose(float(model.optimizer.learning_rate), 1e-3)
    x = {"token_ids": np.array([[2, 7, 3]]), "segment_ids": np.zeros((1, 3), int),
         "padding_mask": np.ones((1, 3), int)}
    assert model.predict(x, verbose=0).shape == (1, 6)


def test_unknown_names_list_the_closest_first():
    with pytest.raises(ValueError, match=r"unknown task preset 'bert_tiny_clasifier'.*"
                                         r"closest first\): bert_tiny_classifier,"):
        build_model("bert_tiny_clasifier")
    with pytest.raises(ValueError, match=r"unknown override 'num_clases'.*closest first\): num_classes,"):
        build_model("bert_tiny_classifier", num_clases=3)
    with pytest.raises(ValueError, match="encoder preset; use build_encoder"):
        build_model("bert_tiny")
    with pytest.raises(ValueError, match="unknown preset 'bert_huge'"):
        get_preset("bert_huge")


@pytest.mark.parametrize("overrides, message", [
    ({"num_classes": 1}, "num_classes must be >= 2"),
    ({"num_classes": 2.5}, "num_classes must be an integer"),
    ({"dropout": 1.0}, "dropout must be < 1.0"),
    ({"learning_rate": 0}, "learning_rate must be > 0"),
    ({"max_sequence_length": 0}, "max_sequence_length must be >= 1"),
    ({"num_heads": 3}, "not divisible by num_heads=3"),
    ({"total_steps": 10, "warmup_steps": 11}, "warmup_steps must be <= 10"),
    ({"jit_compile": "maybe"}, "jit_compile 'maybe' is not one of"),
])
def test_bad_override_values(overrides, message):
    with pytest.raises(ValueError, match=message):
        build_model("bert_tiny_classifier", **overrides)


def test_model_saves_and_loads_without_custom_objects(tmp_path):
    model = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100,
                        total_steps=100, warmup_steps=10)
    x = {"token_ids": np.array([[2, 7, 9, 3, 0]]), "segment_ids": np.zeros((1, 5), int),
         "padding_mask": np.array([[1, 1, 1, 1, 0]])}
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               atol=1e-6)


def test_build_model_takes_the_clip_norm():
    from nlpzoo.zoo import build_model
    clipped = build_model("bert_tiny_classifier", vocabulary_size=100, clip_norm=0.25)
    assert clipped.optimizer.global_clipnorm == 0.25
    assert build_model("bert_tiny_classifier", vocabulary_size=100).optimizer.global_clipnorm == 1.0
    assert build_model("bert_tiny_classifier", vocabulary_size=100,
                       clip_norm=0).optimizer.global_clipnorm is None
    with pytest.raises(ValueError, match="clip_norm must be >= 0"):
        build_model("bert_tiny_classifier", vocabulary_size=100, clip_norm=-1.0)


def test_trainable_layers_trains_the_top_blocks_and_the_head_only():
    """bert_tiny has 2 blocks: with trainable_layers=1 a training step moves block_1, the
    pooler and the head, and leaves block_0 and the embeddings as they were."""
    from nlpzoo.layers import transformer_of
    model = build_model("bert_tiny_classifier", vocabulary_size=100, trainable_layers=1,
                        learning_rate=1e-2)
    transformer = transformer_of(model.encoder)
    layers = {"embeddings": transformer.embeddings, "block_0": transformer.blocks[0],
              "block_1": transformer.blocks[1], "pooler": transformer.pooler}
    before = {name: [np.array(w) for w in layer.weights] for name, layer in layers.items()}
    head_before = [np.array(w) for w in model.trainable_weights
                   if not any(w is v for v in model.encoder.weights)]
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 100, (8, 12)).astype("int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    model.fit(x, rng.integers(0, 2, 8), batch_size=8, epochs=1, verbose=0)
    moved = {name: any(not np.array_equal(a, np.array(w)) for a, w in zip(before[name],
                                                                         layer.weights))
             for name, layer in layers.items()}
    assert moved == {"embeddings": False, "block_0": False, "block_1": True, "pooler": True}
    head_after = [np.array(w) for w in model.trainable_weights
                  if not any(w is v for v in model.encoder.weights)]
    assert head_before and any(not np.array_equal(a, b) for a, b in zip(head_before, head_after))


@pytest.mark.parametrize("options, message", [
    ({"trainable_layers": 3}, "between 1 and the encoder's 2 distinct blocks"),
    ({"trainable_layers": 0}, "trainable_layers must be >= 1"),
    ({"trainable_layers": 1, "freeze_encoder": True}, "cannot be combined with freeze_encoder"),
])
def test_trainable_layers_refuses_what_it_cannot_do(options, message):
    with pytest.raises(ValueError, match=message):
        build_model("bert_tiny_classifier", vocabulary_size=100, **options)
