"""tools/pretrain.py --whole_word continues a roberta_tiny checkpoint with its byte-level BPE
tokenizer; the run's encoder keeps that tokenizer and its MLM head, fill-mask reads it with
`<mask>`, and tools/convert.py --with_head exports it as a RobertaForMaskedLM that reads back
with the same logits."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.fill_mask.preprocessor import model_inputs
from nlpzoo.tasks.fill_mask.vocabulary_filter import token_flags
from nlpzoo.zoo import build_encoder, load_pretrained
from nlpzoo.zoo.checkpoints import export_hf_checkpoint, load_tokenizer
from tests.helpers.binaries import finish_processes, start_tool
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow  # about a minute: three binaries

TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "roberta_bpe", "legacy")
TEXTS = ["The capital of France is <mask>.", "She was un<mask> to read the <mask>."]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pretrain_roberta")
    tokenizer = load_tokenizer(TOKENIZER)
    start = os.path.join(directory, "start")
    export_hf_checkpoint(build_encoder("roberta_tiny", vocabulary_size=tokenizer.vocabulary_size),
                         start, tokenizer)
    with open(os.path.join(ROOT, "samples", "trec", "train.label"), encoding="latin-1") as f:
        questions = [line.split(" ", 1)[1].strip() for line in f if line.strip()]
    corpus = directory / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(questions[i:i + 10])
                                  for i in range(0, 400, 10)) + "\n", encoding="utf-8")
    model_dir = str(directory / "model")
    process = start_tool(
        "pretrain.py", f"--init_checkpoint={start}", "--objective=mlm", "--whole_word",
        "--dropout=0", f"--corpus={corpus}", f"--model_dir={model_dir}", "--max_steps=4",
        "--steps_per_checkpoint=2", "--batch_size=8", "--max_seq_length=32",
        "--learning_rate=1e-3", "--mixed_precision=float32")
    result = finish_processes({"run": process})["run"]
    assert result.returncode == 0, result.stderr[-3000:]
    exported = str(directory / "exported")
    process = start_tool("convert.py", f"--input={model_dir}", f"--output={exported}",
                         "--output_format=huggingface", "--with_head")
    converted = finish_processes({"convert": process})["convert"]
    assert converted.returncode == 0, converted.stderr[-3000:]
    return model_dir, exported


def test_the_run_keeps_the_bpe_tokenizer_and_the_mlm_head(run):
    model_dir, _ = run
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["whole_word"] and config["preset"] == "roberta_tiny"
    encoder_dir = os.path.join(model_dir, "encoder")
    assert {"vocab.json", "merges.txt", "pretraining_heads.npz"} <= set(os.listdir(encoder_dir))
    tokenizer = load_tokenizer(encoder_dir)
    assert tokenizer.kind == "byte_pair"
    assert tokenizer.encode(TEXTS[0]) == load_tokenizer(TOKENIZER).encode(TEXTS[0])


def test_fill_mask_reads_the_run_with_roberta_mask_token(run):
    model_dir, _ = run
    model = load_pretrained(os.path.join(model_dir, "encoder"), "fill_mask", top_k=5)
    assert model.preprocessor.mask_token == "<mask>"
    special, continuation = token_flags(model.preprocessor.tokenizer())
    results = model.predict(TEXTS)
    # "is <mask>" starts a word: only "Ġ" pieces; "un<mask>" may continue one.
    assert all(not continuation[token["token_id"]] and not special[token["token_id"]]
               for token in results[0]["masks"][0])
    assert len(results[1]["masks"]) == 2


def test_the_export_is_a_roberta_for_masked_lm_with_the_same_logits(run):
    model_dir, exported = run
    config = json.load(open(os.path.join(exported, "config.json")))
    assert config["architectures"] == ["RobertaForMaskedLM"]
    ours = load_pretrained(os.path.join(model_dir, "encoder"), "fill_mask")
    back = load_pretrained(exported, "fill_mask")
    features = ours.preprocessor(tf.constant(TEXTS))
    np.testing.assert_allclose(back.predict_on_batch(model_inputs(features)),
                               ours.predict_on_batch(model_inputs(features)), atol=1e-5)
