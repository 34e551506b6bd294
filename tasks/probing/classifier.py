"""Linear probes: one softmax classifier per layer, trained together on frozen word vectors.

The probes of all layers are one Keras model: features [N, layers, H] are
standardised with the training data's mean and variance (per layer and
dimension: an affine map, so a linear probe can read exactly what it could
before, but Adam converges in a few epochs), then layer `l`'s logits are
`x[:, l] @ kernel[l] + bias[l]`. The probes share no weight and their losses
are added, so each gets exactly the gradient of its own loss; Adam scales
every weight on its own, so training them together equals training each
alone with the same batches. One `fit` over cached features trains all
`num_layers + 1` probes. The weights start at zero (softmax regression is
convex: no random start is needed), so a run depends only on the seed that
shuffles the words.
"""

import keras
import numpy as np


def build_probes(num_layers, hidden_dim, num_classes, mean=None, variance=None):
    """The per-layer linear probes as one uncompiled model: [N, L, H] → logits [N, L, K].

    Args:
        num_layers: layers of features (an encoder's blocks + 1).
        hidden_dim: size of each word vector.
        num_classes: labels of the column.
        mean, variance: [L, H] statistics of the training features to
            standardise with (None: no standardisation).

    Examples:
    >>> probes = build_probes(num_layers=3, hidden_dim=4, num_classes=5)
    >>> probes.output_shape, probes.count_params() == 3 * (4 * 5 + 5)
    ((None, 3, 5), True)
    """
    inputs = keras.Input(shape=(num_layers, hidden_dim), dtype="float32", name="word_vectors")
    x = inputs
    if mean is not None:
        x = keras.layers.Normalization(axis=(1, 2), mean=mean, variance=variance,
                                       dtype="float32", name="standardise")(x)
    logits = keras.layers.EinsumDense("blh,lhk->blk", output_shape=(num_layers, num_classes),
                                      bias_axes="lk", kernel_initializer="zeros",
                                      dtype="float32", name="probes")(x)
    return keras.Model(inputs, logits, name="linear_probes")


def summed_over_layers(labels, logits):
    """Cross-entropy of every layer's probe, added: [N, layers] labels, [N, layers, K] logits.

    A sum, not a mean, over layers: each probe's gradient is then exactly the
    one it would get trained alone.
    """
    losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return keras.ops.sum(losses, axis=-1)


def train_probes(vectors, labels, num_classes, epochs=5, batch_size=256,
                 learning_rate=1e-3, seed=0, verbose=0):
    """Trains one linear softmax probe per layer on word vectors; returns the model.

    Args:
        vectors: float [N, layers, H] (`WordFeatures.vectors`).
        labels: int [N] label ids in [0, num_classes).
        num_classes: number of labels.
        epochs, batch_size, learning_rate: Adam on the cross-entropy of every layer,
            added (`summed_over_layers`), averaged over the words of a batch.
        seed: the shuffle seed of `fit`.
        verbose: `fit`'s verbosity.

    Returns:
        The trained `keras.Model` (`build_probes`); see `probe_accuracies`.

    Examples:
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 2, size=200)
    >>> vectors = rng.normal(size=(200, 2, 3)).astype("float32")
    >>> vectors[:, 1, 0] += 4 * labels  # only layer 1 knows the label
    >>> probes = train_probes(vectors, labels, 2, epochs=20, batch_size=50, learning_rate=0.05)
    >>> [accuracy > 0.9 for accuracy in probe_accuracies(probes, vectors, labels)]
    [False, True]
    """
    vectors = np.asarray(vectors, np.float32)
    labels = np.asarray(labels)
    if vectors.ndim != 3 or len(vectors) != len(labels):
        raise ValueError(f"expected vectors [N, layers, H] and labels [N], got "
                         f"{vectors.shape} and {labels.shape}")
    if len(labels) == 0:
        raise ValueError("no words to train the probes on")
    if labels.min() < 0 or labels.max() >= num_classes:
        raise ValueError(f"training label ids must be in [0, {num_classes}), found "
                         f"{labels.min()}..{labels.max()}")
    _, num_layers, hidden_dim = vectors.shape
    mean = vectors.mean(axis=0, dtype=np.float64)
    variance = vectors.var(axis=0, dtype=np.float64)
    probes = build_probes(num_layers, hidden_dim, num_classes, mean.astype(np.float32),
                          variance.astype(np.float32))
    probes.compile(optimizer=keras.optimizers.Adam(learning_rate), loss=summed_over_layers)
    every_layer = np.repeat(labels.astype(np.int32)[:, None], num_layers, axis=1)
    keras.utils.set_random_seed(seed)
    probes.fit(vectors, every_layer, epochs=epochs, batch_size=batch_size, shuffle=True,
               verbose=verbose)
    return probes


def probe_accuracies(probes, vectors, labels, batch_size=1024):
    """Accuracy of each layer's probe on words: a list of `layers` floats.

    Label ids the probes cannot predict (>= their number of classes: labels
    unseen in training) count as errors.
    """
    logits = probes.predict(np.asarray(vectors, np.float32), batch_size=batch_size, verbose=0)
    predicted = logits.argmax(axis=-1)  # [N, layers]
    correct = predicted == np.asarray(labels)[:, None]
    return [float(value) for value in correct.mean(axis=0)]


def majority_accuracy(train_labels, eval_labels):
    """Accuracy of always predicting the most frequent training label (a baseline).

    Examples:
    >>> majority_accuracy([0, 1, 1], [1, 1, 0, 2])
    0.5
    """
    most_frequent = np.bincount(np.asarray(train_labels)).argmax()
    return float(np.mean(np.asarray(eval_labels) == most_frequent))
