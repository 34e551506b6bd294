import numpy as np

from layers import ClassificationHead
from tests.layer_test_utils import check_mixed_precision, run_layer_test


def test_layer_contract_logits_stay_float32():
    x = np.random.default_rng(0).normal(size=(4, 8)).astype("float32")
    run_layer_test(
        ClassificationHead, dict(num_classes=3), x,
        expected_output_shape=(4, 3), float32_outputs=(0,),
    )
    run_layer_test(
        ClassificationHead, dict(num_classes=2, hidden_dim=6), x,
        expected_output_shape=(4, 2), float32_outputs=(0,),
    )


def test_logits_are_affine_in_input_without_dropout_at_inference():
    head = ClassificationHead(num_classes=3, dropout=0.5)
    x = np.random.default_rng(1).normal(size=(4, 8)).astype("float32")
    out = np.asarray(head(x, training=False))
    expected = x @ head.logits_dense.kernel.numpy() + head.logits_dense.bias.numpy()
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_float32_logits_under_bfloat16():
    x = np.ones((2, 4), "float32")
    check_mixed_precision(ClassificationHead, dict(num_classes=2), x, "mixed_bfloat16", (0,))
