"""tools/probe.py end to end on the bundled CoNLL sample, and what it refuses."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from nlpzoo.tasks.tagging import read_column_file
from nlpzoo.tasks.text.tokenizer import build_vocabulary
from tests.helpers.binaries import json_line, run_tool, run_tools
from tests.helpers.paths import CONLL
from nlpzoo.zoo import build_encoder
from nlpzoo.zoo.checkpoints import save_encoder_checkpoint

TRAIN, DEV = os.path.join(CONLL, "train.txt"), os.path.join(CONLL, "dev.txt")
_DATA = ("--train_data", TRAIN, "--eval_data", DEV)
_FAST = ("--epochs=3", "--learning_rate=0.01", "--max_seq_length=32")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny native checkpoint (bert_tiny, 2 blocks) with a vocabulary of the sample."""
    texts = [" ".join(sentence.words) for sentence in read_column_file(TRAIN)]
    vocabulary = build_vocabulary(texts, 300)
    encoder = build_encoder("bert_tiny", vocabulary_size=len(vocabulary),
                            max_sequence_length=64)
    directory = str(tmp_path_factory.mktemp("probe") / "checkpoint")
    save_encoder_checkpoint(encoder, directory, vocabulary, lowercase=True)
    return directory


def _scalars(log_dir, tag):
    accumulator = EventAccumulator(log_dir, size_guidance={"tensors": 0})
    accumulator.Reload()
    return accumulator, {event.step: float(tf.make_ndarray(event.tensor_proto))
                         for event in accumulator.Tensors(tag)}


# slow: test_preset_probes_a_random_encoder_only runs the binary end to end too
@pytest.mark.slow
def test_pretrained_and_control_end_to_end(checkpoint, tmp_path):
    output = str(tmp_path / "probe")
    result = run_tool("probe.py", "--init_checkpoint", checkpoint, *_DATA, "--column=2",
                      "--column_name=pos", *_FAST, "--output_dir", output)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json_line(result.stdout)
    assert summary["layers"] == [0, 1, 2]  # bert_tiny: 2 blocks + the embeddings
    assert summary["column"] == 2 and summary["column_name"] == "pos"
    for name in ("pretrained", "control"):
        assert len(summary[name]) == 3 and all(0.0 <= a <= 1.0 for a in summary[name])
    table = [line.split() for line in result.stdout.splitlines()]
    header = table.index(["layer", "pretrained", "control"])
    rows = table[header + 1:header + 4]
    assert [int(row[0]) for row in rows] == [0, 1, 2]
    np.testing.assert_allclose([float(row[1]) for row in rows], summary["pretrained"], atol=1e-4)

    saved = json.load(open(os.path.join(output, "probe.json")))
    assert saved["pretrained"] == summary["pretrained"] and saved["control"] == summary["control"]
    assert saved["train_words"] + saved["eval_words"] + saved["dropped_words"] == (
        sum(len(s) for s in read_column_file(TRAIN)) + sum(len(s) for s in read_column_file(DEV)))
    assert "NNP" in saved["labels"] and saved["unseen_eval_words"] >= 1
    with Image.open(os.path.join(output, "probe.png")) as image:
        assert image.format == "PNG" and image.size == (640, 420)

    log_dir = os.path.join(output, "logs")
    accumulator, pretrained = _scalars(log_dir, "probe/pos/pretrained")
    _, control = _scalars(log_dir, "probe/pos/control")
    assert sorted(pretrained) == [0, 1, 2]
    np.testing.assert_allclose([pretrained[l] for l in range(3)], summary["pretrained"], atol=1e-6)
    np.testing.assert_allclose([control[l] for l in range(3)], summary["control"], atol=1e-6)
    assert "probe/pos" in accumulator.Tags()["tensors"]  # the plot, as an image summary


@pytest.mark.slow
def test_preset_probes_a_random_encoder_only(tmp_path):
    output = str(tmp_path / "probe")
    result = run_tool("probe.py", "--preset=bert_tiny", *_DATA, "--column=4", *_FAST,
                      "--vocab_size=300", "--max_train_words=150", "--output_dir", output)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json_line(result.stdout)
    assert summary["pretrained"] is None and len(summary["control"]) == 3
    assert summary["column_name"] == "column4" and summary["train_words"] <= 150
    assert ["layer", "control"] in [line.split() for line in result.stdout.splitlines()]


def _assert_one_line_error(result, expected):
    assert result.returncode == 1, result.stderr[-2000:]
    assert expected in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


def test_a_column_out_of_range_names_file_and_line(checkpoint, tmp_path):
    result = run_tool("probe.py", "--init_checkpoint", checkpoint, "--column=5", *_DATA,
                      "--output_dir", str(tmp_path / "out"))
    _assert_one_line_error(result, f"error: {TRAIN}:1: tag_column=4 is out of range for 4 "
                                   "columns (column 5, counting from 1)")
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.slow
def test_other_bad_flags_are_one_line_errors(checkpoint, tmp_path):
    common = (*_DATA, "--output_dir", str(tmp_path / "out"))
    results = run_tools({
        "column 1": ("probe.py", "--init_checkpoint", checkpoint, "--column=1", *common),
        "both": ("probe.py", "--init_checkpoint", checkpoint, "--preset=bert_tiny",
                 "--column=2", *common),
    })
    _assert_one_line_error(results["column 1"],
                           "error: --column=1: column must be an integer >= 2")
    _assert_one_line_error(results["both"], "error: give --init_checkpoint")
    assert not os.path.exists(tmp_path / "out")
