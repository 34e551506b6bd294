"""benchmarks/gpu_check.sh: its one-line refusals, and (slow) its dry run on CPU."""

import json
import os
import shutil
import subprocess

import pytest

from tests.helpers.paths import ROOT

SCRIPT = os.path.join(ROOT, "benchmarks", "gpu_check.sh")


def _run(*arguments, timeout=60):
    return subprocess.run(["sh", SCRIPT, *arguments], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_an_unknown_argument_is_refused_in_one_line():
    result = _run("--dryrun")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: unknown argument --dryrun (usage:")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU is here")
def test_without_a_gpu_it_says_so_and_points_at_the_dry_run():
    result = _run()
    assert result.returncode == 1
    assert result.stderr.strip() == ("error: no NVIDIA GPU here (nvidia-smi failed); run with "
                                     "--dry_run to check the script on CPU")


@pytest.mark.slow
def test_the_dry_run_passes_on_cpu_and_writes_one_record(tmp_path):
    out = tmp_path / "gpu_check.json"
    result = _run("--dry_run", f"--out={out}", timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["dry_run"] is True and record["passed"] is True
    steps = record["steps"]
    assert set(steps) == {"task_tests_collected", "task_tests", "finetune", "keras_encoder"} | {
        f"encoder_speed_jit_{jit}_{precision}" for jit in ("true", "false")
        for precision in ("mixed_bfloat16", "float32")}
    assert all(step["exit_status"] == 0 for step in steps.values())
    speed = steps["encoder_speed_jit_true_float32"]["result"]
    assert (speed["benchmark"], speed["jit_compile"], speed["policy"]) == (
        "encoder_speed", True, "float32")
    assert steps["finetune"]["result"]["benchmark"] == "finetune"
    keras_encoder = steps["keras_encoder"]["result"]
    assert keras_encoder["passed"] is True and keras_encoder["numerics"]["padding_ok"] is True
    for speed in keras_encoder["speed"]:  # each ratio and MFU is the quotient of its figures
        for mode in ("train", "predict"):
            medians = {name: figures["median"]
                       for name, figures in speed["tokens_per_second"][mode].items()}
            assert speed["ratio"][mode] == pytest.approx(
                medians["ours"] / medians["kerashub"], abs=1e-4)
            assert speed["mfu"][mode]["ours"] == pytest.approx(
                medians["ours"] * speed["flops_per_token"][mode]
                / (speed["matmul_peak_gflops"] * 1e9), rel=2e-3, abs=1e-4)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "passed": True, "record": str(out), "failed": []}
