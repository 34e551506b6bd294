"""tools/predict.py, tools/evaluate.py and tools/export.py with --task=fill_mask, end to end.

The binaries run as subprocesses (all at once) on the tiny BertForMaskedLM fixture; their
output must equal what the same model gives in this process.
"""

import json
import os

import numpy as np
import pytest

from nlpzoo.zoo import build_encoder
from nlpzoo.zoo import load_pretrained
from nlpzoo.zoo.checkpoints import export_hf_checkpoint, read_tokenizer_settings
from tests.helpers.binaries import finish_processes, one_error_line, start_python, start_tool
from tests.helpers.paths import ROOT

CHECKPOINT = os.path.join(ROOT, "tests", "fixtures", "tiny_bert_mlm")
MASKED = ["The capital of France is [MASK] .", "The [MASK] sat on the [MASK] .",
          "She was un[MASK] to read ."]
PLAIN = ["The capital of France is Paris .", "The cat sat on the mat .",
         "She was unable to read the book at night .", "he walks to the river and plays"]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("fill_mask_binaries")
    masked, plain = _write(base / "masked.txt", MASKED), _write(base / "plain.txt", PLAIN)
    unmasked = _write(base / "unmasked.txt", MASKED[:1] + ["no mask in this one"])
    vocabulary, lowercase = read_tokenizer_settings(CHECKPOINT)
    headless = str(base / "headless")
    export_hf_checkpoint(build_encoder("bert_tiny", vocabulary_size=len(vocabulary),
                                       num_layers=1), headless, vocabulary, lowercase)
    source = f"--init_checkpoint={CHECKPOINT}"
    outputs = {name: str(base / f"{name}.jsonl") for name in ("predicted", "refused")}
    results = finish_processes({
        "predict": start_tool("predict.py", "--task=fill_mask", source, f"--input={masked}",
                              f"--output={outputs['predicted']}", "--top_k=3"),
        "evaluate": start_tool("evaluate.py", "--task=fill_mask", source, f"--data={plain}"),
        "no mask": start_tool("predict.py", "--task=fill_mask", source, f"--input={unmasked}",
                              f"--output={outputs['refused']}"),
        "headless": start_tool("predict.py", "--task=fill_mask", f"--init_checkpoint={headless}",
                               f"--input={masked}", f"--output={base / 'x.jsonl'}"),
    })
    return results, outputs, headless, plain


@pytest.fixture(scope="module")
def model():
    return load_pretrained(CHECKPOINT, "fill_mask", top_k=3)


def test_predict_writes_the_models_top_k_as_json_lines(runs, model):
    results, outputs, _, _ = runs
    assert results["predict"].returncode == 0, results["predict"].stderr[-3000:]
    with open(outputs["predicted"], encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    expected = model.predict(MASKED)
    assert [record["text"] for record in records] == MASKED
    for record, wanted in zip(records, expected):
        assert record["sequence"] == wanted["sequence"]
        assert [len(mask) for mask in record["masks"]] == [3] * len(wanted["masks"])
        for mask, other in zip(record["masks"], wanted["masks"]):
            assert [t["token"] for t in mask] == [t["token"] for t in other]
            np.testing.assert_allclose([t["probability"] for t in mask],
                                       [t["probability"] for t in other], atol=1e-6)


def test_evaluate_prints_the_scores_of_the_fixed_masking(runs, model):
    results, _, _, plain = runs
    assert results["evaluate"].returncode == 0, results["evaluate"].stderr[-3000:]
    printed = json.loads(results["evaluate"].stdout.strip().splitlines()[-1])
    task = model.task
    examples = task.read(plain)
    expected = task.evaluate(model, task.make_dataset(examples, model.preprocessor, []),
                             examples, [])
    assert set(printed) == {"top1_accuracy", "top5_accuracy", "cross_entropy", "perplexity",
                            "masked_tokens", "examples"}
    assert printed["masked_tokens"] == expected["masked_tokens"] > 0
    for name in ("top1_accuracy", "top5_accuracy", "cross_entropy", "perplexity"):
        assert printed[name] == pytest.approx(expected[name], rel=1e-5)


def test_a_text_without_a_mask_is_one_error_line_and_nothing_written(runs):
    results, outputs, _, _ = runs
    line = one_error_line(results["no mask"])
    assert line.startswith("error: ") and line.endswith(
        "unmasked.txt:2: no [MASK] in the text; put [MASK] where a word is to be predicted: "
        "'no mask in this one'")
    assert not os.path.exists(outputs["refused"])


def test_a_checkpoint_without_an_mlm_head_is_refused_in_one_line(runs):
    results, _, headless, _ = runs
    assert one_error_line(results["headless"]) == (
        f"error: {headless} has no masked-LM head (cls.predictions.*), which this model needs; "
        f"make a checkpoint with one by continued MLM pretraining: tools/pretrain.py "
        f"--init_checkpoint={headless} --objective=mlm --corpus=<text> --model_dir=<run>, "
        "then use that run")


_SERVE_SNIPPET = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the graph uses)

path, texts, output = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(texts))
json.dump({name: value.numpy().tolist() if name != "token" else
           [[[t.decode() for t in mask] for mask in row] for row in value.numpy().tolist()]
           for name, value in served.items()}, open(output, "w"))
"""


@pytest.mark.slow
def test_the_export_serves_text_to_the_top_k_tokens(model, tmp_path):
    exported, served_file = str(tmp_path / "export"), str(tmp_path / "served.json")
    export = finish_processes({"export": start_tool(
        "export.py", "--task=fill_mask", f"--init_checkpoint={CHECKPOINT}",
        f"--output={exported}")})["export"]
    assert export.returncode == 0, export.stderr[-3000:]
    serve = finish_processes({"serve": start_python("-c", _SERVE_SNIPPET, exported,
                                                    json.dumps(MASKED), served_file)})["serve"]
    assert serve.returncode == 0, serve.stderr[-3000:]
    with open(served_file, encoding="utf-8") as f:
        served = json.load(f)
    assert sorted(served) == ["num_masks", "probability", "token", "token_id"]
    expected = model.task.with_options(top_k=5).decode_predictions(
        model.task.raw_examples(MASKED), model.task.with_options(top_k=5).predict_outputs(
            model, model.preprocessor, model.task.raw_examples(MASKED), []), [])
    assert served["num_masks"] == [len(record["masks"]) for record in expected]
    for row, record in enumerate(expected):
        for slot, mask in enumerate(record["masks"]):
            assert served["token"][row][slot] == [t["token"] for t in mask]
            assert served["token_id"][row][slot] == [t["token_id"] for t in mask]
            np.testing.assert_allclose(served["probability"][row][slot],
                                       [t["probability"] for t in mask], atol=1e-5)
