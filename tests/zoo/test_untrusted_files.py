"""Every file a user hands us is checked before use, with one-line errors naming it: a
checkpoint's config.json (a JSON object; sizes in range and fitting the weights), its
safetensors (a truncated file), vocabularies (UTF-8, not empty, each token once) and a run
directory's own config.json and labels.json."""

import json
import os
import shutil

import pytest

from nlpzoo.tasks.text.tokenizer import read_vocabulary
from tests.helpers.binaries import run_tools
from nlpzoo.zoo import build_encoder
from nlpzoo.zoo.checkpoints import export_hf_checkpoint, load_encoder
from tests.helpers.paths import ROOT

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox", "."]


@pytest.fixture(scope="module")
def hf_checkpoint(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("hf") / "checkpoint")
    encoder = build_encoder("bert_tiny", vocabulary_size=len(VOCABULARY), num_layers=1,
                            hidden_dim=16, num_heads=2, intermediate_dim=32,
                            max_sequence_length=16)
    export_hf_checkpoint(encoder, directory, VOCABULARY, lowercase=True)
    return directory


def _broken_copy(source, tmp_path, name, change):
    target = str(tmp_path / name)
    shutil.copytree(source, target)
    change(target)
    return target


def _set_config(**fields):
    def change(directory):
        path = os.path.join(directory, "config.json")
        with open(path) as f:
            config = json.load(f)
        config.update(fields)
        with open(path, "w") as f:
            json.dump(config, f)
    return change


def _write(name, content):
    def change(directory):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(content)
    return change


def _truncate(name, size):
    def change(directory):
        path = os.path.join(directory, name)
        with open(path, "rb") as f:
            head = f.read(size)
        with open(path, "wb") as f:
            f.write(head)
    return change


@pytest.mark.parametrize("name, change, message", [
    ("garbage", _write("config.json", b"garbage{"), "config.json:1: not valid JSON"),
    ("a list", _write("config.json", b"[1, 2]"),
     "config.json: expected config.json to hold a JSON object .* found a list"),
    ("binary", _write("config.json", b"\xff\xfe\x00garbage"), "config.json: not valid JSON: not UTF-8"),
    ("2 billion words", _set_config(vocab_size=2_000_000_000),
     "vocabulary_size=2000000000 is out of range"),
    ("a million words", _set_config(vocab_size=1_000_000),
     "its sizes need about .* weights but the checkpoint holds .*: the config does not match"),
    ("truncated weights", _truncate("model.safetensors", 200),
     "model.safetensors: not a readable safetensors file .* truncated or corrupt"),
    ("header only", _truncate("model.safetensors", 8),
     "model.safetensors: not a readable safetensors file"),
    ("nested 100,000 deep", _write("config.json", b"[" * 100_000 + b"]" * 100_000),
     r"config.json: not valid JSON: nested too deeply"),
    ("hidden_act a list", _set_config(hidden_act=["gelu"]),
     r'config.json: expected "hidden_act" to be a string, found a list'),
    ("architectures of numbers", _set_config(architectures=[3]),
     r'config.json: expected "architectures\[0\]" to be a string, found a number'),
])
def test_a_broken_checkpoint_is_refused_naming_its_file(hf_checkpoint, tmp_path, name, change,
                                                        message):
    broken = _broken_copy(hf_checkpoint, tmp_path, name.replace(" ", "_"), change)
    with pytest.raises(ValueError, match=message):
        load_encoder(broken)


@pytest.mark.parametrize("content, message", [
    (b"", "the vocabulary is empty"),
    (b"\n\n", "the vocabulary is empty"),
    (bytes(range(256)) * 4, r"vocab.txt:3: not a vocabulary: not valid UTF-8: found byte\(s\) 80"),
    (b"[PAD]\n" + b"x" * (1 << 20) + b"y\n", "vocab.txt:2: not a vocabulary: a line longer than"),
    (b"[PAD]\n[UNK]\n[CLS]\n[SEP]\nfox\nthe\nfox\n",
     ":7: the token 'fox' is listed twice \\(first on line 5\\)"),
    (b"the\nfox\n", "lacks the special tokens"),
])
def test_a_bad_vocabulary_is_refused_naming_the_file(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_vocabulary(str(path))


def test_binaries_name_a_broken_file_in_one_line(trained_classifier_dir, hf_checkpoint,
                                                 tmp_path):
    garbage = tmp_path / "garbage_run"
    shutil.copytree(trained_classifier_dir, garbage)
    (garbage / "config.json").write_text("garbage{")
    listed = tmp_path / "list_run"
    shutil.copytree(trained_classifier_dir, listed)
    (listed / "config.json").write_text("[1, 2]")
    huge = _broken_copy(hf_checkpoint, tmp_path, "huge", _set_config(vocab_size=2_000_000_000))
    empty_vocab = tmp_path / "empty_vocab.txt"
    empty_vocab.write_text("")
    questions = tmp_path / "q.txt"
    questions.write_text("Who is he ?\n")
    trec = os.path.join(ROOT, "samples", "trec")
    train = ("train.py", f"--train_data={trec}/train.label", f"--eval_data={trec}/dev.label",
             "--epochs=1", f"--model_dir={tmp_path / 'out'}")
    results = run_tools({
        "garbage config": ("predict.py", f"--model_dir={garbage}", f"--input={questions}",
                           "--output=-"),
        "list config": ("evaluate.py", f"--model_dir={listed}", f"--data={trec}/dev.label"),
        "huge vocabulary": (*train, f"--init_checkpoint={huge}"),
        "empty vocab": (*train, f"--vocab={empty_vocab}"),
    })
    expected = {"garbage config": f"{garbage}/config.json: not valid JSON",
                "list config": f"{listed}/config.json: expected a JSON object",
                "huge vocabulary": "vocabulary_size=2000000000 is out of range",
                "empty vocab": f"{empty_vocab}: the vocabulary is empty"}
    for name, result in results.items():
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert result.returncode == 1 and len(errors) == 1, (name, result.stderr[-2000:])
        assert expected[name] in errors[0], (name, errors)
        assert "Traceback" not in result.stderr and "internal error" not in errors[0], name
    assert not (tmp_path / "out").exists()
