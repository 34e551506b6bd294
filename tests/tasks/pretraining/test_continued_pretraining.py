"""Continued pretraining from a checkpoint: BERT's MLM and NSP heads imported from Hugging Face
tensors (checked against NumPy), and tools/pretrain.py --init_checkpoint starting from exactly
the checkpoint's weights."""

import json
import os

import numpy as np
import pytest
from scipy.special import erf

from nlpzoo.layers import transformer_of
from nlpzoo.tasks.modeling.losses import masked_sparse_cross_entropy
from nlpzoo.tasks.text.corpus import read_corpus
from nlpzoo.tasks.pretraining.corpus_datasets import masked_datasets, pack_corpus
from nlpzoo.tasks.pretraining.model import Pretrainer
from nlpzoo.tasks.text.masking import default_max_predictions
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, build_vocabulary, read_vocabulary
from tests.helpers.binaries import run_tools
from tests.helpers.paths import TREC
from tests.tasks.training.test_tensorboard import _events
from nlpzoo.zoo import build_encoder
from nlpzoo.zoo.checkpoints import (
    export_hf_checkpoint,
    load_encoder,
    load_pretrainer,
    read_hf_weights,
    read_tokenizer_settings,
    save_encoder_checkpoint,
)

SEED = 42  # tools/pretrain.py's default --seed
MAX_SEQ_LENGTH = 32
BATCH_SIZE = 8


def _questions():
    with open(os.path.join(TREC, "train.label"), encoding="latin-1") as f:
        return [line.split(" ", 1)[1].strip() for line in f if line.strip()]


def _head_tensors(hidden, vocabulary_size, rng):
    """Hugging Face BertForPreTraining's head tensors, random (torch layouts: Linear [out, in])."""
    return {
        "cls.predictions.transform.dense.weight": rng.normal(0, 0.2, (hidden, hidden)),
        "cls.predictions.transform.dense.bias": rng.normal(0, 0.2, (hidden,)),
        "cls.predictions.transform.LayerNorm.weight": 1 + rng.normal(0, 0.2, (hidden,)),
        "cls.predictions.transform.LayerNorm.bias": rng.normal(0, 0.2, (hidden,)),
        "cls.predictions.bias": rng.normal(0, 0.5, (vocabulary_size,)),
        "cls.seq_relationship.weight": rng.normal(0, 0.5, (2, hidden)),
        "cls.seq_relationship.bias": np.array([0.3, -0.2]),
    }


def _hf_checkpoint(directory, with_heads=True):
    """A bert_tiny Hugging Face directory whose vocabulary is learned from the TREC sample."""
    from safetensors.numpy import save_file

    tokens = build_vocabulary(_questions(), 400, lowercase=True)
    encoder = build_encoder("bert_tiny", vocabulary_size=len(tokens), max_sequence_length=64)
    export_hf_checkpoint(encoder, directory, tokens, lowercase=True)
    if with_heads:
        tensors = read_hf_weights(directory)
        # As BertForPreTraining saves it: the decoder matrix is the word embedding table.
        tensors["cls.predictions.decoder.weight"] = tensors["embeddings.word_embeddings.weight"]
        heads = _head_tensors(128, len(tokens), np.random.default_rng(0))
        tensors.update({name: value.astype("float32") for name, value in heads.items()})
        save_file(tensors, os.path.join(directory, "model.safetensors"))
    return directory


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    return _hf_checkpoint(str(tmp_path_factory.mktemp("hf") / "bert"))


