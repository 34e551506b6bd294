"""Sequence packing: the plan against a brute-force first-fit decreasing, the packed layout, and
packed models computing exactly what unpacked ones do (outputs, decoding, loss, gradients)."""

import os

import keras
import numpy as np
import pytest
from keras import ops

from nlpzoo.layers import Encoder, transformer_of
from nlpzoo.layers.sequence_packing import PackedBatch, packing_plan
from nlpzoo.tasks.text.padding_fraction import PaddingFraction
from nlpzoo.zoo import build_model
from tests.helpers.paths import ROOT

REPO = ROOT


def _first_fit_decreasing(lengths, row_length):
    """Brute force: rows and offsets of first-fit-decreasing packing (longest first, ties
    in batch order, each into the first row with room) into rows of
    max(row_length, the longest example) tokens."""
    length = max(row_length, max(lengths))
    rows, offsets, used = [None] * len(lengths), [None] * len(lengths), []
    for n in sorted(range(len(lengths)), key=lambda n: (-lengths[n], n)):
        row = next((r for r, tokens in enumerate(used) if tokens + lengths[n] <= length),
                   len(used))
        if row == len(used):
            used.append(0)
        rows[n], offsets[n] = row, used[row]
        used[row] += lengths[n]
    return rows, offsets, len(used), length


