"""tools/multitask.py as a run: its per-step TensorBoard series, Ctrl-C, and an entry that is
never sampled (the rest: tests/test_multitask.py, tests/test_multitask_outputs.py)."""

import json
import signal
import time
import types

import keras
import numpy as np
import pytest

from nlpzoo.tasks.training.optimization import create_optimizer, learning_rate_at
from nlpzoo.tasks.training.shared_encoder_training import StepLog
from tests.helpers.binaries import finish_processes, run_tools, start_tool
from tests.helpers.paths import CONLL, TREC
from tests.tasks.training.test_tensorboard import _events


def _entry(name):
    return types.SimpleNamespace(name=name, loss_mean=keras.metrics.Mean())


def test_step_log_writes_the_rate_and_each_entry_s_mean_loss_since_the_last_write(tmp_path):
    optimizer = create_optimizer(1e-3, total_steps=10, warmup_steps=2, head_learning_rate=4e-3)
    trec, conll = _entry("trec"), _entry("conll")
    log = StepLog(str(tmp_path), [trec, conll], optimizer, every_steps=3)
    log.epoch_begins()
    # step: (entry, its batch loss); writes at steps 3 and 6, and 7 (the epoch's end).
    for step, (entry, loss) in enumerate([(trec, 1.0), (conll, 4.0), (trec, 2.0),
                                          (trec, 6.0), (trec, 5.0), (trec, 1.0),
                                          (conll, 2.0)], 1):
        entry.loss_mean.update_state(loss)
        log.after_step(step, epoch_ends=step == 7)
    log.close()
    trec_logs = _events(str(tmp_path / "trec" / "train"))
    conll_logs = _events(str(tmp_path / "conll" / "train"))
    assert trec_logs["loss/step"] == pytest.approx({3: 1.5, 6: 4.0})  # nothing new at 7
    assert conll_logs["loss/step"] == pytest.approx({3: 4.0, 7: 2.0})
    rates = _events(str(tmp_path / "train"))
    for step in (3, 6, 7):
        expected = float(learning_rate_at(optimizer, step - 1))
        assert rates["learning_rate/step"][step] == pytest.approx(expected)
        assert rates["learning_rate/head"][step] == pytest.approx(4 * expected)
    # Warm-up over steps 0 and 1, then a linear decay to 0 at step 10: step 6 applies 5/8.
    assert rates["learning_rate/step"][6] == pytest.approx(1e-3 * 5 / 8)


# --- the binary -------------------------------------------------------------------------------

_COMMON = ("--epochs=1", "--batch_size=16", "--vocab_size=300", "--max_seq_length=32",
           "--mixed_precision=float32", "--seed=3")


def _tasks_file(folder, conll_weight):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tasks.txt"
    path.write_text(f"trec --task=classification --train_data={TREC}/train.label "
                    f"--eval_data={TREC}/dev.label\n"
                    f"conll --task=tagging --head=softmax --train_data={CONLL}/train.txt "
                    f"--eval_data={CONLL}/dev.txt --weight={conll_weight}\n")
    return str(path)