def _gelu(x):
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def _layer_norm(x, gamma, beta, epsilon=1e-12):
    mean = x.mean(-1, keepdims=True)
    variance = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def test_heads_compute_what_bert_for_pretraining_computes(hf_dir):
    model, loaded = load_pretrainer(hf_dir, "mlm_nsp", dropout=0.0, attention_dropout=0.0)
    assert loaded == ("mlm_head", "nsp_head")
    tensors = read_hf_weights(hf_dir)
    rng = np.random.default_rng(1)
    vocabulary_size = tensors["embeddings.word_embeddings.weight"].shape[0]
    x = {"token_ids": rng.integers(5, vocabulary_size, (3, 12)).astype("int32"),
         "segment_ids": np.repeat([[0] * 6 + [1] * 6], 3, 0).astype("int32"),
         "padding_mask": np.ones((3, 12), "int32"),
         "mask_positions": rng.integers(1, 12, (3, 4)).astype("int32")}
    outputs = model(x, training=False)
    encoded = model.encoder({name: x[name] for name in ("token_ids", "segment_ids",
                                                         "padding_mask")})
    sequence = np.asarray(encoded["sequence_output"])
    pooled = np.asarray(encoded["pooled_output"])

    # BertLMPredictionHead: dense → GELU (exact) → LayerNorm → word embeddingsᵀ + bias.
    gathered = np.take_along_axis(sequence, x["mask_positions"][..., None], axis=1)
    p = "cls.predictions."
    hidden = _gelu(gathered @ tensors[p + "transform.dense.weight"].T
                   + tensors[p + "transform.dense.bias"])
    hidden = _layer_norm(hidden, tensors[p + "transform.LayerNorm.weight"],
                         tensors[p + "transform.LayerNorm.bias"])
    expected = hidden @ tensors["embeddings.word_embeddings.weight"].T + tensors[p + "bias"]
    np.testing.assert_allclose(np.asarray(outputs["mlm_logits"]), expected, atol=2e-4)

    # BertOnlyNSPHead scores [is next, is random]; ours [is random, is next].
    theirs = pooled @ tensors["cls.seq_relationship.weight"].T + tensors[
        "cls.seq_relationship.bias"]
    np.testing.assert_allclose(np.asarray(outputs["nsp_logits"]), theirs[:, ::-1], atol=1e-5)


