"""tools/train.py --ewc and --chain_thaw: a run, its resume after a kill, λ = 0, refusals."""

import json
import os
import re
import signal
import time

import numpy as np
import pytest

from tests.helpers.binaries import finish_processes, run_tools, start_tool
from tests.helpers.paths import TREC

EWC_AND_CHAIN_THAW = ("--ewc=0.5", "--ewc_fisher_batches=5", "--chain_thaw",
                      "--chain_thaw_steps=3")


def _flags(model_dir, *extra, epochs=2):
    return ["--task=classification", "--preset=bert_tiny",
            "--train_data", os.path.join(TREC, "train.label"),
            "--eval_data", os.path.join(TREC, "dev.label"), f"--model_dir={model_dir}",
            f"--epochs={epochs}", "--batch_size=16", "--max_seq_length=32",
            "--vocab_size=400", "--mixed_precision=float32", "--checkpoint_every_steps=4",
            "--learning_rate=1e-3", "--seed=7", *extra]


def _saved_step(model_dir):
    try:
        with open(os.path.join(model_dir, "checkpoints", "training_state.json")) as f:
            return json.load(f)["step"]
    except (OSError, ValueError):
        return None


def _fingerprint(stdout):
    return re.search(r"weights fingerprint .*", stdout).group(0)


def _fisher(model_dir):
    with np.load(os.path.join(model_dir, "ewc_fisher.npz")) as archive:
        return {name: archive[name] for name in archive.files}


# Slow: three small training runs (about two minutes on 2 cores).
@pytest.mark.slow
def test_a_killed_run_resumes_with_the_stored_fisher_in_its_chain_thaw_stage(tmp_path):
    whole, killed = str(tmp_path / "whole"), str(tmp_path / "killed")
    processes = {"whole": start_tool("train.py", *_flags(whole, *EWC_AND_CHAIN_THAW)),
                 "killed": start_tool("train.py", *_flags(killed, *EWC_AND_CHAIN_THAW))}
    deadline = time.time() + 600
    while (_saved_step(killed) or 0) < 8:  # saved at step 8: in stage 2 (steps 6-8)
        assert processes["killed"].poll() is None and time.time() < deadline
        time.sleep(0.02)
    processes["killed"].send_signal(signal.SIGKILL)
    results = finish_processes(processes)
    assert results["whole"].returncode == 0, results["whole"].stderr[-3000:]
    assert results["killed"].returncode == -signal.SIGKILL

    config = json.load(open(os.path.join(whole, "config.json")))
    assert (config["ewc"], config["ewc_fisher"], config["ewc_fisher_batches"],
            config["ewc_fisher_file"], config["chain_thaw"], config["chain_thaw_steps"]) == (
        0.5, "task", 5, "ewc_fisher.npz", True, 3)
    assert "EWC: Fisher estimated on at most 5 training batches" in results["whole"].stdout
    for step, stage in ((0, "head only (encoder frozen)"), (3, "block 1 and pooler only"),
                        (6, "block 0 only"), (9, "embeddings only"), (12, "everything")):
        assert f"chain-thaw: step {step}, {stage}" in results["whole"].stderr
    fisher = _fisher(whole)
    assert np.mean(np.concatenate([v.ravel() for v in fisher.values()])) == pytest.approx(1.0)

    step = _saved_step(killed)
    assert step % config["steps_per_epoch"], "the kill came at an epoch's end"
    stored = _fisher(killed)
    [resumed] = run_tools({"resumed": ("train.py", *_flags(killed, *EWC_AND_CHAIN_THAW))}
                          ).values()
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from step {step} of" in resumed.stdout
    assert "EWC: the Fisher of" in resumed.stdout  # read back, not estimated again
    stages = ["head only (encoder frozen)", "block 1 and pooler only", "block 0 only",
              "embeddings only", "everything"]
    assert f"chain-thaw: step {step}, {stages[min(step // 3, 4)]}" in resumed.stderr
    assert f"chain-thaw: step 0," not in resumed.stderr
    for path, values in fisher.items():  # the same estimate in both runs, kept as it was
        np.testing.assert_array_equal(stored[path], values)
        np.testing.assert_array_equal(_fisher(killed)[path], values)
    # The resumed run ends where the uninterrupted one did.
    assert _fingerprint(resumed.stdout) == _fingerprint(results["whole"].stdout)
    expected = json.load(open(os.path.join(whole, "metrics.json")))
    metrics = json.load(open(os.path.join(killed, "metrics.json")))
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value, abs=1e-6), name


@pytest.mark.slow
def test_a_strength_of_zero_is_no_ewc(tmp_path):
    results = run_tools({
        "plain": ("train.py", *_flags(str(tmp_path / "plain"), epochs=1)),
        "zero": ("train.py", *_flags(str(tmp_path / "zero"), "--ewc=0", epochs=1))})
    for result in results.values():
        assert result.returncode == 0, result.stderr[-3000:]
    assert _fingerprint(results["zero"].stdout) == _fingerprint(results["plain"].stdout)
    assert "EWC" not in results["zero"].stdout
    assert not os.path.exists(tmp_path / "zero" / "ewc_fisher.npz")
    config = json.load(open(tmp_path / "zero" / "config.json"))
    assert (config["ewc"], config["ewc_fisher"], config["ewc_fisher_file"]) == (0.0, None, None)


def test_incompatible_flags_are_refused_before_anything_is_written(tmp_path):
    cases = {"ewc_and_l2sp": (("--ewc=0.1", "--l2sp=0.1"), "--ewc"),
             "ewc_frozen": (("--ewc=0.1", "--freeze_encoder"), "--ewc"),
             "ewc_adapters": (("--ewc=0.1", "--adapter_size=4"), "--ewc"),
             "fisher_without_ewc": (("--ewc_fisher_batches=5",), "--ewc_fisher_batches"),
             "thaw_and_unfreeze": (("--chain_thaw", "--gradual_unfreezing"), "--chain_thaw"),
             "thaw_top_layers": (("--chain_thaw", "--trainable_layers=1"), "--chain_thaw"),
             "thaw_frozen": (("--chain_thaw", "--freeze_encoder"), "--chain_thaw"),
             "thaw_lora": (("--chain_thaw", "--lora_rank=2"), "--chain_thaw"),
             "steps_without_thaw": (("--chain_thaw_steps=3",), "--chain_thaw_steps")}
    results = run_tools({name: ("train.py", *_flags(str(tmp_path / name), *flags))
                         for name, (flags, _) in cases.items()}, at_once=4)
    for name, result in results.items():
        assert result.returncode != 0, name
        [line] = [l for l in result.stderr.splitlines() if l.startswith("error:")]
        assert cases[name][1] in line, (name, line)
        model_dir = tmp_path / name
        assert not model_dir.exists() or not any(model_dir.iterdir()), name