def _padded_batch(lengths, time, vocabulary_size=100, seed=0, segments=False):
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), time), "int32")
    mask = np.zeros_like(ids)
    segment_ids = np.zeros_like(ids)
    for n, length in enumerate(lengths):
        ids[n, :length] = rng.integers(5, vocabulary_size, length)
        mask[n, :length] = 1
        if segments and length > 2:
            segment_ids[n, length // 2:length] = 1
    return ids, segment_ids, mask


def _numpy(x):
    return ops.convert_to_numpy(x)


@pytest.mark.parametrize("seed", range(5))
def test_plan_is_first_fit_decreasing(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 30, rng.integers(1, 12)).tolist()
    time = max(lengths) + int(rng.integers(0, 4))
    _, _, mask = _padded_batch(lengths, time)
    row_length = int(rng.choice([1, 8, 16, 32, 64]))
    rows, offsets, got_lengths, num_rows, length = packing_plan(mask, row_length)
    want_rows, want_offsets, want_num_rows, _ = _first_fit_decreasing(lengths, row_length)
    assert _numpy(rows).tolist() == want_rows
    assert _numpy(offsets).tolist() == want_offsets
    assert _numpy(got_lengths).tolist() == lengths
    assert int(num_rows) == want_num_rows
    # The padding past the longest example is not computed on.
    assert int(length) == max(row_length, max(lengths))


def test_packed_layout_and_round_trip():
    lengths = [5, 2, 7, 1, 3, 6]
    ids, segment_ids, mask = _padded_batch(lengths, 8, segments=True)
    packed = PackedBatch(ids, segment_ids, mask, row_length=10)
    rows, offsets, num_rows, length = _first_fit_decreasing(lengths, 10)
    token_ids, example_ids = _numpy(packed.token_ids), _numpy(packed.example_ids)
    positions, segments = _numpy(packed.position_ids), _numpy(packed.segment_ids)
    assert token_ids.shape == (num_rows, length)
    expected_examples = np.zeros((num_rows, length), "int32")
    for n, (row, offset, size) in enumerate(zip(rows, offsets, lengths)):
        np.testing.assert_array_equal(token_ids[row, offset:offset + size], ids[n, :size])
        np.testing.assert_array_equal(segments[row, offset:offset + size], segment_ids[n, :size])
        np.testing.assert_array_equal(positions[row, offset:offset + size], np.arange(size))
        expected_examples[row, offset:offset + size] = n + 1
    np.testing.assert_array_equal(example_ids, expected_examples)
    assert np.all(token_ids[expected_examples == 0] == 0)
    # Block-diagonal: a query sees exactly the keys of its own example.
    mask3 = _numpy(packed.attention_mask)
    same = (expected_examples[:, :, None] == expected_examples[:, None, :])
    np.testing.assert_array_equal(mask3, same & (expected_examples[:, None, :] > 0))
    np.testing.assert_array_equal(_numpy(packed.unpack(packed.token_ids)), ids * mask)
    features = np.random.default_rng(1).normal(size=(num_rows, length, 3)).astype("float32")
    unpacked = _numpy(packed.unpack(features))
    for n, (row, offset, size) in enumerate(zip(rows, offsets, lengths)):
        np.testing.assert_array_equal(unpacked[n, :size], features[row, offset:offset + size])
        assert np.all(unpacked[n, size:] == 0)
    metric = PaddingFraction()  # what the packed encoder computes on, as logged
    metric.update_state(mask, pack_length=10)
    assert float(metric.result()) == pytest.approx(1 - sum(lengths) / (num_rows * length))


def _encoder(**options):
    keras.utils.set_random_seed(3)
    return Encoder(vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
                   intermediate_dim=32, max_sequence_length=64, dropout=0.0, **options)


@pytest.mark.parametrize("pack_length", [1, 4, 16, 40])
def test_packed_encoder_outputs_equal_unpacked(pack_length):
    lengths = [12, 3, 7, 5, 9, 1]
    ids, segment_ids, mask = _padded_batch(lengths, 16, segments=True)
    inputs = {"token_ids": ids, "segment_ids": segment_ids, "padding_mask": mask}
    encoder = _encoder()
    plain = encoder(inputs)
    transformer_of(encoder).pack_length = pack_length
    packed = encoder(inputs)
    real = mask[..., None].astype(bool)
    for name in ("sequence_output",):
        np.testing.assert_allclose(np.where(real, _numpy(packed[name]), 0),
                                   np.where(real, _numpy(plain[name]), 0), atol=2e-5)
    np.testing.assert_allclose(_numpy(packed["pooled_output"]), _numpy(plain["pooled_output"]),
                               atol=2e-5)
    for got, want in zip(packed["hidden_states"], plain["hidden_states"]):
        np.testing.assert_allclose(np.where(real, _numpy(got), 0),
                                   np.where(real, _numpy(want), 0), atol=2e-5)


@pytest.mark.parametrize("options", [
    {"norm_first": True}, {"share_layers": True}, {"adapter_size": 4}, {"lora_rank": 2},
    {"embedding_dim": 8},
], ids=lambda options: next(iter(options)))
def test_every_encoder_shape_packs_to_the_same_outputs(options):
    # Packed, the blocks compute on the real tokens alone ([M, H]) and attend in rows:
    # every sublayer (adapters, LoRA, pre-LN, shared blocks) must see the same tokens.
    lengths = [9, 2, 6, 4]
    ids, segment_ids, mask = _padded_batch(lengths, 12, segments=True)
    inputs = {"token_ids": ids, "segment_ids": segment_ids, "padding_mask": mask}
    encoder = _encoder(**options)
    if options.get("adapter_size") or options.get("lora_rank"):  # both start as the identity
        for variable in transformer_of(encoder).adaptation_weights():
            variable.assign(np.random.default_rng(0).normal(0, 0.1, variable.shape))
    plain = encoder(inputs)
    transformer_of(encoder).pack_length = 1
    packed = encoder(inputs)
    real = mask[..., None].astype(bool)
    for got, want in zip(packed["hidden_states"], plain["hidden_states"]):
        np.testing.assert_allclose(np.where(real, _numpy(got), 0),
                                   np.where(real, _numpy(want), 0), atol=2e-5)
    # The packed outputs are exactly zero at padding: nothing computed there.
    assert not np.any(np.where(real, 0, _numpy(packed["sequence_output"])))
    # The position-wise layers on the padded rows instead (the measured alternative).
    transformer_of(encoder).position_wise_on_tokens = False
    in_rows = encoder(inputs)
    np.testing.assert_allclose(_numpy(in_rows["sequence_output"]),
                               _numpy(packed["sequence_output"]), atol=2e-5)


def test_pack_length_is_saved_and_validated(tmp_path):
    encoder = _encoder(pack_length=32)
    assert encoder.get_config()["pack_length"] == 32
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    assert transformer_of(keras.saving.load_model(path)).pack_length == 32
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="pack_length"):
            transformer_of(encoder).pack_length = bad


def _tagging_batch(lengths, words=6, seed=0):
    ids, _, mask = _padded_batch(lengths, max(lengths), seed=seed)
    starts = np.zeros((len(lengths), words), "int32")
    word_mask = np.zeros_like(starts)
    for n, length in enumerate(lengths):
        count = min(words, length - 2)
        starts[n, :count] = np.arange(1, count + 1)
        word_mask[n, :count] = 1
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask,
         "word_starts": starts, "word_mask": word_mask}
    rng = np.random.default_rng(seed + 1)
    # O / B-PER only, so that every tag sequence is allowed in IOB2.
    y = np.where(word_mask > 0, rng.integers(0, 2, word_mask.shape), -1).astype("int32")
    return x, y


