import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from nlpzoo.layers.crf import CRF
from nlpzoo.tasks.words.tags import allowed_transitions
from tests.helpers.layer_checks import run_layer_test

# ---------------------------------------------------------------------------
# NumPy references
# ---------------------------------------------------------------------------


def _np_logsumexp(values):
    values = np.asarray(values, "float64")
    top = values.max()
    return top + np.log(np.exp(values - top).sum())


def _np_path_score(potentials, path, transitions, start, end):
    """Score of `path` over the first len(path) positions of one sequence."""
    score = start[path[0]] + end[path[-1]]
    score += sum(potentials[i, tag] for i, tag in enumerate(path))
    score += sum(transitions[a, b] for a, b in zip(path[:-1], path[1:]))
    return score


def _brute_force(potentials, length, transitions, start, end, valid=None):
    """All K^length paths of one sequence: (paths, scores), float64."""
    num_tags = potentials.shape[-1]
    paths = [
        p
        for p in itertools.product(range(num_tags), repeat=length)
        if valid is None or valid(p)
    ]
    potentials = potentials.astype("float64")
    scores = np.array(
        [_np_path_score(potentials, p, transitions, start, end) for p in paths]
    )
    return paths, scores


def _random_crf(num_tags, rng, scale=1.0, **kwargs):
    crf = CRF(num_tags, **kwargs)
    weights = {
        "transitions": rng.normal(size=(num_tags, num_tags)) * scale,
        "start": rng.normal(size=num_tags) * scale,
        "end": rng.normal(size=num_tags) * scale,
    }
    weights = {k: v.astype("float32") for k, v in weights.items()}
    crf.transitions.assign(weights["transitions"])
    crf.start_transitions.assign(weights["start"])
    crf.end_transitions.assign(weights["end"])
    return crf, weights


def _constraints(scheme, names):
    """allowed_transitions(...) as CRF keyword arguments."""
    allowed, start, end = allowed_transitions(scheme, names)
    return dict(allowed=allowed, allowed_start=start, allowed_end=end)


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def _mask(lengths, length):
    return (np.arange(length)[None, :] < np.asarray(lengths)[:, None]).astype("int32")


# (batch lengths, time, tags): lengths include 0, 1 and the full T.
SHAPES = [
    ([1, 1, 0], 1, 2),
    ([2, 1, 0], 2, 3),
    ([3, 2, 1], 3, 4),
    ([4, 3, 1, 0], 4, 3),
    ([4, 4, 2], 4, 5),
]

# ---------------------------------------------------------------------------
# Maths against brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("lengths,time,num_tags", SHAPES)
def test_against_brute_force(lengths, time, num_tags):
    rng = np.random.default_rng(time * 10 + num_tags)
    crf, w = _random_crf(num_tags, rng)
    batch = len(lengths)
    potentials = rng.normal(size=(batch, time, num_tags)).astype("float32") * 2
    tags = rng.integers(0, num_tags, size=(batch, time)).astype("int32")
    mask = _mask(lengths, time)

    log_z = _np(crf.log_partition(potentials, mask))
    log_likelihood = _np(crf.log_likelihood(potentials, tags, mask))
    best, best_scores = map(_np, crf.decode(potentials, mask))
    assert log_z.dtype == log_likelihood.dtype == best_scores.dtype == np.float32
    assert best.dtype == np.int32 and best.shape == (batch, time)

    for b, length in enumerate(lengths):
        if length == 0:
            assert log_z[b] == 0 and log_likelihood[b] == 0 and best_scores[b] == 0
            np.testing.assert_array_equal(best[b], 0)
            continue
        paths, scores = _brute_force(
            potentials[b], length, w["transitions"], w["start"], w["end"]
        )
        expected_log_z = _np_logsumexp(scores)
        np.testing.assert_allclose(log_z[b], expected_log_z, rtol=1e-5, atol=1e-5)
        gold = _np_path_score(
            potentials[b], tags[b, :length], w["transitions"], w["start"], w["end"]
        )
        np.testing.assert_allclose(
            log_likelihood[b], gold - expected_log_z, rtol=1e-5, atol=1e-5
        )
        # Probabilities of all paths sum to one.
        np.testing.assert_allclose(np.exp(scores - log_z[b]).sum(), 1.0, rtol=1e-5)
        # Viterbi is the arg-max path, padded with tag 0.
        winner = int(np.argmax(scores))
        np.testing.assert_array_equal(best[b, :length], paths[winner])
        np.testing.assert_array_equal(best[b, length:], 0)
        np.testing.assert_allclose(best_scores[b], scores[winner], rtol=1e-5, atol=1e-5)


