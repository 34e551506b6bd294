"""Prompt classification through the binaries: zero-shot tools/evaluate.py on the tiny
BertForMaskedLM fixture, one-line refusals, and (slow) train → predict → export.

The binaries' figures must equal what the same model gives in this process.
"""

import json
import os

import numpy as np
import pytest

from nlpzoo.zoo import build_encoder, load_pretrained
from nlpzoo.zoo.checkpoints import export_hf_checkpoint, read_tokenizer_settings
from tests.helpers.binaries import finish_processes, one_error_line, start_python, start_tool
from tests.helpers.paths import ROOT

CHECKPOINT = os.path.join(ROOT, "tests", "fixtures", "tiny_bert_mlm")
PATTERNS = ["{text} . it was [MASK] .", "[MASK] : {text}"]
VERBALIZER = "pos:happy,neg:sad"
EXAMPLES = [("the cat sat on the mat", "pos"), ("he was happy in the house", "pos"),
            ("the dog was sad", "neg"), ("they walk to the river", "neg"),
            ("she read a book at night", "pos"), ("my dog was small and sad", "neg"),
            ("we play in the big city", "pos"), ("the old house by the river", "neg")]
FLAGS = [f"--pattern={pattern}" for pattern in PATTERNS] + [f"--verbalizer={VERBALIZER}"]