def _twin_taggers(head, pack_length):
    """Two taggers with the same weights, the second packing."""
    options = dict(labels=["O", "B-PER", "I-PER"], vocabulary_size=100, dropout=0.0,
                   attention_dropout=0.0,
                   learning_rate=1e-2, jit_compile=False)
    keras.utils.set_random_seed(5)
    plain = build_model("bert_tiny_tagger", head=head, **options)
    packed = build_model("bert_tiny_tagger", head=head, pack_length=pack_length, **options)
    packed.set_weights(plain.get_weights())
    return plain, packed


@pytest.mark.parametrize("head", ["crf", "softmax"])
def test_packed_tagger_decodes_trains_and_evaluates_like_unpacked(head):
    x, y = _tagging_batch([12, 3, 7, 5, 9, 4, 11])
    plain, packed = _twin_taggers(head, pack_length=16)
    np.testing.assert_array_equal(_numpy(packed.decode(x)), _numpy(plain.decode(x)))
    np.testing.assert_array_equal(packed.predict(x, verbose=0), plain.predict(x, verbose=0))
    plain.padding_fraction.reset_state(), packed.padding_fraction.reset_state()
    before = plain.evaluate(x, y, verbose=0, return_dict=True)
    after = packed.evaluate(x, y, verbose=0, return_dict=True)
    assert after["loss"] == pytest.approx(before["loss"], rel=1e-5)
    # Padding (the models' own figure, not a logged metric): 7 examples of at most
    # 12 tokens (84 slots) against rows of 16.
    assert "padding_fraction" not in before
    before, after = (float(plain.padding_fraction.result()),
                     float(packed.padding_fraction.result()))
    real = int(x["padding_mask"].sum())
    assert before == pytest.approx(1 - real / x["padding_mask"].size)
    _, _, rows, length = _first_fit_decreasing([12, 3, 7, 5, 9, 4, 11], 16)
    assert after == pytest.approx(1 - real / (rows * length))
    assert after < before
    # One SGD step from the same weights moves them the same way: the gradients
    # are equal. (Adam's first step is ~lr·sign(g), which float noise flips where g ≈ 0.)
    for model in (plain, packed):
        model.compile(optimizer=keras.optimizers.SGD(1.0), jit_compile=False)
    plain.train_on_batch(x, y)
    packed.train_on_batch(x, y)
    for want, got in zip(plain.get_weights(), packed.get_weights()):
        np.testing.assert_allclose(got, want, atol=2e-5)


def test_packed_classifier_and_span_ner_predict_like_unpacked():
    lengths = [10, 4, 8, 3, 6]
    ids, segment_ids, mask = _padded_batch(lengths, 10, segments=True)
    x = {"token_ids": ids, "segment_ids": segment_ids, "padding_mask": mask}
    keras.utils.set_random_seed(7)
    plain = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100,
                        dropout=0.0, jit_compile=False)
    packed = build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=100,
                         dropout=0.0, jit_compile=False, pack_length=32)
    packed.set_weights(plain.get_weights())
    np.testing.assert_allclose(packed.predict(x, verbose=0), plain.predict(x, verbose=0),
                               atol=2e-5)

    tagging_x, _ = _tagging_batch(lengths, words=5)
    keras.utils.set_random_seed(8)
    plain = build_model("bert_tiny_span_ner", num_classes=3, vocabulary_size=100,
                        max_span_width=3, dropout=0.0, jit_compile=False)
    packed = build_model("bert_tiny_span_ner", num_classes=3, vocabulary_size=100,
                         max_span_width=3, dropout=0.0, jit_compile=False, pack_length=32)
    packed.set_weights(plain.get_weights())
    span_x = {name: tagging_x[name] for name in plain.input}
    np.testing.assert_allclose(packed.predict(span_x, verbose=0),
                               plain.predict(span_x, verbose=0), atol=2e-5)