def test_probabilities_of_all_paths_sum_to_one():
    rng = np.random.default_rng(7)
    num_tags, time = 3, 4
    crf, _ = _random_crf(num_tags, rng, scale=2.0)
    potentials = rng.normal(size=(1, time, num_tags)).astype("float32") * 3
    paths = np.array(list(itertools.product(range(num_tags), repeat=time)), "int32")
    repeated = np.repeat(potentials, len(paths), axis=0)
    log_p = _np(crf.log_likelihood(repeated, paths, np.ones_like(paths)))
    np.testing.assert_allclose(np.exp(log_p.astype("float64")).sum(), 1.0, rtol=1e-5)


def test_known_fixture():
    crf = CRF(3)
    crf.transitions.assign(
        np.array([[-3, 5, -2], [3, 4, 1], [1, 2, 1]], "float32")
    )
    potentials = np.array([[[4, 5, -3], [3, -1, 3], [-1, 2, 1]]], "float32")
    tags = np.array([[1, 2, 1]], "int32")
    np.testing.assert_allclose(_np(crf.log_partition(potentials)), [18.046122], atol=1e-5)
    np.testing.assert_allclose(
        _np(crf.log_likelihood(potentials, tags)), [-5.046122], atol=1e-5
    )
    best, score = crf.decode(potentials)
    np.testing.assert_array_equal(_np(best), [[1, 0, 1]])
    np.testing.assert_allclose(_np(score), [18.0], atol=1e-5)


# ---------------------------------------------------------------------------
# Padding
# ---------------------------------------------------------------------------


def test_right_padding_with_garbage_changes_nothing():
    rng = np.random.default_rng(3)
    num_tags, padded = 4, 7
    lengths = [5, 3, 1, 0, 7]
    crf, _ = _random_crf(num_tags, rng)
    potentials = rng.normal(size=(len(lengths), padded, num_tags)).astype("float32")
    tags = rng.integers(0, num_tags, size=(len(lengths), padded)).astype("int32")
    mask = _mask(lengths, padded)
    # Garbage on padding: huge values, inf, nan, and out-of-range tags.
    garbage = rng.normal(size=potentials.shape).astype("float32") * 1e4
    garbage[0, -1, 0] = np.inf
    garbage[1, -1, 1] = np.nan
    potentials = np.where(mask[..., None] == 1, potentials, garbage)
    tags = np.where(mask == 1, tags, -1)

    log_z = _np(crf.log_partition(potentials, mask))
    log_likelihood = _np(crf.log_likelihood(potentials, tags, mask))
    best, scores = map(_np, crf.decode(potentials, mask))
    assert np.all(np.isfinite(log_z)) and np.all(np.isfinite(log_likelihood))

    for b, length in enumerate(lengths):
        if length == 0:
            assert log_z[b] == 0 and log_likelihood[b] == 0 and scores[b] == 0
            np.testing.assert_array_equal(best[b], 0)
            continue
        alone = potentials[b : b + 1, :length]
        np.testing.assert_allclose(log_z[b], _np(crf.log_partition(alone))[0], atol=1e-5)
        np.testing.assert_allclose(
            log_likelihood[b],
            _np(crf.log_likelihood(alone, tags[b : b + 1, :length]))[0],
            atol=1e-5,
        )
        alone_best, alone_score = map(_np, crf.decode(alone))
        np.testing.assert_array_equal(best[b, :length], alone_best[0])
        np.testing.assert_array_equal(best[b, length:], 0)
        np.testing.assert_allclose(scores[b], alone_score[0], atol=1e-5)