def test_heads_absent_from_a_checkpoint_start_fresh_on_the_tied_embeddings(tmp_path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    directory = str(tmp_path / "native")
    save_encoder_checkpoint(build_encoder("bert_tiny", vocabulary_size=len(tokens)),
                            directory, tokens, lowercase=True)
    model, loaded = load_pretrainer(directory, "span_sbo")
    assert loaded == ()
    table = transformer_of(model.encoder).token_embedding
    for head in ("mlm_head", "sbo_head"):
        assert model.get_layer(head).decoder.get_embedding_layer() is table


def test_an_incomplete_head_is_refused_by_name(tmp_path):
    from safetensors.numpy import save_file

    directory = _hf_checkpoint(str(tmp_path / "bert"))
    tensors = read_hf_weights(directory)
    del tensors["cls.predictions.transform.LayerNorm.bias"]
    save_file(tensors, os.path.join(directory, "model.safetensors"))
    with pytest.raises(ValueError, match="cls.predictions.transform.LayerNorm.bias"):
        load_pretrainer(directory, "mlm")


# --learning_rate=1e-20 (a learning rate must be > 0): every step moves each weight by about
# 1e-20, far below float32's resolution, so the weights stay as they start and the validation losses
# after each interval are those of the start on fixed batches (the held-out masks never
# change). The training batches cannot be rebuilt outside the run: under a distribution
# strategy, Keras's fit trains on the second pass of the re-masked stream.
_BINARY_FLAGS = ("--objective=mlm_nsp", "--max_steps=2", "--steps_per_checkpoint=1",
                 f"--batch_size={BATCH_SIZE}", f"--max_seq_length={MAX_SEQ_LENGTH}",
                 "--eval_fraction=0.1", "--mixed_precision=float32",
                 "--learning_rate=1e-20")


@pytest.fixture(scope="module")
def continued(hf_dir, tmp_path_factory):
    """tools/pretrain.py --init_checkpoint (2 steps), and two refused commands beside it."""
    directory = tmp_path_factory.mktemp("continued")
    corpus = str(directory / "corpus.txt")
    questions = _questions()
    with open(corpus, "w", encoding="utf-8") as f:  # documents of 10 questions
        f.write("\n\n".join("\n".join(questions[i:i + 10])
                            for i in range(0, len(questions), 10)) + "\n")
    common = (f"--init_checkpoint={hf_dir}", f"--corpus={corpus}", *_BINARY_FLAGS)
    results = run_tools({
        "run": ("pretrain.py", *common, f"--model_dir={directory / 'model'}", "--dropout=0",
                "--log_every_steps=1"),
        "vocab": ("pretrain.py", *common, f"--model_dir={directory / 'refused1'}",
                  "--vocab_size=500"),
        "preset": ("pretrain.py", *common, f"--model_dir={directory / 'refused2'}",
                   "--preset=bert_mini"),
    })
    assert results["run"].returncode == 0, results["run"].stderr[-3000:]
    return str(directory / "model"), corpus, results


def test_continued_pretraining_starts_from_exactly_the_checkpoints_weights(hf_dir, continued):
    model_dir, corpus, results = continued
    assert "mlm_head, nsp_head loaded" in results["run"].stdout
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["preset"] == "bert_tiny" and config["init_checkpoint"] == hf_dir
    assert config["heads_from_checkpoint"] == ["mlm_head", "nsp_head"]

    # The run's held-out batches, rebuilt by the same functions from the same seed.
    tokens, lowercase = read_tokenizer_settings(hf_dir)
    tokenizer = WordPieceTokenizer(tokens, lowercase=lowercase)
    train, held_out = pack_corpus(read_corpus(corpus), tokenizer, "mlm_nsp", MAX_SEQ_LENGTH,
                                  seed=SEED, eval_fraction=0.1)
    _, eval_dataset = masked_datasets(
        train, held_out, tokenizer, objective="mlm_nsp", batch_size=BATCH_SIZE,
        max_predictions=default_max_predictions(MAX_SEQ_LENGTH), seed=SEED)
    model, _ = load_pretrainer(hf_dir, "mlm_nsp", dropout=0.0, attention_dropout=0.0)
    model.compile()
    expected = model.evaluate(eval_dataset, return_dict=True, verbose=0)

    validation = _events(os.path.join(model_dir, "logs", "validation"))
    train = _events(os.path.join(model_dir, "logs", "train"))
    assert sorted(train["loss/step"]) == [1, 2]  # --log_every_steps=1
    for name in ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"):
        assert len(train[f"epoch_{name}"]) == len(validation[f"epoch_{name}"]) == 2
    for name in ("mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"):
        for value in validation[f"epoch_{name}"].values():  # after steps 1 and 2
            assert value == pytest.approx(expected[name], abs=1e-5), name
    # The same encoder with fresh heads scores otherwise: the heads are the checkpoint's.
    fresh = Pretrainer(load_encoder(hf_dir, dropout=0.0, attention_dropout=0.0), "mlm_nsp")
    fresh.compile()
    assert fresh.evaluate(eval_dataset, return_dict=True, verbose=0)["mlm_loss"] != \
        pytest.approx(expected["mlm_loss"], abs=1e-2)


def test_continued_encoder_keeps_the_checkpoints_vocabulary_and_weights(hf_dir, continued):
    model_dir, _, _ = continued
    with open(os.path.join(hf_dir, "vocab.txt"), encoding="utf-8") as f:
        assert open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8").read() == f.read()
    encoder_dir = os.path.join(model_dir, "encoder")  # what tools/train.py fine-tunes
    assert read_tokenizer_settings(encoder_dir) == (read_vocabulary(
        os.path.join(hf_dir, "vocab.txt")), True)
    after, before = load_encoder(encoder_dir), load_encoder(hf_dir)
    assert len(after.weights) == len(before.weights)
    for saved, original in zip(after.weights, before.weights):  # learning rate 1e-20
        # Zeros (biases) move by about 1e-20; every other weight is unchanged in float32.
        np.testing.assert_allclose(np.asarray(saved), np.asarray(original), rtol=1e-7,
                                   atol=1e-15)


def test_flags_that_contradict_the_checkpoint_are_refused(continued):
    _, _, results = continued
    assert results["vocab"].returncode == 1
    assert "--vocab_size cannot be combined with --init_checkpoint" in results["vocab"].stderr
    assert results["preset"].returncode == 1
    assert "--preset=bert_mini does not have the shape" in results["preset"].stderr
    assert "bert_tiny" in results["preset"].stderr
