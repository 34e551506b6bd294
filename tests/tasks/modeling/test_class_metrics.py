"""The binary metrics against brute force over random labels and predictions."""

import math

import numpy as np
import pytest

from nlpzoo.tasks.modeling.class_metrics import BinaryMCC, classification_metrics


def _mcc_by_hand(labels, predicted):
    tp = sum(1 for y, p in zip(labels, predicted) if y == 1 and p == 1)
    tn = sum(1 for y, p in zip(labels, predicted) if y == 0 and p == 0)
    fp = sum(1 for y, p in zip(labels, predicted) if y == 0 and p == 1)
    fn = sum(1 for y, p in zip(labels, predicted) if y == 1 and p == 0)
    denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return 0.0 if denominator == 0 else (tp * tn - fp * fn) / math.sqrt(denominator)


@pytest.mark.parametrize("seed", range(5))
def test_mcc_over_batches_equals_the_formula_on_all_examples(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 50)
    logits = rng.normal(size=(50, 2)).astype("float32")
    metric = BinaryMCC()
    for start in range(0, 50, 16):  # batches of 16, 16, 16 and 2
        metric.update_state(labels[start:start + 16], logits[start:start + 16])
    assert float(metric.result()) == pytest.approx(
        _mcc_by_hand(labels, logits.argmax(-1)), abs=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_mcc_is_one_when_perfect_minus_one_when_inverted_zero_for_one_class():
    labels = np.array([0, 1, 1, 0])
    right = np.eye(2, dtype="float32")[labels]
    for predicted, expected in ((right, 1.0), (right[:, ::-1], -1.0),
                                (np.tile([[0.0, 1.0]], (4, 1)), 0.0)):  # always "1"
        metric = BinaryMCC()
        metric.update_state(labels, predicted)
        assert float(metric.result()) == pytest.approx(expected, abs=1e-6)


def test_sample_weights_count_examples_as_often_as_their_weight():
    labels, logits = np.array([1, 0, 1]), np.array([[0, 1], [0, 1], [1, 0]], "float32")
    weighted = BinaryMCC()
    weighted.update_state(labels, logits, sample_weight=np.array([2.0, 1.0, 0.0]))
    assert float(weighted.result()) == pytest.approx(_mcc_by_hand([1, 1, 0], [1, 1, 1]))


def test_binary_tasks_report_mcc_and_others_do_not():
    assert [m.name for m in classification_metrics(2)] == ["accuracy", "f1", "mcc"]
    assert [m.name for m in classification_metrics(6)] == ["accuracy"]


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_smoothed_cross_entropy_equals_keras_categorical_one_on_one_hot_labels(epsilon):
    import keras
    from nlpzoo.tasks.modeling.class_metrics import (ClassificationCrossentropy,
                                                     classification_loss)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 16)
    logits = rng.normal(size=(16, 4)).astype("float32")
    reference = keras.losses.CategoricalCrossentropy(from_logits=True,
                                                     label_smoothing=epsilon)
    expected = float(reference(np.eye(4, dtype="float32")[labels], logits))
    ours = ClassificationCrossentropy(epsilon)
    assert float(ours(labels, logits)) == pytest.approx(expected, rel=1e-6)
    assert float(classification_loss(epsilon)(labels, logits)) == pytest.approx(expected,
                                                                                  rel=1e-6)
    # by hand: -(1 - ε + ε/K)·log p_y - Σ_{k≠y} ε/K·log p_k, averaged
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = np.full((16, 4), epsilon / 4) + (1 - epsilon) * np.eye(4)[labels]
    assert float(ours(labels, logits)) == pytest.approx(-(targets * log_p).sum(-1).mean(),
                                                        rel=1e-5)
    copy = ClassificationCrossentropy.from_config(ours.get_config())
    assert copy.label_smoothing == epsilon


def test_the_label_smoothing_flag_reaches_the_task_loss():
    from absl import flags
    from nlpzoo.tasks.classification.task import ClassificationTask
    values = flags.FlagValues()
    ClassificationTask.define_flags(values)
    values(["train", "--label_smoothing=0.2"])
    options, _ = ClassificationTask.options_from_flags(values)
    task = ClassificationTask(**options)
    assert task.loss().label_smoothing == 0.2
    assert task.ensemble_conflict(ClassificationTask()) is None  # training-only option
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        type(task.loss())(1.5)


def test_class_weights_weigh_each_example_as_keras_sample_weights_do():
    import keras
    from nlpzoo.tasks.modeling.class_metrics import ClassificationCrossentropy
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 20)
    logits = rng.normal(size=(20, 3)).astype("float32")
    weights = [0.5, 2.0, 1.0]
    for epsilon in (0.0, 0.1):
        reference = keras.losses.CategoricalCrossentropy(from_logits=True,
                                                         label_smoothing=epsilon)
        expected = float(reference(np.eye(3, dtype="float32")[labels], logits,
                                   sample_weight=np.array(weights)[labels]))
        ours = ClassificationCrossentropy(epsilon, class_weights=weights)
        assert float(ours(labels, logits)) == pytest.approx(expected, rel=1e-6)


def test_balanced_class_weights_and_the_flag():
    from absl import flags
    from nlpzoo.tasks.classification.task import ClassificationTask
    from nlpzoo.tasks.modeling.class_metrics import balanced_class_weights
    from nlpzoo.tasks.text.text_readers import ClassificationExample
    assert balanced_class_weights(["x", "y", "y", "y", "z", "z"], ["x", "y", "z"]) == [
        2.0, 0.6667, 1.0]  # 6 / (3·1), 6 / (3·3), 6 / (3·2)
    with pytest.raises(ValueError, match="none of z"):
        balanced_class_weights(["x", "y"], ["x", "y", "z"])
    examples = [ClassificationExample(text=f"t{i}", label=label)
                for i, label in enumerate("AAAB")]
    values = flags.FlagValues()
    ClassificationTask.define_flags(values)
    values(["train", "--class_weights=balanced"])
    unadapted = ClassificationTask(**ClassificationTask.options_from_flags(values)[0])
    with pytest.raises(ValueError, match="call task.adapt"):  # never silently unweighted
        unadapted.loss()
    task = unadapted.adapt(examples)
    assert task.options.class_weights == [0.6667, 2.0]
    assert task.loss().class_weights == [0.6667, 2.0]
    with pytest.raises(ValueError, match="class_weights has 3 weights for the 2 labels"):
        ClassificationTask(class_weights=[1.0, 2.0, 3.0]).adapt(examples)
    values(["train", "--class_weights=1,x"])
    with pytest.raises(ValueError, match="expected 'balanced' or comma-separated numbers"):
        ClassificationTask.options_from_flags(values)
