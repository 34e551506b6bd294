import numpy as np
import pytest

from nlpzoo.layers import ClassificationHead, SpanClassifier
from tests.helpers.layer_checks import check_mixed_precision, run_layer_test


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


def test_hidden_layers_options_layer_contract():
    x = np.random.default_rng(2).normal(size=(2, 5, 8)).astype("float32")
    run_layer_test(
        ClassificationHead,
        dict(num_classes=3, hidden_dim=6, num_hidden_layers=2, activation="gelu",
             input_dropout=False),
        x, expected_output_shape=(2, 5, 3), float32_outputs=(0,),
        run_mixed_precision_check=False,  # covered above
    )
    with pytest.raises(ValueError, match="num_hidden_layers"):
        ClassificationHead(num_classes=3, hidden_dim=6, num_hidden_layers=0)


def test_dropout_before_every_dense_layer_unless_input_dropout_is_off():
    x = np.ones((64, 16), "float32")
    with_input = ClassificationHead(num_classes=2, dropout=0.5)
    without = ClassificationHead(num_classes=2, dropout=0.5, input_dropout=False)
    for head in (with_input, without):
        head(x)
        head.logits_dense.set_weights([np.ones((16, 2), "float32"), np.zeros(2, "float32")])
    np.testing.assert_array_equal(np.asarray(without(x, training=True)),
                                  np.asarray(without(x, training=False)))
    assert not np.allclose(np.asarray(with_input(x, training=True)),
                           np.asarray(with_input(x, training=False)))


def test_span_classifier_is_a_classification_head_with_two_hidden_layers():
    x = np.random.default_rng(3).normal(size=(2, 4, 7)).astype("float32")
    span = SpanClassifier(num_classes=4, hidden_dim=5, dropout=0.2, activation="gelu")
    head = ClassificationHead(num_classes=4, hidden_dim=5, num_hidden_layers=2,
                              activation="gelu", dropout=0.2, input_dropout=False)
    span(x)
    head(x)
    head.set_weights(span.get_weights())
    np.testing.assert_array_equal(np.asarray(head(x)), np.asarray(span(x)))
    assert isinstance(span, ClassificationHead) and span.num_classes == 4
    # Its config keeps its own arguments only (older files saved `num_labels`: still read).
    assert set(span.get_config()) - {"name", "trainable", "dtype"} == {
        "num_classes", "hidden_dim", "dropout", "activation", "initializer_range"}
    assert [layer.name for layer in span.hidden_layers] == ["hidden_0", "hidden_1"]
    assert ClassificationHead(num_classes=2, hidden_dim=3).hidden_dense.name == "hidden"