def test_length_one_and_zero_sequences():
    rng = np.random.default_rng(4)
    crf, w = _random_crf(3, rng)
    potentials = rng.normal(size=(2, 1, 3)).astype("float32")
    mask = np.array([[1], [0]])
    tags = np.array([[2], [0]], "int32")
    expected = w["start"] + potentials[0, 0] + w["end"]
    np.testing.assert_allclose(
        _np(crf.log_partition(potentials, mask)), [_np_logsumexp(expected), 0.0], atol=1e-5
    )
    np.testing.assert_allclose(
        _np(crf.log_likelihood(potentials, tags, mask)),
        [expected[2] - _np_logsumexp(expected), 0.0],
        atol=1e-5,
    )
    best, score = map(_np, crf.decode(potentials, mask))
    np.testing.assert_array_equal(best, [[np.argmax(expected)], [0]])
    np.testing.assert_allclose(score, [expected.max(), 0.0], atol=1e-5)


def test_dynamic_time_axis_including_length_one():
    """With an unknown time length the scans may run zero steps."""
    rng = np.random.default_rng(5)
    crf, _ = _random_crf(3, rng)

    @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float32)])
    def run(potentials):
        tags, scores = crf.decode(potentials)
        return tags, scores, crf.log_partition(potentials)

    for time in (1, 3):
        potentials = rng.normal(size=(2, time, 3)).astype("float32")
        for got, expected in zip(
            run(potentials),
            list(crf.decode(potentials)) + [crf.log_partition(potentials)],
        ):
            np.testing.assert_allclose(_np(got), _np(expected), atol=1e-5)


# ---------------------------------------------------------------------------
# Gradients are marginals
# ---------------------------------------------------------------------------


def test_gradient_of_log_partition_is_the_marginals():
    rng = np.random.default_rng(6)
    num_tags, time, lengths = 3, 4, [4, 2, 0]
    crf, w = _random_crf(num_tags, rng)
    potentials = tf.constant(
        rng.normal(size=(len(lengths), time, num_tags)).astype("float32")
    )
    mask = _mask(lengths, time)
    weights = [crf.transitions, crf.start_transitions, crf.end_transitions]
    with tf.GradientTape() as tape:
        tape.watch(potentials)
        log_z = ops.sum(crf.log_partition(potentials, mask))
    gradients = tape.gradient(log_z, [potentials] + weights)
    marginals, d_transitions, d_start, d_end = map(_np, gradients)

    np.testing.assert_allclose(marginals.sum(-1), mask.astype("float32"), atol=1e-5)
    assert np.all(marginals[mask == 0] == 0)
    expected_start, expected_end = np.zeros(num_tags), np.zeros(num_tags)
    expected_transitions = np.zeros((num_tags, num_tags))
    for b, length in enumerate(lengths):
        if length == 0:
            continue
        paths, scores = _brute_force(
            _np(potentials)[b], length, w["transitions"], w["start"], w["end"]
        )
        probabilities = np.exp(scores - _np_logsumexp(scores))
        expected = np.zeros((length, num_tags))
        for path, p in zip(paths, probabilities):
            expected[np.arange(length), path] += p
            expected_start[path[0]] += p
            expected_end[path[-1]] += p
            for a, c in zip(path[:-1], path[1:]):
                expected_transitions[a, c] += p
        np.testing.assert_allclose(marginals[b, :length], expected, atol=1e-5)
    # Weight gradients are expected counts: first tag, last tag, transitions.
    np.testing.assert_allclose(d_start, expected_start, atol=1e-5)
    np.testing.assert_allclose(d_end, expected_end, atol=1e-5)
    np.testing.assert_allclose(d_transitions, expected_transitions, atol=1e-5)


# ---------------------------------------------------------------------------
# Constraints
# ---------------------------------------------------------------------------

TAGS = {
    "IOB2": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "IOB1": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "BIOES": ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"],
}


