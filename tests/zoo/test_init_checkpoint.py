"""tools/train.py --init_checkpoint: fine-tuning starts from a Hugging Face BERT directory."""

import json
import os

import keras
import numpy as np
import pytest

from tests.zoo.test_hf_import import _minilm_dir
from tests.tools.test_train_binary import ROOT, SAMPLES, _run
from nlpzoo.zoo import ENCODER_PRESETS
from nlpzoo.zoo.checkpoints import load_hf_encoder


@pytest.mark.slow  # a MiniLM fine-tune (make demo runs one too): about a minute
def test_fine_tunes_from_huggingface_directory(tmp_path):
    checkpoint = _minilm_dir()
    model_dir = str(tmp_path / "model")
    # 64 questions, trained on and validated on: what is checked is the start, not the result.
    questions = str(tmp_path / "questions.label")
    with open(os.path.join(SAMPLES, "train.label"), encoding="latin-1") as f, \
            open(questions, "w", encoding="latin-1") as out:
        out.writelines(f.readlines()[:64])
    result = _run("train.py", "--init_checkpoint", checkpoint,
                  "--train_data", questions, "--eval_data", questions, "--model_dir", model_dir,
                  "--epochs=1", "--batch_size=16", "--max_seq_length=32",
                  "--learning_rate=1e-9", "--warmup_fraction=0", "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["init_checkpoint"] == os.path.abspath(checkpoint)
    assert config["vocabulary_size"] == 30522 and config["lowercase"] is True
    # No --preset: the defaults are those of the preset with the checkpoint's shape, and
    # the fresh head on the pretrained encoder learns at the preset's head rate.
    assert config["preset"] == "minilm_l6_h384_classifier"
    assert config["head_learning_rate"] == ENCODER_PRESETS["minilm_l6_h384"].fine_tuning.head_learning_rate
    with open(os.path.join(checkpoint, "vocab.txt"), encoding="utf-8") as f:
        assert open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8").read() == f.read()
    # With a negligible learning rate the encoder weights are the checkpoint's.
    trained = keras.saving.load_model(os.path.join(model_dir, "best_model.keras"))
    original = load_hf_encoder(checkpoint)
    for ours, theirs in zip(trained.get_layer("encoder").weights, original.weights):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-6)