def _write_jsonl(path, examples):
    path.write_text("".join(json.dumps({"text": text, "label": label}) + "\n"
                            for text, label in examples), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    base = tmp_path_factory.mktemp("prompt_binaries")
    return base, _write_jsonl(base / "data.jsonl", EXAMPLES)


@pytest.fixture(scope="module")
def runs(data):
    base, path = data
    unknown = _write_jsonl(base / "unknown.jsonl", EXAMPLES[:2] + [("a b", "other")])
    vocabulary, lowercase = read_tokenizer_settings(CHECKPOINT)
    headless = str(base / "headless")
    export_hf_checkpoint(build_encoder("bert_tiny", vocabulary_size=len(vocabulary),
                                       num_layers=1), headless, vocabulary, lowercase)
    source = f"--init_checkpoint={CHECKPOINT}"
    task = "--task=prompt_classification"
    results = finish_processes({
        "zero-shot": start_tool("evaluate.py", task, source, f"--data={path}", *FLAGS),
        "predict": start_tool("predict.py", task, source, f"--input={path}",
                              f"--output={base / 'predicted.jsonl'}", *FLAGS),
        "no mask": start_tool("evaluate.py", task, source, f"--data={path}",
                              "--pattern={text} it was .", f"--verbalizer={VERBALIZER}"),
        "unknown label": start_tool("evaluate.py", task, source, f"--data={unknown}", *FLAGS),
        "headless": start_tool("evaluate.py", task, f"--init_checkpoint={headless}",
                               f"--data={path}", *FLAGS),
        "no checkpoint": start_tool("train.py", task, f"--train_data={path}",
                                    f"--eval_data={path}", f"--model_dir={base / 'run'}",
                                    *FLAGS),
        "unknown word": start_tool("evaluate.py", task, source, f"--data={path}",
                                   f"--pattern={PATTERNS[0]}", "--verbalizer=pos:\U0001f30d,neg:sad"),
        "pair pattern": start_tool("predict.py", task, source, f"--input={path}",
                                   f"--output={base / 'never.jsonl'}",
                                   "--pattern={text} ? [MASK] , {text_pair}",
                                   f"--verbalizer={VERBALIZER}"),
    })
    return results, path, headless


def _zero_shot_model():
    return load_pretrained(CHECKPOINT, "prompt_classification", patterns=PATTERNS,
                           verbalizer=VERBALIZER)


def test_zero_shot_predict_writes_the_models_probabilities(runs):
    results, path, _ = runs
    assert results["predict"].returncode == 0, results["predict"].stderr[-3000:]
    with open(os.path.join(os.path.dirname(path), "predicted.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    expected = _zero_shot_model().predict([text for text, _ in EXAMPLES])
    assert [record["text"] for record in records] == [text for text, _ in EXAMPLES]
    for record, wanted in zip(records, expected):
        assert record["label"] == wanted["label"]
        for label in ("neg", "pos"):
            assert record["probabilities"][label] == pytest.approx(wanted["scores"][label],
                                                                   abs=1e-5)


def test_zero_shot_evaluate_scores_the_pretrained_model(runs):
    results, path, _ = runs
    assert results["zero-shot"].returncode == 0, results["zero-shot"].stderr[-3000:]
    printed = json.loads(results["zero-shot"].stdout.strip().splitlines()[-1])
    model = _zero_shot_model()
    probabilities = np.array([[record["scores"][label] for label in ("neg", "pos")]
                              for record in model.predict([text for text, _ in EXAMPLES])])
    gold = np.array([("neg", "pos").index(label) for _, label in EXAMPLES])
    assert printed["examples"] == len(EXAMPLES)
    assert printed["accuracy"] == pytest.approx(np.mean(probabilities.argmax(1) == gold))
    assert printed["loss"] == pytest.approx(
        -np.mean(np.log(probabilities[np.arange(len(gold)), gold])), rel=1e-4)


def test_refusals_are_one_line(runs):
    results, _, headless = runs
    assert one_error_line(results["no mask"]) == (
        "error: --task: pattern '{text} it was .': 0 [MASK] slots; a pattern has exactly one, "
        "where the label word goes")
    assert one_error_line(results["unknown label"]).endswith(
        "unknown.jsonl:3: the verbalizer has no word for the label(s) other of the data "
        "(--verbalizer=label:word,...)")
    assert one_error_line(results["headless"]).startswith(
        f"error: {headless} has no masked-LM head (cls.predictions.*)")
    assert one_error_line(results["no checkpoint"]) == (
        "error: --task=prompt_classification: it starts from the pretrained mlm_head of a "
        "checkpoint: give --init_checkpoint")
    assert one_error_line(results["unknown word"]) == (
        "error: --verbalizer: the word '\U0001f30d' is not in the vocabulary (its pieces hold "
        "the unknown token); pick another word")
    assert one_error_line(results["pair pattern"]).endswith(
        "data.jsonl:1: the patterns have a {text_pair} slot but the data holds single texts")


_SERVE_SNIPPET = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the graph uses)

path, texts, output = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(texts))
json.dump({"probabilities": served["probabilities"].numpy().tolist(),
           "label": [label.decode() for label in served["label"].numpy().tolist()]},
          open(output, "w"))
"""


@pytest.mark.slow
def test_train_then_predict_and_export_agree(data):
    base, path = data
    run = str(base / "trained")
    train = finish_processes({"train": start_tool(
        "train.py", "--task=prompt_classification", f"--init_checkpoint={CHECKPOINT}",
        f"--train_data={path}", f"--eval_data={path}", f"--model_dir={run}", "--epochs=3",
        "--batch_size=4", "--learning_rate=2e-3", *FLAGS)})["train"]
    assert train.returncode == 0, train.stderr[-3000:]
    with open(os.path.join(run, "config.json"), encoding="utf-8") as f:
        assert json.load(f)["task_options"]["patterns"] == PATTERNS
    inputs = base / "inputs.txt"
    inputs.write_text("".join(text + "\n" for text, _ in EXAMPLES), encoding="utf-8")
    predicted, exported = str(base / "predicted.jsonl"), str(base / "export")
    results = finish_processes({
        "predict": start_tool("predict.py", f"--model_dir={run}", f"--input={inputs}",
                              f"--output={predicted}"),
        "export": start_tool("export.py", f"--model_dir={run}", f"--output={exported}"),
    })
    for name in ("predict", "export"):
        assert results[name].returncode == 0, results[name].stderr[-3000:]
    served_file = str(base / "served.json")
    serve = finish_processes({"serve": start_python(
        "-c", _SERVE_SNIPPET, exported, json.dumps([text for text, _ in EXAMPLES]),
        served_file)})["serve"]
    assert serve.returncode == 0, serve.stderr[-3000:]
    with open(predicted, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    with open(served_file, encoding="utf-8") as f:
        served = json.load(f)
    assert [record["label"] for record in records] == served["label"]
    np.testing.assert_allclose(
        [[record["probabilities"][label] for label in ("neg", "pos")] for record in records],
        served["probabilities"], atol=1e-5)
