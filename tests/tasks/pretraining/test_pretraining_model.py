"""The Pretrainer model, tools/pretrain.py, and fine-tuning from its checkpoint."""

import json
import os

import keras
import numpy as np
import pytest

from nlpzoo.tasks.pretraining import unigram_distribution
from nlpzoo.tasks.text.corpus import read_corpus
from nlpzoo.tasks.pretraining.model import Pretrainer
from nlpzoo.tasks.pretraining.packing import (
    continuation_flags,
    pack_sentence_pairs,
    pack_single_segments,
    tokenize_documents,
)
from nlpzoo.tasks.pretraining.pipeline import make_pretraining_dataset
from nlpzoo.tasks.training.optimization import create_optimizer
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, build_vocabulary
from tests.helpers.binaries import run_tools
from tests.helpers.paths import shared_data_path
from tests.tools.test_train_binary import ROOT, _run, _scalars
from nlpzoo.zoo import build_encoder, load_encoder, load_pretrained

TREC_SAMPLES = os.path.join(ROOT, "samples", "trec")


def _sample_documents():
    """Real sentences shipped with the repository: the TREC sample questions."""
    with open(os.path.join(TREC_SAMPLES, "train.label"), encoding="latin-1") as f:
        questions = [line.split(" ", 1)[1].strip() for line in f if line.strip()]
    return [questions[i:i + 10] for i in range(0, len(questions), 10)]


def _dataset(objective, documents, tokenizer, batch_size=16, training=True, t=48):
    continuation = continuation_flags(tokenizer.vocabulary)
    options = dict(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id,
                   continuation=continuation, rng=np.random.default_rng(0))
    tokenized = tokenize_documents(documents, tokenizer)
    if objective == "mlm_nsp":
        arrays = pack_sentence_pairs(tokenized, t, **options)
    else:
        arrays = pack_single_segments(tokenized, t, **options)
    special = (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
               tokenizer.mask_id)
    return make_pretraining_dataset(
        arrays, objective=objective, continuation=continuation, special_ids=special,
        mask_id=tokenizer.mask_id, batch_size=batch_size, max_predictions=8,
        unigram_probabilities=unigram_distribution(arrays["token_ids"], len(continuation),
                                                   special),
        training=training, seed=3)


@pytest.fixture(scope="module")
def sample_tokenizer():
    documents = _sample_documents()
    tokens = build_vocabulary([line for doc in documents for line in doc], vocab_size=400)
    return WordPieceTokenizer(tokens), documents


# XLA for span_sbo only: it holds the MLM and SBO heads (the NSP head, one dense
# layer, is compiled by tests/test_pretraining_heads.py); XLA compiles take long here,
# so that case is `slow` (span_sbo without XLA: test_pretrain_logs.py).
@pytest.mark.parametrize("objective, jit_compile",
                         [("mlm", False), ("mlm_nsp", False),
                          pytest.param("span_sbo", True, marks=pytest.mark.slow)])
def test_train_step_metrics_and_round_trip(objective, jit_compile, sample_tokenizer, tmp_path):
    tokenizer, documents = sample_tokenizer
    encoder = build_encoder("bert_tiny", vocabulary_size=tokenizer.vocabulary_size,
                            num_layers=1, max_sequence_length=64)
    model = Pretrainer(encoder, objective=objective)
    model.compile(optimizer=create_optimizer(1e-3), jit_compile=jit_compile)
    history = model.fit(_dataset(objective, documents, tokenizer), steps_per_epoch=2,
                        epochs=1, verbose=0)
    assert model.jit_compile == jit_compile, "Keras turned XLA off"
    expected = {"loss", "mlm_loss", "mlm_accuracy"} | {  # padding_fraction: not a metric
        "mlm_nsp": {"nsp_loss", "nsp_accuracy"},
        "span_sbo": {"sbo_loss", "sbo_accuracy"}}.get(objective, set())
    assert set(history.history) == expected
    logs = history.history
    parts = logs["mlm_loss"][0] + logs.get("nsp_loss", [0])[0] + logs.get("sbo_loss", [0])[0]
    assert np.isclose(logs["loss"][0], parts, rtol=1e-4)

    x, _ = next(iter(_dataset(objective, documents, tokenizer, training=False)))
    before = model.predict_on_batch(x)
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    after = restored.predict_on_batch(x)
    for name in before:
        np.testing.assert_allclose(after[name], before[name], atol=1e-5)
    # The reloaded heads read the reloaded encoder's embedding table.
    table = restored.encoder.token_embedding
    assert restored.get_layer("mlm_head").get_embedding_layer() is table