def _is_valid(scheme, sequence):
    """An independent check of a whole tag sequence, as strings."""
    previous = "O"
    inside = None  # entity type we are inside of (BIOES)
    for index, tag in enumerate(sequence):
        prefix, _, entity_type = tag.partition("-")
        if scheme == "IOB2" and prefix == "I":
            if previous == "O" or previous[2:] != entity_type:
                return False
        if scheme == "IOB1" and prefix == "B":
            if index == 0 or previous == "O" or previous[2:] != entity_type:
                return False
        if scheme == "BIOES":
            if prefix in ("O", "B", "S") and inside is not None:
                return False
            if prefix in ("I", "E") and inside != entity_type:
                return False
            inside = entity_type if prefix in ("B", "I") else None
        previous = tag
    return not (scheme == "BIOES" and inside is not None)


@pytest.mark.parametrize("scheme", ["IOB2", "IOB1", "BIOES"])
def test_constrained_decoding_never_gives_an_invalid_path(scheme):
    names = TAGS[scheme]
    num_tags, batch, time = len(names), 64, 8
    rng = np.random.default_rng(11)
    constraints = allowed_transitions(scheme, names)
    constrained = CRF(num_tags, *constraints)
    free = CRF(num_tags)
    # Learned weights that favour invalid transitions must not matter.
    weights = rng.normal(size=(num_tags, num_tags)).astype("float32") * 3
    for crf in (constrained, free):
        crf.transitions.assign(weights)
    potentials = rng.normal(size=(batch, time, num_tags)).astype("float32") * 5
    lengths = rng.integers(0, time + 1, size=batch)
    mask = _mask(lengths, time)

    def sequences(crf):
        best = _np(crf.decode(potentials, mask)[0])
        return [[names[t] for t in best[b, : lengths[b]]] for b in range(batch)]

    assert all(_is_valid(scheme, s) for s in sequences(constrained))
    # The check has teeth: without constraints some paths are invalid.
    assert not all(_is_valid(scheme, s) for s in sequences(free))


def test_constraints_apply_to_training_as_well():
    """log Z and the likelihood are over valid paths only."""
    names = TAGS["IOB2"]
    num_tags, time = len(names), 4
    rng = np.random.default_rng(12)
    crf, w = _random_crf(num_tags, rng, **_constraints("IOB2", names))
    potentials = rng.normal(size=(1, time, num_tags)).astype("float32")

    def valid(path):
        return _is_valid("IOB2", [names[t] for t in path])

    paths, scores = _brute_force(
        potentials[0], time, w["transitions"], w["start"], w["end"], valid=valid
    )
    np.testing.assert_allclose(
        _np(crf.log_partition(potentials))[0], _np_logsumexp(scores), rtol=1e-5
    )
    best, score = map(_np, crf.decode(potentials))
    np.testing.assert_array_equal(best[0], paths[int(np.argmax(scores))])
    np.testing.assert_allclose(score[0], scores.max(), rtol=1e-5)
    gold = np.array([paths[3]], "int32")
    np.testing.assert_allclose(
        _np(crf.log_likelihood(potentials, gold))[0],
        scores[3] - _np_logsumexp(scores),
        rtol=1e-5,
        atol=1e-5,
    )


def test_bad_constraint_shapes_are_rejected():
    with pytest.raises(ValueError, match="allowed"):
        CRF(3, allowed=[[1, 1], [1, 1]])
    with pytest.raises(ValueError, match="allowed_end"):
        CRF(3, allowed_end=[1, 2, 1])


# ---------------------------------------------------------------------------
# Serialization, dtypes, XLA
# ---------------------------------------------------------------------------


def _iob2_kwargs():
    return _constraints("IOB2", ["O", "B-PER", "I-PER"])


def test_layer_contract():
    potentials = np.random.default_rng(0).normal(size=(2, 4, 3)).astype("float32")
    # `call` returns the potentials and does not use the weights, so the
    # helper's "fit moves the weights" step does not apply; the XLA fit of
    # the likelihood is `test_training_learns_transitions_under_xla`.
    run_layer_test(
        CRF,
        dict(num_tags=3, **_iob2_kwargs()),
        potentials,
        expected_output_shape=(2, 4, 3),
        float32_outputs=(0,),
        run_training_check=False,
    )


