"""tasks/io/progress.py: the lines on a terminal and in a log, rate and time left, the
switch, and a binary whose standard output stays machine-readable."""

import io
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags as absl_flags

from nlpzoo.tasks.io import progress as progress_module
from nlpzoo.tasks.io.progress import Progress, ProgressCallback, track
from nlpzoo.tasks.text.tokenizer import build_vocabulary
from tests.helpers.binaries import run_tools
from tests.helpers.paths import TREC
from nlpzoo.tools.cli.flags import define_progress_flag, enable_progress


class FakeClock:
    """Seconds that move only when the test says so."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def _switch_off_after():
    yield
    progress_module.set_enabled(False)


def test_log_lines_come_every_tenth_with_rate_and_time_left():
    clock, log = FakeClock(), io.StringIO()
    progress = Progress("predicting", total=40, stream=log, enabled=True, clock=clock)
    for _ in range(40):
        clock.now += 0.5  # 2 batches/s
        progress.advance()
    progress.finish()
    lines = log.getvalue().splitlines()
    # One line per 10% (4 batches), the 100% one being the final line: never one per batch.
    assert len(lines) == 10
    assert lines[0] == "predicting: 4/40 batches (10%), 2.00 batches/s, 18 s left"
    assert lines[4] == "predicting: 20/40 batches (50%), 2.00 batches/s, 10 s left"
    assert lines[-1] == "predicting: 40/40 batches (100%) in 20 s, 2.00 batches/s"


def test_time_left_follows_the_rate_after_the_first_update():
    clock, log = FakeClock(), io.StringIO()
    progress = Progress("evaluating", total=1000, unit="texts", stream=log, enabled=True,
                        clock=clock)
    clock.now += 50
    progress.update(100)  # 2 texts/s so far, but how fast after the first batch?
    clock.now += 200
    progress.update(200)  # 0.5 texts/s since the first update: 800 left take 1,600 s
    clock.now += 100
    progress.update(400)  # 300 texts in 300 s since then: 600 left take 600 s
    progress.finish()  # the final line: 400 texts in 350 s
    assert log.getvalue().splitlines() == [
        "evaluating: 100/1,000 texts (10%), 2.00 texts/s, ? left",
        "evaluating: 200/1,000 texts (20%), 0.500 texts/s, 26 min 40 s left",
        "evaluating: 400/1,000 texts (40%), 1.00 texts/s, 10 min 00 s left",
        "evaluating: 400/1,000 texts (40%) in 5 min 50 s, 1.14 texts/s"]


def test_a_slow_first_batch_does_not_inflate_the_time_left():
    clock, log = FakeClock(), io.StringIO()
    progress = Progress("predicting", total=10, stream=log, enabled=True, clock=clock)
    clock.now += 30  # tracing the model
    progress.advance()
    for _ in range(4):
        clock.now += 1
        progress.advance()
    assert log.getvalue().splitlines()[-1] == (
        "predicting: 5/10 batches (50%), 1.00 batches/s, 5 s left")


def test_a_slow_loop_without_a_total_gets_a_line_every_30_seconds():
    clock, log = FakeClock(), io.StringIO()
    with Progress("counting words", unit="texts", stream=log, enabled=True,
                  clock=clock) as progress:
        for count in range(1, 11):
            clock.now += 10
            progress.update(count * 1000, f"{count * 9000:,} words counted")
    assert log.getvalue().splitlines() == [
        "counting words: 3,000 texts, 100 texts/s, 27,000 words counted",
        "counting words: 6,000 texts, 100 texts/s, 54,000 words counted",
        "counting words: 9,000 texts, 100 texts/s, 81,000 words counted",
        "counting words: 10,000 texts in 1 min 40 s, 100 texts/s, 90,000 words counted"]


def test_a_terminal_gets_one_line_rewritten_in_place():
    clock, terminal = FakeClock(), Terminal()
    progress = Progress("predicting", total=10, stream=terminal, enabled=True, clock=clock,
                        refresh_seconds=0.25)
    for _ in range(10):
        clock.now += 0.125  # a rewrite at most every 0.25 s: every other batch
        progress.advance()
    written = terminal.getvalue()
    assert "\n" not in written  # one line, rewritten
    assert written.count("\r") == 5
    assert written.split("\r")[-1] == (
        "predicting: 10/10 batches (100%), 8.00 batches/s, 0 s left\x1b[K")
    progress.finish()
    assert terminal.getvalue().endswith(
        "\rpredicting: 10/10 batches (100%) in 1 s, 8.00 batches/s\x1b[K\n")


def test_an_error_ends_the_live_line_without_a_final_line():
    clock, terminal = FakeClock(), Terminal()
    with pytest.raises(RuntimeError):
        with Progress("predicting", total=10, stream=terminal, enabled=True,
                      clock=clock) as progress:
            clock.now += 1
            progress.advance()
            raise RuntimeError("bad batch")
    assert terminal.getvalue() == (
        "\rpredicting: 1/10 batches (10%), 1.00 batches/s, ? left\x1b[K\n")


def test_silent_unless_switched_on(capsys):
    assert not progress_module.is_enabled()
    assert list(track(range(5), "predicting")) == [0, 1, 2, 3, 4]
    build_vocabulary(["the cat sat", "the cat ran"] * 5, vocab_size=40)
    assert capsys.readouterr().err == ""
    assert list(track(range(5), "predicting", enabled=False)) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""


def test_track_counts_the_batches_of_a_dataset():
    log = io.StringIO()
    dataset = tf.data.Dataset.range(10).batch(4)  # 3 batches, known cardinality
    assert [len(batch) for batch in track(dataset, "predicting", stream=log,
                                          enabled=True)] == [4, 4, 2]
    assert log.getvalue().splitlines()[-1].startswith("predicting: 3/3 batches (100%) in ")
    stopped = io.StringIO()
    for _ in track(dataset, "predicting", stream=stopped, enabled=True):
        break  # stopped early: no final line
    assert stopped.getvalue() == ""


def test_the_keras_callback_counts_evaluate_batches():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(loss="mse")
    log = io.StringIO()
    x, y = np.zeros((10, 3), "float32"), np.zeros((10, 2), "float32")
    model.evaluate(x, y, batch_size=4, verbose=0,
                   callbacks=[ProgressCallback("evaluating", stream=log, enabled=True)])
    lines = log.getvalue().splitlines()  # each of the 3 batches is a tenth or more
    assert [line.split(",")[0] for line in lines[:2]] == [
        "evaluating: 1/3 batches (33%)", "evaluating: 2/3 batches (66%)"]
    assert lines[2].startswith("evaluating: 3/3 batches (100%) in ")


def test_vocabulary_learning_reports_counting_and_passes(capsys):
    progress_module.set_enabled(True)
    build_vocabulary(["the cat sat on the mat", "the dog ran"] * 50, vocab_size=60)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("counting words: 100 texts in ")
    assert lines[0].endswith(", 450 words counted")
    assert lines[1].startswith("learning WordPiece: ")
    assert " passes in " in lines[1] and " tokens" in lines[1]


@pytest.mark.slow  # several evaluate runs: about 35 s
def test_evaluate_binary_keeps_stdout_json_and_reports_on_stderr(trained_classifier_dir):
    data = os.path.join(TREC, "test.label")  # 100 questions: 4 batches of 32
    [result] = run_tools({"evaluate": ("evaluate.py", f"--model_dir={trained_classifier_dir}",
                                       f"--data={data}", "--batch_size=32")}).values()
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = result.stdout.splitlines()
    assert json.loads(line)["examples"] == 100
    shown = [line for line in result.stderr.splitlines() if line.startswith("evaluating: ")]
    assert [line.split(",")[0] for line in shown[:3]] == [
        "evaluating: 1/4 batches (25%)", "evaluating: 2/4 batches (50%)",
        "evaluating: 3/4 batches (75%)"]
    assert len(shown) == 4 and shown[3].startswith("evaluating: 4/4 batches (100%) in ")


def test_the_progress_flag_sets_the_switch():
    values = absl_flags.FlagValues()
    define_progress_flag(values)
    values(["evaluate", "--noprogress"])
    progress_module.set_enabled(True)
    enable_progress(values)
    assert not progress_module.is_enabled()
    values(["evaluate", "--progress"])
    enable_progress(values)
    assert progress_module.is_enabled()
