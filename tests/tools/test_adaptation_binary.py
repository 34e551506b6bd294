"""tools/train.py with the adaptation flags: what trains, what is logged, what is refused."""

import json
import os

import keras
import pytest
import numpy as np

import nlpzoo.zoo  # noqa: F401  (registers the task models that load_model meets)
from nlpzoo.tasks.training.optimization import learning_rate_schedule
from tests.helpers.binaries import run_tool, run_tools
from tests.helpers.tensorboard_logs import logged_step_rates
from tests.helpers.paths import CONLL, TREC

_COMMON = ("--learning_rate=1e-3", "--max_seq_length=32", "--mixed_precision=float32",
           "--vocab_size=300", "--batch_size=16")


def _label_counts(labels):
    from nlpzoo.tasks.classification.task import ClassificationTask
    examples = ClassificationTask().read(os.path.join(TREC, "train.label"))
    return [sum(1 for example in examples if example.label == label) for label in labels]


# Slow (two real training runs, about a minute): `make test-slow`. The flags' parts are
# tested in-process in test_gradual_unfreezing.py, test_adapters_and_lora.py, test_l2sp.py,
# test_layer_mix.py; the refusals below stay in the default run.
@pytest.mark.slow
def test_adaptation_flags_end_to_end(tmp_path):
    unfreezing, adapters = str(tmp_path / "unfreezing"), str(tmp_path / "adapters")
    results = run_tools({
        "unfreezing": ("train.py", "--train_data", os.path.join(TREC, "train.label"),
                       "--eval_data", os.path.join(TREC, "dev.label"), "--epochs=2",
                       "--gradual_unfreezing", "--unfreeze_every_steps=4",
                       "--schedule=cosine", "--l2sp=0.01", "--layer_mix=mean_last_4",
                       "--log_every_steps=1", "--class_weights=balanced",
                       "--label_smoothing=0.1", "--model_dir", unfreezing, *_COMMON),
        "adapters": ("train.py", "--task=tagging", "--head=crf",
                     "--train_data", os.path.join(CONLL, "train.txt"),
                     "--eval_data", os.path.join(CONLL, "dev.txt"), "--epochs=1",
                     "--adapter_size=4", "--lora_rank=2", "--layer_mix=scalar_mix",
                     "--schedule=slanted_triangular", "--clip_norm=0.5",
                     "--model_dir", adapters, *_COMMON),
    })
    for name, result in results.items():
        assert result.returncode == 0, (name, result.stderr[-3000:])

    # Gradual unfreezing: the stages are announced, the cosine rate is logged every step.
    config = json.load(open(os.path.join(unfreezing, "config.json")))
    assert config["gradual_unfreezing"] and config["unfreeze_every_steps"] == 4
    # "balanced" resolved from the training labels (n / (K·n_k), in config.json's label order)
    weights = config["task_options"]["class_weights"]
    assert len(weights) == len(config["labels"]) and config["task_options"]["label_smoothing"] == 0.1
    assert sum(w * n for w, n in zip(weights, _label_counts(config["labels"]))) == pytest.approx(
        sum(_label_counts(config["labels"])), rel=1e-3)  # Σ n_k · n / (K·n_k) = n
    assert "gradual unfreezing: step 4" in results["unfreezing"].stderr
    total, warmup = config["total_steps"], int(0.1 * config["total_steps"])
    schedule = learning_rate_schedule("cosine", 1e-3, total, warmup)
    rates = logged_step_rates(unfreezing)
    assert sorted(rates) == list(range(1, total + 1))
    for step, rate in rates.items():
        np.testing.assert_allclose(rate, float(schedule(step - 1)), rtol=1e-5, atol=1e-9)

    # Adapters + LoRA + scalar mix: a small trainable part, saved in the model it made.
    config = json.load(open(os.path.join(adapters, "config.json")))
    assert config["clip_norm"] == 0.5
    assert 0 < config["trainable_parameters"] < config["total_parameters"] / 2
    model = keras.saving.load_model(os.path.join(adapters, "best_model.keras"))
    transformer = model.encoder.transformer
    assert (transformer.adapter_size, transformer.lora_rank, model.encoder.layer_mix) == (
        4, 2, "scalar_mix")
    result = run_tool("evaluate.py", "--model_dir", adapters,
                      "--data", os.path.join(CONLL, "dev.txt"))
    assert result.returncode == 0, result.stderr[-3000:]


def test_incompatible_flags_are_refused_before_anything_is_written(tmp_path):
    cases = {"adapters": ("--gradual_unfreezing", "--adapter_size=4"),
             "lora": ("--freeze_encoder", "--lora_rank=2"),
             "top_layers": ("--trainable_layers=1", "--lora_rank=2"),
             "top_layers_thawing": ("--trainable_layers=1", "--gradual_unfreezing"),
             "too_many_layers": ("--trainable_layers=3",),  # bert_tiny has 2 blocks
             "class_weights": ("--class_weights=1,2",)}  # TREC has 6 labels
    results = run_tools({  # at once: each is mostly a process start
        name: ("train.py", "--train_data", os.path.join(TREC, "train.label"),
               "--eval_data", os.path.join(TREC, "dev.label"),
               "--model_dir", str(tmp_path / name), *flags, *_COMMON)
        for name, flags in cases.items()})
    for name, result in results.items():
        assert result.returncode != 0
        [line] = [l for l in result.stderr.splitlines() if l.startswith("error:")]
        assert ("--adapter_size" in line or "lora_rank" in line
                or "--trainable_layers" in line or "class_weights has 2 weights" in line), line
        model_dir = tmp_path / name
        assert not model_dir.exists() or not any(model_dir.iterdir())
