"""A broken run never looks like a good one, and a binary never ends in a traceback.

NaN learning rates and losses, two runs on one directory, Ctrl-C at start-up, a closed
output pipe, empty path flags and unexpected internal errors: each ends in one line and a
non-zero exit, and leaves nothing that passes for a finished model.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from absl import flags

from tests.helpers.binaries import run_tools, tool_path
from tests.helpers.paths import ROOT, TREC
from nlpzoo.zoo.runs import directory as md
from nlpzoo.tools.cli.errors import UserError, check_numbers, run

TRAIN = ("train.py", "--train_data", os.path.join(TREC, "train.label"),
         "--eval_data", os.path.join(TREC, "dev.label"), "--vocab_size=300",
         "--max_seq_length=32", "--mixed_precision=float32", "--epochs=2")


def _errors(stderr):
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def _strict_json(path):
    def refuse(constant):
        raise ValueError(f"{path} holds {constant}: not strict JSON")
    with open(path) as f:
        return json.load(f, parse_constant=refuse)


def test_a_nan_loss_stops_the_run_keeps_the_last_good_state_and_writes_no_metrics(tmp_path):
    model_dir = str(tmp_path / "run")
    # Adam moves each weight by about the learning rate: 1e38 overflows float32 at once.
    result = run_tools({"run": (*TRAIN, f"--model_dir={model_dir}", "--learning_rate=1e38",
                                "--checkpoint_every_steps=1")})["run"]
    assert result.returncode == 1, result.stderr[-2000:]
    [error] = _errors(result.stderr)
    found = re.search(r"the training loss became (nan|inf) at step (\d+): training stopped "
                      r"\(the last good state \(step (\d+)\) is kept in", error)
    assert found and int(found.group(3)) == int(found.group(2)) - 1, error
    assert "Traceback" not in result.stderr
    assert not os.path.exists(md.path(model_dir, md.METRICS))
    assert not os.path.exists(md.path(model_dir, md.BEST_MODEL))
    state = _strict_json(os.path.join(model_dir, md.CHECKPOINTS, "training_state.json"))
    assert state["step"] == int(found.group(3))  # nothing saved from the NaN step on
    assert _strict_json(md.path(model_dir, md.CONFIG))["learning_rate"] == 1e38


@pytest.mark.parametrize("argument, message", [
    ("--learning_rate=nan", "--learning_rate=nan: expected a finite number"),
    ("--learning_rate=inf", "--learning_rate=inf: expected a finite number"),
    ("--learning_rate=0", "--learning_rate=0.0: a learning rate must be > 0"),
    ("--head_learning_rate=-1e-3", "--head_learning_rate=-0.001: a learning rate must be > 0"),
    ("--dropout=nan", "--dropout=nan: expected a finite number"),
])
def test_non_finite_and_non_positive_numbers_are_refused(argument, message):
    values = flags.FlagValues()
    for name in ("learning_rate", "head_learning_rate", "dropout"):
        flags.DEFINE_float(name, None, "", flag_values=values)
    values(["prog", argument])
    with pytest.raises(UserError, match=message.replace("(", "\\(")):
        check_numbers(values)


def test_binaries_refuse_nan_flags_and_empty_paths_in_one_line(tmp_path):
    results = run_tools({
        "nan": (*TRAIN, f"--model_dir={tmp_path / 'a'}", "--learning_rate=nan"),
        "empty model_dir": (*TRAIN, "--model_dir="),
        "empty output": ("predict.py", f"--model_dir={tmp_path}", "--input=x", "--output="),
    })
    expected = {"nan": "error: --learning_rate=nan: expected a finite number",
                "empty model_dir": "error: --model_dir is empty: give a path",
                "empty output": "error: --output is empty: give a path"}
    for name, result in results.items():
        assert result.returncode == 1 and _errors(result.stderr) == [expected[name]], \
            (name, result.stderr[-2000:])
    assert not (tmp_path / "a").exists()


def test_a_second_run_on_a_directory_is_refused_and_a_killed_ones_lock_is_not(tmp_path):
    model_dir = str(tmp_path / "run")
    assert md.prepare(model_dir) is False  # ours now, and locked by this process
    os.makedirs(tmp_path / "other")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from nlpzoo.tasks.io.run_lock import hold_run_lock; "
         "hold_run_lock(sys.argv[1], '--model_dir'); print('held', flush=True); time.sleep(60)",
         str(tmp_path / "other")], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        # This process holds `model_dir`: a second process is refused at once, named.
        second = subprocess.run(
            [sys.executable, "-c", "import sys; from nlpzoo.zoo.runs import directory as md; "
             "md.prepare(sys.argv[1])", model_dir], cwd=ROOT, capture_output=True, text=True)
        assert second.returncode == 1
        assert f"--model_dir={model_dir} is in use by process {os.getpid()}" in second.stderr
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=f"is in use by process {holder.pid} "):
            md.prepare(str(tmp_path / "other"))
        holder.send_signal(signal.SIGKILL)  # a killed run: its lock goes with it
        holder.wait()
        assert md.prepare(str(tmp_path / "other")) is False
    finally:
        holder.kill()
        holder.wait()


def test_two_trainings_on_one_directory_one_is_refused(tmp_path):
    model_dir = str(tmp_path / "run")
    results = run_tools({name: (*TRAIN, f"--model_dir={model_dir}", "--epochs=3")
                         for name in ("first", "second")})
    codes = sorted(result.returncode for result in results.values())
    assert codes == [0, 1], {name: r.stderr[-1500:] for name, r in results.items()}
    refused = next(result for result in results.values() if result.returncode == 1)
    assert _errors(refused.stderr) and "is in use by process" in _errors(refused.stderr)[0]
    assert os.path.exists(md.path(model_dir, md.METRICS))


def test_ctrl_c_while_starting_exits_130_in_one_line(tmp_path):
    process = subprocess.Popen([sys.executable, tool_path("train.py"), *TRAIN[1:],
                                f"--model_dir={tmp_path / 'run'}"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    time.sleep(1.5)  # importing TensorFlow
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr and "interrupted (Ctrl-C)" in stderr
    assert not (tmp_path / "run").exists()


def test_a_closed_output_pipe_ends_predict_quietly(trained_classifier_dir, tmp_path):
    questions = tmp_path / "questions.txt"
    questions.write_text("What is the capital of France ?\n" * 3000)
    process = subprocess.Popen(
        [sys.executable, tool_path("predict.py"), f"--model_dir={trained_classifier_dir}",
         f"--input={questions}", "--output=-", "--input_format=text"], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    first = process.stdout.readline()  # `| head -1`
    process.stdout.close()
    stderr = process.stderr.read()
    process.wait(timeout=300)
    assert first.startswith("{")
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr[-2000:]
    assert process.returncode in (0, 141)


def test_an_internal_error_is_one_line_and_a_traceback_file(monkeypatch, capsys):
    def main(argv):
        raise RuntimeError("something of ours broke\nsecond line")

    monkeypatch.setattr(sys, "argv", ["tools/train.py"])
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # leave pytest's Ctrl-C alone
    with pytest.raises(SystemExit) as stopped:
        run(main)
    assert stopped.value.code == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: internal error (RuntimeError: something of ours broke); "
                           "the full traceback is in ")
    where = line.split("the full traceback is in ")[1].split(";")[0]
    with open(where) as f:
        text = f.read()
    assert "Traceback" in text and "second line" in text  # the whole error is in the file
    os.remove(where)
