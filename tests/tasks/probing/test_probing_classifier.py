"""tasks.probing.classifier: one linear probe per layer, trained together, scored per layer."""

import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.probing import (
    build_probes,
    extract_word_features,
    label_ids,
    majority_accuracy,
    probe_accuracies,
    probing_labels,
    read_probing_column,
    train_probes,
)
from nlpzoo.tasks.words.pipeline import make_word_dataset
from nlpzoo.tasks.words.preprocessor import WordPreprocessor

CAPITALISED = ["Apple", "Berlin", "Cat", "Delta"]
LOWER = ["egg", "fig", "gum", "ham"]


def _write_capitalisation_column(path, sentences):
    """A `word label` file whose label says whether the word is capitalised."""
    lines = []
    for words in sentences:
        lines += [f"{word} {'CAP' if word[0].isupper() else 'LOW'}" for word in words] + [""]
    path.write_text("\n".join(lines))
    return str(path)


def test_layer_0_of_a_cased_vocabulary_reads_capitalisation_perfectly(tmp_path):
    """Layer 0 is LayerNorm(token + position embedding): with 8 words at 6 positions there
    are 48 distinct vectors in 64 dimensions, so any labelling of them, capitalisation
    included, is linearly separable, and the probe must reach 100% on them."""
    words = CAPITALISED + LOWER
    # Every word at every position 0..5 once (rotations); evaluation: the same words and
    # positions in other sentences (reversed), so every vector was seen in training.
    rotations = [[words[(k + i) % 8] for i in range(6)] for k in range(8)]
    train = read_probing_column(_write_capitalisation_column(tmp_path / "train", rotations), 2)
    evaluation = read_probing_column(
        _write_capitalisation_column(tmp_path / "eval", [r[::-1] for r in rotations]), 2)
    labels = probing_labels(train)
    assert labels == ["CAP", "LOW"]
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    preprocessor = WordPreprocessor(vocabulary, lowercase=False, max_seq_length=16)
    encoder = Encoder(vocabulary_size=len(vocabulary), num_layers=2, num_heads=2, hidden_dim=64,
                      intermediate_dim=64, max_sequence_length=16)
    dataset = make_word_dataset([s.words for s in train + evaluation],
                                label_ids(train + evaluation, labels), preprocessor,
                                batch_size=16)
    features = extract_word_features(encoder, dataset)
    assert features.vectors.shape == (96, 3, 64)
    train_x, eval_x = features.vectors[:48], features.vectors[48:]
    train_y, eval_y = features.labels[:48], features.labels[48:]
    # 60 steps; the words repeated rather than 60 epochs, each of which costs time in fit.
    probes = train_probes(np.tile(train_x, (10, 1, 1)), np.tile(train_y, 10), len(labels),
                          epochs=6, batch_size=48, learning_rate=0.05)
    accuracies = probe_accuracies(probes, eval_x, eval_y)
    assert len(accuracies) == encoder.num_layers + 1
    assert accuracies[0] == 1.0, accuracies


def test_probes_are_independent_training_together_equals_training_alone():
    """Layer l's probe gets the gradient of its own loss only: its weights after training
    all layers together equal those of training its layer alone (same words, same order)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=120)
    vectors = rng.normal(size=(120, 3, 5)).astype(np.float32)
    vectors[:, 2, :3] += 4 * np.eye(3)[labels]
    together = train_probes(vectors, labels, 3, epochs=3, batch_size=32, learning_rate=0.1)
    kernel, bias = together.get_layer("probes").get_weights()  # [L, H, K], [L, K]
    for layer in range(3):
        alone = train_probes(vectors[:, layer:layer + 1], labels, 3, epochs=3, batch_size=32,
                             learning_rate=0.1)
        kernel_alone, bias_alone = alone.get_layer("probes").get_weights()
        np.testing.assert_allclose(kernel[layer], kernel_alone[0], atol=1e-6)
        np.testing.assert_allclose(bias[layer], bias_alone[0], atol=1e-6)
    accuracies = probe_accuracies(together, vectors, labels)
    assert accuracies[2] > 0.9 and max(accuracies[:2]) < 0.6


def test_unseen_labels_count_as_errors():
    probes = build_probes(num_layers=2, hidden_dim=1, num_classes=2)
    probes.get_layer("probes").set_weights([np.array([[[-1.0, 1.0]], [[1.0, -1.0]]]),
                                            np.zeros((2, 2))])
    vectors = np.ones((4, 2, 1), np.float32)  # layer 0 predicts 1, layer 1 predicts 0
    labels = np.array([1, 1, 0, 2])  # 2: seen in evaluation only
    assert probe_accuracies(probes, vectors, labels) == [0.5, 0.25]
    assert majority_accuracy([1, 1, 0], labels) == 0.5


def test_bad_training_labels_are_refused():
    vectors = np.zeros((3, 2, 4), np.float32)
    with pytest.raises(ValueError, match=r"training label ids must be in \[0, 2\)"):
        train_probes(vectors, np.array([0, 1, 2]), 2)
    with pytest.raises(ValueError, match="expected vectors"):
        train_probes(vectors[0], np.array([0, 1]), 2)
