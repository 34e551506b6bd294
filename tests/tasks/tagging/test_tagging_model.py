import itertools
import os

import numpy as np
import pytest

from nlpzoo.tasks.tagging import read_column_file
from nlpzoo.tasks.tagging.evaluation import evaluate_tagger, predict_tags
from nlpzoo.tasks.tagging.metrics import entity_scores
from nlpzoo.tasks.modeling.encoder_task_model import MaskedAccuracy
from nlpzoo.tasks.tagging.pipeline import make_dataset
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, build_vocabulary
from tests.helpers.task_checks import run_task_test
from nlpzoo.zoo import build_model
from tests.helpers.paths import ROOT

SAMPLES = os.path.join(ROOT, "samples", "conll2003")
LABELS = ["O", "B-PER", "I-PER"]


def _inputs(batch=4, words=6):
    rng = np.random.default_rng(0)
    return {
        "token_ids": rng.integers(5, 50, (batch, words + 2)).astype("int32"),
        "segment_ids": np.zeros((batch, words + 2), "int32"),
        "padding_mask": np.ones((batch, words + 2), "int32"),
        "word_starts": np.tile(np.arange(1, words + 1), (batch, 1)).astype("int32"),
        "word_mask": np.ones((batch, words), "int32"),
    }


def test_softmax_loss_is_masked_cross_entropy():
    tagger = build_model("bert_tiny_tagger", num_classes=3, vocabulary_size=50, dropout=0.0)
    x = _inputs()
    y = np.array([[1, 2, 0, 0, -1, -1]] * 4, "int32")
    x["word_mask"][:, 4:] = 0
    scores = np.asarray(tagger(x))
    log_probs = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    expected = -np.mean([log_probs[b, w, y[b, w]] for b in range(4) for w in range(4)])
    loss = float(tagger.compute_loss(x, y, tagger(x)))
    assert abs(loss - expected) < 1e-5


def test_crf_loss_is_negative_log_likelihood_per_word():
    tagger = build_model("bert_tiny_crf_tagger", labels=LABELS, vocabulary_size=50, dropout=0.0)
    x = _inputs(batch=1, words=3)
    y = np.array([[1, 2, 0]], "int32")
    scores = np.asarray(tagger(x))[0]
    crf = tagger.crf
    penalty = np.where(np.array(crf.allowed) > 0, 0.0, -1e6)
    transitions = crf.transitions.numpy() + penalty
    start = crf.start_transitions.numpy() + np.where(np.array(crf.allowed_start) > 0, 0, -1e6)
    end = crf.end_transitions.numpy()

    def path_score(path):
        total = start[path[0]] + end[path[-1]] + sum(scores[i, t] for i, t in enumerate(path))
        return total + sum(transitions[a, b] for a, b in zip(path, path[1:]))

    all_paths = [path_score(p) for p in itertools.product(range(3), repeat=3)]
    log_z = np.log(np.sum(np.exp(np.array(all_paths) - max(all_paths)))) + max(all_paths)
    expected = -(path_score([1, 2, 0]) - log_z) / 3
    assert abs(float(tagger.compute_loss(x, y, tagger(x))) - expected) < 1e-4


# The other BERT-family layouts (zoo.presets), with a WordPiece vocabulary: the architecture.
FAMILY_ENCODERS = ("roberta_tiny", "distilbert_tiny", "albert_tiny", "electra_tiny",
                   "modernbert_tiny")


# One family runs by default (RoBERTa: offset positions, segment ids ignored); the rest
# under `-m slow`, to keep the default run short.
@pytest.mark.parametrize("encoder", ["bert_tiny", "roberta_tiny"] + [
    pytest.param(name, marks=pytest.mark.slow) for name in FAMILY_ENCODERS[1:]])
@pytest.mark.parametrize("head", [pytest.param("softmax", marks=pytest.mark.slow), "crf"])
def test_tagger_task_contract_learns_and_decodes(head, encoder):
    """XLA training (30 steps), .keras round trip and mixed_bfloat16, then decoding."""
    preset = f"{encoder}_crf_tagger" if head == "crf" else f"{encoder}_tagger"
    x = _inputs(batch=8)
    # Learnable rule: the tag depends on the token id parity.
    y = np.where(x["token_ids"][:, 1:-1] % 2 == 0, 1, 0).astype("int32")
    y[:, 1:] = np.where((y[:, 1:] == 1) & (y[:, :-1] > 0), 2, y[:, 1:])
    tagger, history = run_task_test(
        lambda jit_compile: build_model(preset, labels=LABELS, vocabulary_size=50, num_layers=1,
                                        learning_rate=1e-3, jit_compile=jit_compile),
        x, y, expected_output_shape=(8, 6, 3), epochs=30)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    decoded = tagger.predict_on_batch(x)
    assert decoded.dtype == np.int32 and decoded.shape == (8, 6)
    if head == "crf":
        # IOB2 constraints: I-PER never follows O or starts a sentence.
        for row in decoded:
            for previous, current in zip([0] + list(row), row):
                assert not (current == 2 and previous == 0)


def test_evaluation_matches_entity_scores_on_sample():
    train = read_column_file(os.path.join(SAMPLES, "train.txt"))
    labels = sorted({t for s in train for t in s.tags}, key=lambda t: (t != "O", t))
    tokenizer = WordPieceTokenizer(build_vocabulary((" ".join(s.words) for s in train), 500,
                                                    min_frequency=1))
    dataset = make_dataset(train, tokenizer, labels, max_seq_length=32, batch_size=4)
    tagger = build_model("bert_tiny_crf_tagger", labels=labels,
                         vocabulary_size=tokenizer.vocabulary_size, num_layers=1)
    predicted = predict_tags(tagger, dataset, train, labels)
    assert [len(p) for p in predicted] == [len(s.words) for s in train]
    scores = evaluate_tagger(tagger, dataset, train, labels)
    expected = entity_scores([list(s.tags) for s in train], predicted)
    assert scores["entity_f1"] == expected["f1"]
    assert scores["token_accuracy"] == expected["token_accuracy"]
    # Words past the 30-subword budget were cut: they are tagged "O".
    kept = np.concatenate([f["word_mask"].numpy().sum(1) for f, _ in dataset])
    cut = [i for i, s in enumerate(train) if kept[i] < len(s.words)]
    assert cut, "the sample should have sentences longer than the budget"
    for i in cut:
        assert predicted[i][kept[i]:] == ["O"] * (len(train[i].words) - kept[i])


def test_masked_token_accuracy_ignores_padding():
    metric = MaskedAccuracy()
    metric.update_state(np.array([[2, 1, -1, -1]]), np.eye(3)[[2, 0, 1, 1]][None])
    assert float(metric.result()) == 0.5