def _wait_for_line(process, text, timeout=600):
    deadline = time.time() + timeout
    while True:
        stdout = process.output_files[0]
        stdout.seek(0)
        if text in stdout.read():
            return
        if process.poll() is not None or time.time() > deadline:
            result = finish_processes({"run": process})["run"]
            pytest.fail(f"multitask.py ended or hung before {text!r}: {result.stderr[-2000:]}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two one-epoch runs where conll has weight 0, from the same seed at two learning rates;
    and a run stopped by Ctrl-C in its first epoch (its state saved)."""
    base = tmp_path_factory.mktemp("multitask")
    never = _tasks_file(base / "never", conll_weight=0)
    stopped = start_tool("multitask.py", f"--tasks={_tasks_file(base / 'stop', 1)}",
                         f"--model_dir={base / 'stop' / 'run'}", *_COMMON[1:], "--epochs=3")
    _wait_for_line(stopped, "multi-task training of")
    time.sleep(1.0)
    stopped.send_signal(signal.SIGINT)
    results = run_tools({
        rate: ("multitask.py", f"--tasks={never}", f"--model_dir={base / rate}",
               f"--learning_rate={rate}", "--log_every_steps=1", *_COMMON)
        for rate in ("1e-3", "3e-3")})
    results["stop"] = finish_processes({"stop": stopped})["stop"]
    for rate in ("1e-3", "3e-3"):
        assert results[rate].returncode == 0, results[rate].stderr[-3000:]
    return base, results


def _weights(path):
    model = keras.saving.load_model(path)
    encoder = {v.path: np.array(v) for v in model.encoder.weights}
    head = {v.path: np.array(v) for v in model.weights
            if not any(v is w for w in model.encoder.weights)}
    return encoder, head


@pytest.mark.slow  # three runs of the binary at once
def test_a_never_sampled_head_stays_put_while_the_shared_encoder_moves(runs):
    base, _ = runs
    slow_trec, slow_conll = (_weights(str(base / "1e-3" / name / "best_model.keras"))
                             for name in ("trec", "conll"))
    fast_trec, fast_conll = (_weights(str(base / "3e-3" / name / "best_model.keras"))
                             for name in ("trec", "conll"))
    # One encoder under both heads: their best models (both of epoch 1) hold the same weights.
    assert slow_trec[0].keys() == slow_conll[0].keys()
    for path, value in slow_trec[0].items():
        np.testing.assert_array_equal(value, slow_conll[0][path], err_msg=path)
    # The same start (seed 3), two learning rates: the encoder and the trained head moved
    # differently; conll's head, never drawn (weight 0), is its initial value in both.
    moved = [not np.allclose(value, fast_trec[0][path]) for path, value in slow_trec[0].items()]
    assert sum(moved) > len(moved) // 2
    assert any(not np.allclose(value, fast_trec[1][path])
               for path, value in slow_trec[1].items())
    assert slow_conll[1].keys() == fast_conll[1].keys() and slow_conll[1]
    for path, value in slow_conll[1].items():
        np.testing.assert_array_equal(value, fast_conll[1][path], err_msg=path)


@pytest.mark.slow
def test_per_step_losses_add_up_to_the_epoch_loss(runs):
    base, results = runs
    config = json.load(open(base / "1e-3" / "config.json"))
    assert config["entries"]["conll"]["probability"] == 0.0
    logs = base / "1e-3" / "logs"
    trec, conll = _events(str(logs / "trec" / "train")), _events(str(logs / "conll" / "train"))
    steps = config["total_steps"]
    assert int(trec["epoch_batches"][0]) == steps and conll["epoch_batches"][0] == 0
    # --log_every_steps=1: one loss/step per batch, whose mean is the epoch's loss.
    assert sorted(trec["loss/step"]) == list(range(1, steps + 1))
    assert np.mean(list(trec["loss/step"].values())) == pytest.approx(trec["epoch_loss"][0],
                                                                      rel=1e-5)
    assert "loss/step" not in conll and "epoch_loss" not in conll
    rates = _events(str(logs / "train"))["learning_rate/step"]
    assert sorted(rates) == list(range(1, steps + 1))
    assert max(rates.values()) == pytest.approx(1e-3) and rates[steps] < rates[1] + 1e-3


@pytest.mark.slow
def test_ctrl_c_saves_the_state_and_a_changed_command_is_refused(runs):
    base, results = runs
    stopped = results["stop"]
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    last = stopped.stderr.strip().splitlines()[-1]
    assert last.startswith("interrupted at step ") and "the same command resumes" in last
    run_dir = base / "stop" / "run"
    assert (run_dir / "config.json").exists() and not (run_dir / "metrics.json").exists()
    assert not (run_dir / "encoder").exists()
    assert (run_dir / "checkpoints" / "training_state.json").exists()
    # The same command resumes (tests/tools/test_multitask_resume.py); other settings do not.
    again = run_tools({"again": ("multitask.py", f"--tasks={base / 'stop' / 'tasks.txt'}",
                                 f"--model_dir={run_dir}", *_COMMON)})["again"]
    assert again.returncode == 1
    last = again.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: --model_dir={run_dir} holds an interrupted run with other "
                           "settings (epochs: 3 → 1")
    assert last.endswith("pass --overwrite to start again")