def test_masked_lm_loss_matches_a_numpy_reference(sample_tokenizer):
    tokenizer, documents = sample_tokenizer
    encoder = build_encoder("bert_tiny", vocabulary_size=tokenizer.vocabulary_size,
                            num_layers=1, max_sequence_length=64)
    model = Pretrainer(encoder, objective="span_sbo")
    x, y = next(iter(_dataset("span_sbo", documents, tokenizer, training=False)))
    outputs = model(x)
    loss = float(model.compute_loss(x, y, outputs))

    def reference(labels, logits):
        labels, logits = np.asarray(labels), np.asarray(logits, np.float64)
        logits = logits - logits.max(-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        real = labels >= 0
        return -np.take_along_axis(log_probs, np.maximum(labels, 0)[..., None], -1)[..., 0][
            real].mean()

    expected = (reference(y["mlm_labels"], outputs["mlm_logits"])
                + reference(y["sbo_labels"], outputs["sbo_logits"]))
    assert np.isclose(loss, expected, rtol=1e-5)


@pytest.mark.slow  # trains to a threshold: about 30 s
def test_masked_lm_loss_falls_on_real_text():
    path = shared_data_path("wikitext2", "valid.txt")
    documents = read_corpus(path)[:6]
    tokens = build_vocabulary([line for doc in documents for line in doc], vocab_size=1500)
    tokenizer = WordPieceTokenizer(tokens)
    keras.utils.set_random_seed(0)
    encoder = build_encoder("bert_tiny", vocabulary_size=len(tokens), max_sequence_length=64)
    model = Pretrainer(encoder, objective="mlm")
    model.compile(optimizer=create_optimizer(2e-3, total_steps=300, warmup_steps=15))
    held_out = _dataset("mlm", documents, tokenizer, batch_size=32, training=False, t=64)
    before = model.evaluate(held_out.take(4), return_dict=True, verbose=0)
    model.fit(_dataset("mlm", documents, tokenizer, batch_size=32, t=64),
              steps_per_epoch=60, epochs=1, verbose=0)
    after = model.evaluate(held_out.take(4), return_dict=True, verbose=0)
    # From about ln(V) = 7.3 nats at random (measured 7.5) to 5.9 after 50 steps
    # on this machine; the held-out masks are fixed, so the drop is real.
    assert before["mlm_loss"] > 6.5
    assert after["mlm_loss"] < before["mlm_loss"] - 1.2, (before, after)
    # Masked-token accuracy from 0.002 to 0.039–0.059 over training-stream seeds 1–4.
    assert after["mlm_accuracy"] > 10 * before["mlm_accuracy"] + 0.01


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """tools/pretrain.py on the bundled TREC questions (a few steps of bert_tiny)."""
    directory = tmp_path_factory.mktemp("pretrain")
    corpus = directory / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in _sample_documents()) + "\n",
                      encoding="utf-8")
    model_dir = str(directory / "model")
    flags = ["--preset=bert_tiny", "--objective=span_sbo", f"--corpus={corpus}",
             f"--model_dir={model_dir}", "--vocab_size=500", "--max_steps=4",
             "--steps_per_checkpoint=2", "--batch_size=8", "--max_seq_length=64",
             "--mixed_precision=float32"]
    result = _run("pretrain.py", *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir, flags


def test_pretrain_binary_writes_logs_metrics_and_an_encoder_checkpoint(pretrained):
    model_dir, flags = pretrained
    assert sorted(os.listdir(model_dir)) == [".nlpzoo", ".nlpzoo.lock", "README.md",
                                             "config.json", "encoder", "logs", "metrics.json",
                                             "vocab.txt"]
    card = open(os.path.join(model_dir, "README.md"), encoding="utf-8").read()
    corpus = flags[2].split("=", 1)[1]
    lines = open(corpus, "rb").read().count(b"\n")
    # The card names the corpus (by its file name: cards hold no absolute path).
    assert f"| corpus | `{os.path.basename(corpus)}` | {lines} |" in card
    assert "| Training steps | 4 |" in card and "| sbo_loss |" in card
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["objective"] == "span_sbo" and config["total_steps"] == 4
    metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
    assert {"mlm_loss", "sbo_loss", "mlm_accuracy", "sbo_accuracy"} <= set(metrics)
    train = _scalars(os.path.join(model_dir, "logs", "train"))
    validation = _scalars(os.path.join(model_dir, "logs", "validation"))
    for tag in ("epoch_mlm_loss", "epoch_sbo_loss", "epoch_mlm_accuracy", "epoch_loss"):
        assert len(train[tag]) == 2 and len(validation[tag]) == 2
    assert "epoch_learning_rate" in train
    encoder = load_encoder(os.path.join(model_dir, "encoder"))
    assert encoder.vocabulary_size == config["vocabulary_size"]
    # A finished run is not overwritten by surprise.
    again = _run("pretrain.py", *flags)
    assert again.returncode == 1 and "--overwrite" in again.stderr


def test_pretrain_binary_rejects_bad_flags(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one doc only .\n", encoding="utf-8")
    results = run_tools({  # at once: each is mostly a process start
        "one document": ("pretrain.py", "--objective=mlm_nsp", f"--corpus={corpus}",
                         f"--model_dir={tmp_path / 'model'}", "--max_steps=2"),
        "missing corpus": ("pretrain.py", f"--corpus={tmp_path / 'missing.txt'}",
                           f"--model_dir={tmp_path / 'model2'}", "--max_steps=2"),
        "no max_steps": ("pretrain.py", f"--corpus={corpus}",
                         f"--model_dir={tmp_path / 'model3'}")})
    result = results["one document"]
    assert result.returncode == 1
    assert "error:" in result.stderr and "two documents" in result.stderr
    result = results["missing corpus"]
    assert result.returncode == 1 and "missing.txt" in result.stderr
    result = results["no max_steps"]
    assert result.returncode == 1 and "--max_steps" in result.stderr


@pytest.mark.parametrize("task, options", [
    ("classification", {"num_classes": 6}),
    ("tagging", {"head": "crf", "labels": ["O", "B-LOC", "I-LOC"]}),
])
def test_pretrained_encoder_loads_into_a_classifier_and_a_tagger(pretrained, task, options):
    # tools/train.py --init_checkpoint on native checkpoints: tests/test_checkpoint_formats.py.
    model_dir, _ = pretrained
    checkpoint = os.path.join(model_dir, "encoder")
    model = load_pretrained(checkpoint, task, **options)
    saved = keras.saving.load_model(os.path.join(checkpoint, "encoder.keras"))
    ours = model.get_layer("encoder").weights
    assert len(ours) == len(saved.weights)
    for mine, theirs in zip(ours, saved.weights):
        assert mine.path.split("/")[-1] == theirs.path.split("/")[-1]
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    # The pooler is trainable again for fine-tuning (pretraining froze it without NSP); a
    # tagger never reads it and leaves it out of its own trainable weights.
    pooler = model.get_layer("encoder").transformer.pooler
    assert pooler.trainable
    trained = {id(v) for v in model.trainable_variables}
    assert ({id(v) for v in pooler.weights} <= trained) == (task == "classification")


def test_convert_binary_exports_the_pretrained_encoder_to_keras_hub(pretrained, tmp_path):
    import keras_hub

    model_dir, _ = pretrained
    output = str(tmp_path / "keras_hub_preset")
    result = _run("convert.py", f"--input={model_dir}", "--output_format=keras_hub",
                  f"--output={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    original = load_encoder(os.path.join(model_dir, "encoder"))
    converted = load_encoder(output)
    assert converted.transformer.gelu_approximate  # KerasHub's GELU
    for ours, theirs in zip(original.weights, converted.weights):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    backbone = keras_hub.models.BertBackbone.from_preset(output)
    assert backbone.count_params() == original.count_params()
    again = _run("convert.py", f"--input={model_dir}", f"--output={output}")
    assert again.returncode == 1 and "--overwrite" in again.stderr


def test_build_vocab_binary(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in _sample_documents()) + "\n",
                      encoding="utf-8")
    output = str(tmp_path / "vocab.txt")
    result = _run("build_vocab.py", f"--corpus={corpus}", "--vocab_size=300",
                  "--reserved_tokens=[unused0]", f"--output={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "counted" in result.stderr  # progress
    tokens = open(output, encoding="utf-8").read().splitlines()
    assert tokens[:6] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"]
    assert 100 < len(tokens) <= 301 and len(set(tokens)) == len(tokens)
    # Every sample question tokenizes without [UNK] except for unseen characters.
    tokenizer = WordPieceTokenizer(tokens)
    ids = tokenizer.tokenize_flat([line for doc in _sample_documents() for line in doc])
    assert (ids.flat_values.numpy() == tokenizer.unk_id).mean() < 0.01
    again = _run("build_vocab.py", f"--corpus={corpus}", f"--output={output}")
    assert again.returncode == 1 and "--overwrite" in again.stderr


@pytest.mark.slow  # pretrain then fine-tune: about 40 s
def test_train_binary_takes_a_pretraining_run_directory_as_init_checkpoint(pretrained, tmp_path):
    model_dir, _ = pretrained
    run_dir = str(tmp_path / "fine_tuned")
    result = _run("train.py", f"--init_checkpoint={model_dir}", "--preset=bert_tiny",
                  "--train_data", os.path.join(TREC_SAMPLES, "train.label"),
                  "--eval_data", os.path.join(TREC_SAMPLES, "test.label"),
                  f"--model_dir={run_dir}", "--epochs=1", "--max_seq_length=64",
                  "--mixed_precision=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.load(open(os.path.join(run_dir, "config.json")))
    assert config["init_checkpoint"] == os.path.join(os.path.abspath(model_dir), "encoder")
    assert config["vocabulary_size"] == len(open(os.path.join(model_dir, "vocab.txt")).read()
                                            .splitlines())


def test_convert_binary_reads_the_encoder_of_a_trained_model_directory(trained_classifier_dir,
                                                                       tmp_path):
    output = str(tmp_path / "native")
    result = _run("convert.py", f"--input={trained_classifier_dir}", f"--output={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    model = keras.saving.load_model(os.path.join(trained_classifier_dir, "best_model.keras"))
    for ours, saved in zip(model.get_layer("encoder").weights, load_encoder(output).weights):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(saved))
    with open(os.path.join(output, "vocab.txt")) as f:
        assert f.read().splitlines() == list(model.preprocessor.vocabulary)
