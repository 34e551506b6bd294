"""tools/pretrain.py --objective=mlm_sop on a tiny ALBERT-shaped encoder (factorised
embeddings, one block shared by every layer): it trains, logs the SOP loss and accuracy, and
keeps its sentence-order head beside the encoder, where continued pretraining finds it."""

import json
import os

import numpy as np
import pytest

from tests.helpers.binaries import finish_processes, start_tool
from tests.helpers.paths import ROOT
from tests.tasks.training.test_tensorboard import _events
from nlpzoo.zoo import ENCODER_PRESETS, load_encoder
from nlpzoo.zoo.checkpoints import load_pretrainer

STEPS, INTERVAL = 4, 2
HIDDEN = ENCODER_PRESETS["albert_tiny"].hidden_dim

@pytest.fixture(scope="module")
def sop_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pretrain_sop")
    with open(os.path.join(ROOT, "samples", "trec", "train.label"), encoding="latin-1") as f:
        questions = [line.split(" ", 1)[1].strip() for line in f if line.strip()]
    corpus = directory / "corpus.txt"  # documents of 10 questions, blank-line separated
    corpus.write_text("\n\n".join("\n".join(questions[i:i + 10])
                                  for i in range(0, len(questions), 10)) + "\n",
                      encoding="utf-8")
    model_dir = str(directory / "model")
    process = start_tool(
        "pretrain.py", "--preset=albert_tiny", "--objective=mlm_sop", "--dropout=0",
        f"--corpus={corpus}", f"--model_dir={model_dir}", "--vocab_size=400",
        f"--max_steps={STEPS}", f"--steps_per_checkpoint={INTERVAL}", "--batch_size=8",
        "--max_seq_length=32", "--learning_rate=1e-3", "--mixed_precision=float32")
    result = finish_processes({"run": process})["run"]
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir, result


def test_it_trains_with_sop_and_logs_its_loss_and_accuracy(sop_run):
    model_dir, result = sop_run
    assert "pretraining albert_tiny with mlm_sop" in result.stdout
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["objective"] == "mlm_sop" and config["total_steps"] == STEPS
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert {"mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy"} <= set(metrics)
    # Keras averages the total per example and each part per batch: an uneven last batch
    # parts them slightly.
    assert metrics["loss"] == pytest.approx(metrics["mlm_loss"] + metrics["sop_loss"], rel=1e-2)
    train = _events(os.path.join(model_dir, "logs", "train"))
    validation = _events(os.path.join(model_dir, "logs", "validation"))
    for name in ("epoch_sop_loss", "epoch_sop_accuracy"):
        assert len(train[name]) == len(validation[name]) == STEPS // INTERVAL
    assert not any("nsp" in name for name in train)
    card = open(os.path.join(model_dir, "README.md"), encoding="utf-8").read()
    assert "mlm_sop" in card


def test_the_encoder_is_albert_shaped_and_its_sop_head_is_kept(sop_run):
    model_dir, _ = sop_run
    checkpoint = os.path.join(model_dir, "encoder")
    transformer = load_encoder(checkpoint).transformer
    assert transformer.share_layers and transformer.embedding_dim == ENCODER_PRESETS[
        "albert_tiny"].embedding_dim < HIDDEN
    with np.load(os.path.join(checkpoint, "pretraining_heads.npz")) as stored:
        heads = {name: stored[name] for name in stored.files}
    assert heads["sop_classifier.classifier.weight"].shape == (2, HIDDEN)
    assert not any(name.startswith("cls.seq_relationship") for name in heads)
    # Continued SOP pretraining starts from the trained head; NSP does not take it for its own.
    model, loaded = load_pretrainer(checkpoint, "mlm_sop")
    assert loaded == ("mlm_head", "sop_head")
    kernel, bias = (np.asarray(w) for w in model.get_layer("sop_head").weights)
    np.testing.assert_array_equal(kernel.T[::-1], heads["sop_classifier.classifier.weight"])
    np.testing.assert_array_equal(bias[::-1], heads["sop_classifier.classifier.bias"])
    assert load_pretrainer(checkpoint, "mlm_nsp")[1] == ("mlm_head",)