def test_config_round_trip_keeps_constraints_and_decoding():
    rng = np.random.default_rng(1)
    crf, _ = _random_crf(3, rng, **_iob2_kwargs())
    config = crf.get_config()
    assert config["allowed"] == [[1, 1, 0], [1, 1, 1], [1, 1, 1]]
    assert config["allowed_start"] == [1, 1, 0]
    restored = CRF.from_config(config)
    restored.set_weights(crf.get_weights())
    assert restored.get_config() == config
    potentials = rng.normal(size=(4, 5, 3)).astype("float32") * 4
    for a, b in zip(crf.decode(potentials), restored.decode(potentials)):
        np.testing.assert_allclose(_np(a), _np(b))


def test_boolean_masks_store_the_config_older_files_hold():
    """Masks come as 0/1 lists or booleans; the config keeps 0/1 lists, as it always has."""
    boolean = CRF(3, *allowed_transitions("IOB2", ["O", "B-PER", "I-PER"]))
    old_config = {
        "name": "crf",
        "trainable": True,
        "dtype": "float32",
        "num_tags": 3,
        "allowed": [[1, 1, 0], [1, 1, 1], [1, 1, 1]],
        "allowed_start": [1, 1, 0],
        "allowed_end": [1, 1, 1],
    }
    restored = CRF.from_config(old_config)
    for key in ("num_tags", "allowed", "allowed_start", "allowed_end"):
        assert boolean.get_config()[key] == restored.get_config()[key] == old_config[key]
    assert CRF.from_config({"num_tags": 2, "allowed": None}).get_config()["allowed"] is None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_potentials_give_float32_results(dtype):
    rng = np.random.default_rng(2)
    crf, _ = _random_crf(4, rng)
    reference = rng.normal(size=(3, 5, 4)).astype("float32") * 3
    low = ops.cast(reference, dtype)
    rounded = _np(ops.cast(low, "float32"))
    tags = rng.integers(0, 4, size=(3, 5)).astype("int32")
    mask = _mask([5, 3, 1], 5)

    outputs = {
        "log_z": crf.log_partition(low, mask),
        "log_likelihood": crf.log_likelihood(low, tags, mask),
        "score": crf.decode(low, mask)[1],
        "call": crf(low),
    }
    for name, value in outputs.items():
        assert keras.backend.standardize_dtype(value.dtype) == "float32", name
    # Exactly the float32 maths on the rounded inputs ...
    np.testing.assert_allclose(
        _np(outputs["log_z"]), _np(crf.log_partition(rounded, mask)), rtol=1e-6
    )
    np.testing.assert_allclose(
        _np(outputs["log_likelihood"]),
        _np(crf.log_likelihood(rounded, tags, mask)),
        rtol=1e-6,
    )
    # ... and close to the float32 result on the original inputs.
    tolerance = 0.2 if dtype == "bfloat16" else 0.02
    np.testing.assert_allclose(
        _np(outputs["log_z"]), _np(crf.log_partition(reference, mask)), atol=tolerance
    )


