"""tools/multitask.py killed (SIGKILL) in the middle of an epoch, then run again with the same
command (as tests/tools/test_resume_after_kill.py does for tools/train.py).

The resumed run must start from its last saved step, train exactly the
planned number of steps and end with the metrics of a run that was never
interrupted: each entry's stream skips the batches the plan drew from it
before the saved step, and the dropout states are saved with the weights.
"""

import json
import os
import signal

import pytest

from tests.helpers.binaries import finish_processes, run_tool, start_tool
from tests.helpers.paths import CONLL, TREC
from tests.tools.test_resume_after_kill import _saved_step, _wait_for

EPOCHS = 2
EVERY = 4


def _flags(folder):
    tasks = folder / "tasks.txt"
    tasks.write_text(f"trec --task=classification --train_data={TREC}/train.label "
                     f"--eval_data={TREC}/dev.label\n"
                     f"conll --task=tagging --head=softmax --train_data={CONLL}/train.txt "
                     f"--eval_data={CONLL}/dev.txt\n")
    return [f"--tasks={tasks}", f"--model_dir={folder / 'run'}", f"--epochs={EPOCHS}",
            "--batch_size=16", "--vocab_size=300", "--max_seq_length=32",
            "--mixed_precision=float32", f"--checkpoint_every_steps={EVERY}", "--seed=7"]


def _metrics(model_dir):
    return json.load(open(os.path.join(model_dir, "metrics.json")))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uninterrupted")
    result = run_tool("multitask.py", *_flags(folder))
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.load(open(folder / "run" / "config.json"))
    return _metrics(folder / "run"), config["total_steps"]


@pytest.mark.slow  # three multi-task runs (about 2 min); make test keeps train's resume-after-kill test
def test_killed_mid_epoch_resumes_at_its_last_saved_step(tmp_path, uninterrupted):
    expected, total_steps = uninterrupted
    model_dir = str(tmp_path / "run")
    first_epoch = total_steps // EPOCHS  # about; the kill only needs to come mid-epoch
    target = first_epoch + EVERY - first_epoch % EVERY
    process = start_tool("multitask.py", *_flags(tmp_path))
    _wait_for(process, lambda: (_saved_step(model_dir) or 0) >= target,
              f"the state of step {target}")
    process.send_signal(signal.SIGKILL)
    killed = finish_processes({"multitask": process})["multitask"]
    assert killed.returncode == -signal.SIGKILL
    step = _saved_step(model_dir)
    assert 0 < step < total_steps and step % EVERY == 0, step  # a step save, not an epoch end

    resumed = run_tool("multitask.py", *_flags(tmp_path))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from step {step} of {total_steps}" in resumed.stdout
    assert not os.path.exists(os.path.join(model_dir, "checkpoints"))
    metrics = _metrics(model_dir)
    assert metrics.keys() == expected.keys()
    for entry, values in expected.items():
        for name, value in values.items():
            assert metrics[entry][name] == pytest.approx(value, abs=1e-6), (entry, name)
