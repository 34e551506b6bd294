"""The fourth hostile set through a binary (tools/train.py), where the readers' and the
options' own tests (tests/tasks/io/test_json_text.py, test_hostile_options.py) stop: one
`error:` line, exit 1, no traceback, nothing written, no folder named `~`."""

import json
import os
import shutil

import pytest

from tests.helpers.binaries import one_error_line, run_tools
from tests.helpers.paths import ROOT, TREC

CHECKPOINT = os.path.join(ROOT, "tests", "fixtures", "tiny_bert_mlm")


@pytest.mark.slow  # four TensorFlow processes
def test_train_refuses_hostile_json_options_and_paths_in_one_line(tmp_path, monkeypatch):
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"text": "a b", "label": "x"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    broken = tmp_path / "broken_checkpoint"
    shutil.copytree(CHECKPOINT, broken)
    (broken / "tokenizer.json").write_text(json.dumps({"model": "WordPiece"}))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the binaries' ~
    train = os.path.join(TREC, "train.label")
    common = ("train.py", "--task=classification", "--epochs=1", "--preset=bert_tiny_classifier")
    results = run_tools({
        "deep": (*common, f"--train_data={deep}", f"--eval_data={deep}",
                 f"--vocab={CHECKPOINT}/vocab.txt", f"--model_dir={tmp_path / 'a'}"),
        "tokenizer": ("train.py", "--task=classification", "--epochs=1",
                      f"--init_checkpoint={broken}", f"--train_data={train}",
                      f"--eval_data={train}", f"--model_dir={tmp_path / 'b'}"),
        "weights": (*common, f"--train_data={train}", f"--eval_data={train}",
                    f"--vocab={CHECKPOINT}/vocab.txt", "--class_weights=0,0,0,0,0,0",
                    f"--model_dir={tmp_path / 'c'}"),
        "tilde": (*common, "--train_data=~/missing.label", "--eval_data=~/missing.label",
                  f"--vocab={CHECKPOINT}/vocab.txt", "--model_dir=~/runs/x"),
    })
    assert one_error_line(results["deep"]).endswith(
        f"{deep}:2: not valid JSON: nested too deeply ([ or {{ inside each other more times "
        "than a JSON reader here follows)")
    assert one_error_line(results["tokenizer"]).endswith(
        f'{broken}/tokenizer.json: expected "model" to be a JSON object ({{...}}), found a '
        "string")
    assert "--class_weights=0,0,0,0,0,0: every weight is 0" in one_error_line(results["weights"])
    assert f"{home}/missing.label" in one_error_line(results["tilde"])
    assert not os.path.exists(os.path.join(ROOT, "~"))
    assert sorted(os.listdir(tmp_path)) == ["broken_checkpoint", "deep.jsonl", "home"]
    assert "runs" not in os.listdir(home)  # (Keras makes its ~/.keras on import)