@pytest.mark.slow  # float32 packing is compared exactly in make test
def test_packing_under_mixed_bfloat16_runs_and_stays_close():
    lengths = [12, 3, 7, 5]
    x, y = _tagging_batch(lengths)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        plain, packed = _twin_taggers("crf", pack_length=16)
        np.testing.assert_allclose(_numpy(packed(x)), _numpy(plain(x)), atol=0.1)
        assert np.isfinite(packed.train_on_batch(x, y, return_dict=True)["loss"])
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_build_model_refuses_packing_under_xla():
    with pytest.raises(ValueError, match="pack_length needs jit_compile off"):
        build_model("bert_tiny_classifier", num_classes=2, vocabulary_size=100,
                    pack_length=64, jit_compile=True)
    with pytest.raises(ValueError, match="pack_length must be"):
        build_model("bert_tiny_classifier", num_classes=2, vocabulary_size=100,
                    pack_length=-3, jit_compile=False)


def test_train_binary_packs_into_rows_of_the_longest_by_default_without_xla(trained_tagger_dir):
    # The shared tagger was trained by tools/train.py with no --pack_length and XLA off (CPU).
    import json

    from nlpzoo.zoo.runs import directory as md

    with open(os.path.join(trained_tagger_dir, md.CONFIG)) as f:
        config = json.load(f)
    assert (config["jit_compile"], config["pack_length"]) == (False, 1)
    trained = md.load_models(trained_tagger_dir)
    assert transformer_of(trained.model.encoder).pack_length == 1


def test_padding_fraction_accumulates_over_batches():
    metric = PaddingFraction()
    metric.update_state(np.array([[1, 1, 0, 0]]))          # 2 real of 4
    metric.update_state(np.array([[1, 1, 1, 1, 1, 0]]))    # 5 real of 6
    assert float(metric.result()) == pytest.approx(1 - 7 / 10)


@pytest.mark.slow  # an export and a SavedModel load: half a minute
def test_packed_saved_model_serves_what_unpacked_serves(trained_tagger_dir, tmp_path):
    import tensorflow as tf

    from nlpzoo.tasks.modeling.serving import SIGNATURE, export_saved_model, serving_function
    from nlpzoo.zoo.runs import directory as md

    trained = md.load_models(trained_tagger_dir)
    sentences = tf.constant(["EU rejects German call to boycott British lamb .",
                             "Peter Blackburn", "BRUSSELS 1996-08-22",
                             "The European Commission said on Thursday it disagreed with "
                             "German advice to consumers to shun British lamb until "
                             "scientists determine whether mad cow disease can be "
                             "transmitted to sheep ."])
    serve, _ = serving_function(trained.task, trained.model, trained.preprocessor,
                                trained.labels)
    plain = {name: value.numpy() for name, value in serve(sentences).items()}
    transformer_of(trained.model.encoder).pack_length = 64
    path = str(tmp_path / "saved")
    export_saved_model(trained.task, trained.model, trained.preprocessor, trained.labels, path)
    served = tf.saved_model.load(path).signatures[SIGNATURE](text=sentences)
    assert set(served) == set(plain)
    for name, value in plain.items():
        np.testing.assert_array_equal(served[name].numpy(), value, err_msg=name)


@pytest.mark.parametrize("head", ["crf", "softmax"])
def test_an_empty_batch_packs_to_no_rows_and_trains_nothing(head):
    # Under multi-worker training a worker's share of a small last batch can be empty: the
    # plan has no row (an empty max is not the int32 minimum) and the step is a no-op.
    x, y = _tagging_batch([12, 3, 7])
    empty_x, empty_y = {name: value[:0] for name, value in x.items()}, y[:0]
    rows, offsets, lengths, num_rows, length = packing_plan(empty_x["padding_mask"], 16)
    assert (int(num_rows), int(length)) == (0, 16) and _numpy(rows).shape == (0,)
    plain, packed = _twin_taggers(head, pack_length=16)
    for model in (plain, packed):
        model.compile(optimizer=keras.optimizers.SGD(1.0), jit_compile=False)
        before = model.get_weights()
        assert model.train_on_batch(empty_x, empty_y, return_dict=True)["loss"] == 0.0
        for want, got in zip(before, model.get_weights()):
            np.testing.assert_array_equal(got, want)
    # The encoder alone, packed, gives the plain encoder's empty outputs.
    inputs = {name: empty_x[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    assert (_numpy(packed.encoder(inputs)["sequence_output"]).shape
            == _numpy(plain.encoder(inputs)["sequence_output"]).shape)
