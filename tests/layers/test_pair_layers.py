"""`PairFeatures` (SBERT's (u, v, |u − v|)) and `CosineSimilarity`, against NumPy."""

import numpy as np
import pytest

from nlpzoo.layers import CosineSimilarity, PairFeatures
from tests.helpers.layer_checks import run_layer_test


def _vectors():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(4, 6)).astype("float32"),
            rng.normal(size=(4, 6)).astype("float32"))


def test_pair_features_layer_contract():
    u, v = _vectors()
    run_layer_test(PairFeatures, {"combination": "u,v,|u-v|,u*v"}, {"u": u, "v": v},
                   expected_output_shape=(4, 24), run_training_check=False)


@pytest.mark.parametrize("combination, terms", [
    ("u,v,|u-v|", lambda u, v: [u, v, np.abs(u - v)]),          # Sentence-BERT
    ("u, v, |u - v|, u*v", lambda u, v: [u, v, np.abs(u - v), u * v]),  # InferSent
    ("u-v,u", lambda u, v: [u - v, u]),
])
def test_pair_features_against_numpy(combination, terms):
    u, v = _vectors()
    np.testing.assert_allclose(PairFeatures(combination)(u, v),
                               np.concatenate(terms(u, v), axis=-1), rtol=1e-6, atol=1e-6)


def test_unknown_pair_term_is_refused():
    with pytest.raises(ValueError, match=r"unknown term\(s\) \['u\+v'\].*valid terms: u, v"):
        PairFeatures("u,u+v")


def test_cosine_layer_contract():
    u, v = _vectors()
    run_layer_test(CosineSimilarity, {}, {"u": u, "v": v}, expected_output_shape=(4,),
                   float32_outputs=(0,), run_training_check=False)


def test_cosine_against_numpy():
    u, v = _vectors()
    u[1] = 3.0 * v[1]  # parallel: 1
    u[2] = -v[2]        # opposite: -1
    expected = (u * v).sum(-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))
    cosine = np.asarray(CosineSimilarity()(u, v))
    np.testing.assert_allclose(cosine, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cosine[1:3], [1.0, -1.0], atol=1e-6)
    # A zero vector has cosine 0 with anything (no NaN).
    assert float(CosineSimilarity()(np.zeros((1, 6)), v[:1])[0]) == 0.0
