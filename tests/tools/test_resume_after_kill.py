"""tools/train.py killed (SIGKILL) or stopped (Ctrl-C) at each moment of a run, then run again.

The resumed run must start from its last saved step (not the epoch's start),
train exactly the configured number of steps, and end with the metrics of a
run that was never interrupted. Tolerance: 1e-6 on every metric — the resumed
run replays the same batches (seeded shuffle, `skip`) with the same dropout
masks (their generator states are saved), so on CPU the figures agree to
rounding.
"""

import json
import os
import signal
import time

import pytest

from tests.helpers.binaries import finish_processes, run_tool, start_tool
from tests.helpers.paths import ROOT

SAMPLES = os.path.join(ROOT, "samples")
EPOCHS = 2
EVERY = 4


def _flags(model_dir):
    return ["--task=classification", "--preset=bert_tiny",
            f"--train_data={os.path.join(SAMPLES, 'trec', 'train.label')}",
            f"--eval_data={os.path.join(SAMPLES, 'trec', 'dev.label')}",
            f"--model_dir={model_dir}", f"--epochs={EPOCHS}", "--batch_size=16",
            "--max_seq_length=32", "--vocab_size=400", "--mixed_precision=float32",
            f"--checkpoint_every_steps={EVERY}", "--log_every_steps=1", "--seed=7"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("uninterrupted") / "run")
    result = run_tool("train.py", *_flags(model_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    steps_per_epoch = config["steps_per_epoch"]  # about 300 / 16, as bucketing falls
    assert f"trained {EPOCHS * steps_per_epoch} steps" in result.stdout
    return json.load(open(os.path.join(model_dir, "metrics.json"))), steps_per_epoch


def _saved_step(model_dir):
    try:
        with open(os.path.join(model_dir, "checkpoints", "training_state.json")) as f:
            return json.load(f)["step"]
    except (OSError, ValueError):
        return None


def _stdout_so_far(process):
    stdout = process.output_files[0]
    stdout.seek(0)
    return stdout.read()


def _wait_for(process, condition, what, timeout=600):
    deadline = time.time() + timeout
    while not condition():
        if process.poll() is not None:
            result = finish_processes({"train": process})["train"]
            pytest.fail(f"train.py ended (code {result.returncode}) before {what}: "
                        f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
        if time.time() > deadline:
            process.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def _interrupt(model_dir, condition, what, signum=signal.SIGKILL):
    """Starts a run, sends `signum` once `condition()` holds; its CompletedProcess."""
    process = start_tool("train.py", *_flags(model_dir))
    _wait_for(process, condition, what)
    process.send_signal(signum)
    return finish_processes({"train": process})["train"]


def _assert_same_metrics(model_dir, expected):
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert metrics.keys() == expected.keys()
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value, abs=1e-6), name


def _resume(model_dir, uninterrupted, from_step):
    expected, steps_per_epoch = uninterrupted
    result = run_tool("train.py", *_flags(model_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    if from_step:
        assert f"resuming from step {from_step} of {EPOCHS * steps_per_epoch}" in result.stdout
    else:
        assert "resuming" not in result.stdout
    assert f"trained {EPOCHS * steps_per_epoch} steps" in result.stdout
    _assert_same_metrics(model_dir, expected)
    assert not os.path.exists(os.path.join(model_dir, "checkpoints"))
    return result


def test_killed_mid_epoch_resumes_at_its_last_saved_step(tmp_path, uninterrupted):
    model_dir = str(tmp_path / "run")
    steps_per_epoch = uninterrupted[1]
    # In the second epoch, between two saves: neither a fresh start nor an epoch's start.
    target = steps_per_epoch + EVERY - steps_per_epoch % EVERY
    killed = _interrupt(model_dir, lambda: (_saved_step(model_dir) or 0) >= target,
                        f"the state of step {target}")
    assert killed.returncode == -signal.SIGKILL
    step = _saved_step(model_dir)
    assert step % steps_per_epoch, f"the kill came late, at an epoch's end (step {step})"
    _resume(model_dir, uninterrupted, from_step=step)


def test_killed_before_the_first_save_starts_again(tmp_path, uninterrupted):
    model_dir = str(tmp_path / "run")
    process = start_tool("train.py", *_flags(model_dir))
    _wait_for(process, lambda: "distribution:" in _stdout_so_far(process), "training starts")
    process.send_signal(signal.SIGKILL)
    finish_processes({"train": process})
    assert _saved_step(model_dir) is None  # config.json and no metrics.json: resumable
    _resume(model_dir, uninterrupted, from_step=None)


def test_killed_during_the_final_evaluation_only_evaluates(tmp_path, uninterrupted):
    model_dir = str(tmp_path / "run")
    process = start_tool("train.py", *_flags(model_dir))
    _wait_for(process, lambda: "evaluating the best model" in _stdout_so_far(process),
              "the final evaluation")
    process.send_signal(signal.SIGKILL)
    finish_processes({"train": process})
    assert not os.path.exists(os.path.join(model_dir, "metrics.json"))
    result = _resume(model_dir, uninterrupted, from_step=EPOCHS * uninterrupted[1])
    assert "Epoch " not in result.stdout  # nothing trained again


def test_ctrl_c_saves_the_state_and_says_how_to_resume(tmp_path, uninterrupted):
    model_dir = str(tmp_path / "run")
    stopped = _interrupt(model_dir, lambda: (_saved_step(model_dir) or 0) >= EVERY,
                         f"the state of step {EVERY}", signum=signal.SIGINT)
    assert stopped.returncode == 130, stopped.stderr[-2000:]
    step = _saved_step(model_dir)
    assert (f"interrupted at step {step} of {EPOCHS * uninterrupted[1]}: the same command "
            "resumes") in stopped.stderr
    _resume(model_dir, uninterrupted, from_step=step)
