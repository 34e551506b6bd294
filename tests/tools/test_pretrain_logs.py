"""What tools/pretrain.py writes for TensorBoard and prints, read back from the event files:
every loss and masked-token accuracy per interval, the total loss and learning rate per step,
and one plain progress line per interval when its output is not a terminal."""

import os
import re

import pytest

from tests.helpers.binaries import run_tool
from tests.helpers.paths import TREC
from tests.tasks.training.test_tensorboard import _events

STEPS, INTERVAL = 4, 2


@pytest.fixture(scope="module")
def span_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pretrain_logs")
    corpus = directory / "corpus.txt"
    with open(os.path.join(TREC, "train.label"), encoding="latin-1") as f:
        corpus.write_text("\n".join(line.split(" ", 1)[1].strip() for line in f) + "\n",
                          encoding="utf-8")
    model_dir = str(directory / "model")
    result = run_tool("pretrain.py", "--preset=bert_tiny", "--objective=span_sbo",
                      f"--corpus={corpus}", f"--model_dir={model_dir}", "--vocab_size=400",
                      f"--max_steps={STEPS}", f"--steps_per_checkpoint={INTERVAL}",
                      "--log_every_steps=1", "--batch_size=8", "--max_seq_length=32",
                      "--learning_rate=1e-3", "--warmup_fraction=0.5",
                      "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir, result


def test_every_loss_and_accuracy_per_interval(span_run):
    model_dir, _ = span_run
    train = _events(os.path.join(model_dir, "logs", "train"))
    validation = _events(os.path.join(model_dir, "logs", "validation"))
    names = ("loss", "mlm_loss", "sbo_loss", "mlm_accuracy", "sbo_accuracy")
    for name in names:
        assert len(train[f"epoch_{name}"]) == STEPS // INTERVAL, name
        assert len(validation[f"epoch_{name}"]) == STEPS // INTERVAL, name
    for logged in (train, validation):  # the total is the sum of the objectives' losses
        for interval, total in logged["epoch_loss"].items():
            parts = logged["epoch_mlm_loss"][interval] + logged["epoch_sbo_loss"][interval]
            assert total == pytest.approx(parts, rel=1e-5)
    for interval, accuracy in train["epoch_mlm_accuracy"].items():
        assert 0 <= accuracy <= 1 and 0 <= train["epoch_sbo_accuracy"][interval] <= 1


def test_total_loss_and_learning_rate_every_step(span_run):
    model_dir, _ = span_run
    train = _events(os.path.join(model_dir, "logs", "train"))
    losses, rates = train["loss/step"], train["learning_rate/step"]
    assert sorted(losses) == sorted(rates) == list(range(1, STEPS + 1))
    # Each interval's mean loss is the mean of its steps' losses (equal batches).
    for interval in range(STEPS // INTERVAL):
        steps = range(interval * INTERVAL + 1, (interval + 1) * INTERVAL + 1)
        mean = sum(losses[step] for step in steps) / INTERVAL
        assert train["epoch_loss"][interval] == pytest.approx(mean, rel=1e-5)
    # Warm-up over 2 of 4 steps, then linear decay: the rate step s applied is at s - 1.
    expected = {1: 0.0, 2: 5e-4, 3: 1e-3, 4: 5e-4}
    for step, rate in rates.items():
        assert rate == pytest.approx(expected[step], abs=1e-9)


def test_progress_is_one_plain_line_per_interval_off_a_terminal(span_run):
    _, result = span_run
    assert "\r" not in result.stdout and "\x1b[" not in result.stdout  # no live bar
    progress = [line for line in result.stdout.splitlines()
                if re.match(rf"{INTERVAL}/{INTERVAL} - ", line)]
    assert len(progress) == STEPS // INTERVAL
    assert all(" - sbo_loss: " in line and " - val_mlm_accuracy: " in line
               for line in progress)
