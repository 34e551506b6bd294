"""tools/pretrain.py stopped with Ctrl-C mid-interval, then run again: it resumes at the saved
step and ends with the uninterrupted run's held-out metrics (the masked stream is a pure
function of the seed, so the resumed run sees the same batches and masks)."""

import json
import os
import signal

import pytest

from tests.helpers.binaries import finish_processes, run_tool, start_tool
from tests.helpers.paths import TREC
from tests.tools.test_resume_after_kill import _saved_step, _wait_for

STEPS, INTERVAL = 12, 6


def _corpus(directory):
    corpus = directory / "corpus.txt"
    with open(os.path.join(TREC, "train.label"), encoding="latin-1") as f:
        corpus.write_text("\n".join(line.split(" ", 1)[1].strip() for line in f) + "\n",
                          encoding="utf-8")
    return corpus


def _flags(corpus, model_dir):
    return ["--preset=bert_tiny", "--objective=mlm", f"--corpus={corpus}",
            f"--model_dir={model_dir}", "--vocab_size=400", f"--max_steps={STEPS}",
            f"--steps_per_checkpoint={INTERVAL}", "--batch_size=8", "--max_seq_length=32",
            "--learning_rate=1e-3", "--mixed_precision=float32", "--log_every_steps=1"]


@pytest.mark.slow
def test_ctrl_c_mid_interval_resumes_to_the_uninterrupted_metrics(tmp_path):
    corpus = _corpus(tmp_path)
    reference_dir = str(tmp_path / "reference")
    reference = run_tool("pretrain.py", *_flags(corpus, reference_dir))
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = json.load(open(os.path.join(reference_dir, "metrics.json")))

    model_dir = str(tmp_path / "run")
    process = start_tool("pretrain.py", *_flags(corpus, model_dir))
    # The first interval saved: the stop lands in the second one, before its end.
    _wait_for(process, lambda: _saved_step(model_dir) == INTERVAL, "the first save")
    process.send_signal(signal.SIGINT)
    stopped = finish_processes({"pretrain": process})["pretrain"]
    assert stopped.returncode == 130, stopped.stderr[-2000:]
    step = _saved_step(model_dir)
    assert INTERVAL < step < STEPS, step
    assert f"interrupted at step {step} of {STEPS}" in stopped.stderr

    resumed = run_tool("pretrain.py", *_flags(corpus, model_dir))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from step {step} of {STEPS}" in resumed.stdout
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    for name, value in expected.items():
        if name != "training_seconds":
            assert metrics[name] == pytest.approx(value, abs=1e-6), name