def test_weights_stay_float32_inside_a_mixed_precision_call():
    """Another layer's autocast scope must not round the CRF weights."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    crf = CRF(3)
    transitions = np.full((3, 3), 1.001, "float32")  # not a bfloat16 value
    crf.transitions.assign(transitions)
    potentials = np.zeros((1, 2, 3), "float32")

    class Head(keras.layers.Layer):
        def call(self, x):
            return crf.log_partition(x)

    inside = _np(Head()(potentials))
    np.testing.assert_allclose(inside, [np.log(9.0) + 1.001], rtol=1e-6)
    assert crf.transitions.dtype == "float32"


@pytest.mark.parametrize("time", [6, 1])
def test_xla_compiles_and_matches_eager(time):
    rng = np.random.default_rng(8)
    crf, _ = _random_crf(5, rng, **_constraints("IOB2", TAGS["IOB2"]))
    potentials = tf.constant(rng.normal(size=(4, time, 5)).astype("float32"))
    tags = _np(crf.decode(potentials)[0])
    mask = _mask([time, time // 2, 1, 0], time)

    def run(potentials, tags, mask):
        with tf.GradientTape() as tape:
            tape.watch(potentials)
            log_likelihood = crf.log_likelihood(potentials, tags, mask)
            total = ops.sum(log_likelihood)
        gradients = tape.gradient(total, [potentials] + crf.trainable_variables)
        assert all(g is not None for g in gradients)
        best, scores = crf.decode(potentials, mask)
        return [best, scores, log_likelihood] + gradients

    compiled = tf.function(run, jit_compile=True)
    eager = run(potentials, tags, mask)
    for got, expected in zip(compiled(potentials, tags, mask), eager):
        np.testing.assert_allclose(_np(got), _np(expected), atol=1e-5)
    hlo = compiled.experimental_get_compiler_ir(potentials, tags, mask)(stage="hlo")
    assert "HloModule" in hlo


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def _entity_task(rng, count, time):
    """Tokens 3 and 4 are entity words; a run of them is one entity (B then I).

    Token 0 is padding. A per-token classifier cannot tell B from I (the same
    word can be either); only the learned transitions can.
    """
    tokens = rng.integers(1, 5, size=(count, time))
    lengths = rng.integers(1, time + 1, size=count)
    mask = _mask(lengths, time)
    tags = np.zeros((count, time), "int32")
    for b in range(count):
        for t in range(lengths[b]):
            if tokens[b, t] >= 3:
                continues = t > 0 and tokens[b, t - 1] >= 3
                tags[b, t] = 2 if continues else 1
    return tokens * mask, np.where(mask == 1, tags, -1), mask


def _tagger(time):
    """Embedding -> Dense -> CRF, compiled with the negative log-likelihood.

    The embedding's Keras mask reaches the CRF, which must not pass it on to
    the per-sequence loss.
    """
    inputs = keras.Input(shape=(time,), dtype="int32")
    hidden = keras.layers.Embedding(5, 8, mask_zero=True)(inputs)
    crf = CRF(3)
    outputs = crf(keras.layers.Dense(3)(hidden))
    model = keras.Model(inputs, outputs)

    def negative_log_likelihood(y_true, y_pred):
        return -crf.log_likelihood(y_pred, y_true, y_true >= 0)

    model.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss=negative_log_likelihood,
        jit_compile=True,
    )
    return model, crf


def test_training_learns_transitions_under_xla():
    time = 8
    tokens, tags, _ = _entity_task(np.random.default_rng(9), 512, time)
    model, crf = _tagger(time)
    history = model.fit(tokens, tags, batch_size=32, epochs=20, verbose=0)
    assert model.jit_compile is True  # Keras did not fall back to no XLA.
    losses = history.history["loss"]
    assert losses[-1] < 0.05 * losses[0]

    tokens, tags, mask = _entity_task(np.random.default_rng(10), 256, time)
    best = _np(crf.decode(model.predict(tokens, verbose=0), mask)[0])
    assert np.all(best[mask == 1] == tags[mask == 1])
    transitions = _np(crf.transitions)
    assert transitions[0, 1] > transitions[0, 2]  # O -> B, not O -> I


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_fit_under_mixed_precision_and_xla(policy):
    keras.mixed_precision.set_global_policy(policy)
    time = 6
    tokens, tags, _ = _entity_task(np.random.default_rng(13), 64, time)
    model, crf = _tagger(time)
    assert keras.backend.standardize_dtype(model.outputs[0].dtype) == "float32"
    before = _np(crf.transitions)
    history = model.fit(tokens, tags, batch_size=32, epochs=2, verbose=0)
    assert model.jit_compile is True
    assert np.all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert crf.transitions.dtype == "float32"
    assert not np.allclose(_np(crf.transitions), before)
