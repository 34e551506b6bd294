"""tools/train.py --gradient_accumulation_steps end to end; its refusals in one line.

The maths (the updates of one n-times larger batch, exact resume) is tested
in process: tests/tasks/training/test_gradient_accumulation.py.
"""

import json
import os
import shutil
import types

import pytest

from nlpzoo.tasks.io.errors import UserError
from nlpzoo.tasks.training.optimization import WarmupLinearDecay
from nlpzoo.tools.cli import run_setup
from tests.helpers.binaries import run_tool, run_tools
from tests.helpers.tensorboard_logs import logged_step_rates
from tests.helpers.paths import TREC

TRAIN, TEST = os.path.join(TREC, "train.label"), os.path.join(TREC, "test.label")
SMALL = ("--vocab_size=300", "--max_seq_length=32", "--mixed_precision=float32",
         "--jit_compile=false")


@pytest.mark.slow  # one real training run (about 40 s here)
def test_train_accumulates_and_counts_steps_in_updates(tmp_path):
    model_dir = str(tmp_path / "run")
    result = run_tool("train.py", "--train_data", TRAIN, "--eval_data", TEST,
                      "--model_dir", model_dir, "--epochs=2", "--batch_size=16",
                      "--gradient_accumulation_steps=2", "--log_every_steps=1",
                      "--learning_rate=1e-3", *SMALL)
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["gradient_accumulation_steps"] == 2
    # 300 examples in batches of 16 (bucketed by length: about 19 to 22 batches): whole
    # updates of 2 batches per epoch, and the schedule over those updates.
    assert 8 <= config["steps_per_epoch"] <= 12
    assert config["total_steps"] == 2 * config["steps_per_epoch"]
    assert (f"{config['steps_per_epoch']} steps per epoch (each an update of 2 batches of "
            "16: the updates of batch 32)") in result.stdout
    assert f"trained {config['total_steps']} steps" in result.stdout
    # The per-step rate is logged once per update, on the schedule of the updates.
    total = config["total_steps"]
    schedule = WarmupLinearDecay(1e-3, int(0.1 * total), total)
    rates = logged_step_rates(model_dir)
    assert sorted(rates) == list(range(1, total + 1))
    for step, rate in rates.items():
        assert rate == pytest.approx(float(schedule(step - 1)), abs=1e-9)

    # An interrupted run (no metrics.json) resumes only with the same accumulation.
    interrupted = str(tmp_path / "interrupted")
    shutil.copytree(model_dir, interrupted)
    os.remove(os.path.join(interrupted, "metrics.json"))
    refused = run_tool("train.py", "--train_data", TRAIN, "--eval_data", TEST,
                       "--model_dir", interrupted, "--epochs=2", "--batch_size=16",
                       "--gradient_accumulation_steps=4", "--learning_rate=1e-3", *SMALL)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "gradient_accumulation_steps: 2 → 4" in refused.stderr


def test_refusals_are_one_line(tmp_path):
    results = run_tools({
        "too many": ("train.py", "--train_data", TRAIN, "--eval_data", TEST,
                     "--model_dir", str(tmp_path / "never"), "--batch_size=128",
                     "--gradient_accumulation_steps=8", *SMALL),
        "distill": ("distill.py", "--teacher", str(tmp_path / "t"), "--train_data", TRAIN,
                    "--eval_data", TEST, "--model_dir", str(tmp_path / "d"),
                    "--gradient_accumulation_steps=2"),
    })
    for result in results.values():
        assert result.returncode == 1 and "Traceback" not in result.stderr
    error = [line for line in results["too many"].stderr.splitlines() if "error:" in line]
    assert error and "--gradient_accumulation_steps=8 exceeds the" in error[-1]
    assert not os.path.exists(tmp_path / "never")
    assert ("--gradient_accumulation_steps=2: tools/distill.py does not accumulate gradients"
            in results["distill"].stderr)


def test_several_replicas_are_refused():
    flag_values = types.SimpleNamespace(gradient_accumulation_steps=2)
    with pytest.raises(UserError, match="not supported with 2 replicas"):
        run_setup.check_gradient_accumulation(
            flag_values, types.SimpleNamespace(num_replicas_in_sync=2))
    run_setup.check_gradient_accumulation(flag_values,
                                          types.SimpleNamespace(num_replicas_in_sync=1))
