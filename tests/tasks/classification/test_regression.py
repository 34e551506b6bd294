"""The classifier's regression objective (tasks/classification/regression.py) through its task:
numeric labels, the one-unit head, whole-set correlations, predictions, saving, refusals."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from nlpzoo.tasks.classification.predictions import predicted_scores
from nlpzoo.tasks.classification.regression import evaluation_metrics, regression_targets
from nlpzoo.tasks.classification.task import ClassificationTask
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.modeling.serving import export_saved_model
from nlpzoo.tasks.registry import get_task, get_task_class, task_from_metadata, task_names
from nlpzoo.tasks.text.text_readers import ClassificationExample
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS
from nlpzoo.zoo import build_task_model
from tests.helpers.task_checks import run_task_test

WORDS = "a b c d e f g h".split()
VOCAB = list(RESERVED_TOKENS) + WORDS
TINY = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0)
REGRESSION = ClassificationTask(objective="regression")


def _regressor(**overrides):
    return build_task_model(REGRESSION, "bert_tiny", vocabulary=VOCAB, max_seq_length=16,
                            jit_compile=False, **{**TINY, **overrides})


def _texts(count, seed=0):
    """Texts of 2-8 words; the target, 0-5 as STS-B's, is 5 × the share of "a" in them
    (what a mean of the token vectors can learn)."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, rng.integers(2, 9))) for _ in range(count)]
    return texts, [5 * text.split().count("a") / len(text.split()) for text in texts]


def _examples(texts, targets):
    return [ClassificationExample(text, str(target), source="toy", line=index + 1)
            for index, (text, target) in enumerate(zip(texts, targets))]


def _ranks(values):
    """Average ranks by counting (ties share the mean of their positions)."""
    values = np.asarray(values)
    return np.array([1 + (values < v).sum() + ((values == v).sum() - 1) / 2 for v in values])


def _pearson(x, y):
    x, y = np.asarray(x) - np.mean(x), np.asarray(y) - np.mean(y)
    return (x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum())


# --- labels -------------------------------------------------------------------------------


def test_labels_are_read_as_numbers_from_every_format(tmp_path):
    tsv = tmp_path / "sts.tsv"
    tsv.write_text("text\ttext_pair\tlabel\nA man plays.\tA man is playing.\t4.75\n"
                   "A cat.\tA dog.\t 1\n", encoding="utf-8")
    jsonl = tmp_path / "sts.jsonl"
    jsonl.write_text('{"text": "x y", "label": 3}\n{"text": "y z", "label": -0.5}\n')
    assert regression_targets(REGRESSION.read(str(tsv))).tolist() == [4.75, 1.0]
    assert REGRESSION.read(str(tsv))[0].text_pair == "A man is playing."
    assert regression_targets(REGRESSION.read(str(jsonl))).tolist() == [3.0, -0.5]
    assert REGRESSION.label_names(REGRESSION.read(str(jsonl))) == []


@pytest.mark.parametrize("label", ["high", "nan", "inf", "1,5"])
def test_a_label_that_is_not_a_number_names_its_file_and_line(tmp_path, label):
    path = tmp_path / "sts.tsv"
    path.write_text(f"text\tlabel\nfine\t2.0\nbad one\t{label}\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=rf"sts\.tsv:3: a regression label must be a "
                                              rf"number, found '{label}'$"):
        REGRESSION.read(str(path))
    assert len(ClassificationTask().read(str(path))) == 2  # class labels: any text


# --- the maths of the evaluation ----------------------------------------------------------


class TokenIdSum(keras.Model):
    """A stand-in regressor whose score is known exactly: the sum of the token ids of
    `[CLS] text [SEP]` (padding masked), so that padding and batching cannot change it."""

    def call(self, features):
        ids = keras.ops.cast(features["token_ids"] * features["padding_mask"], "float32")
        return keras.ops.sum(ids, axis=1, keepdims=True)


def test_evaluation_correlates_the_whole_set_across_uneven_batches():
    texts, targets = _texts(11, seed=3)
    texts[10] = " ".join(reversed(texts[0].split()))  # the same ids: a tie in the scores
    targets = np.round(np.array(targets) + np.arange(11) % 3 * 0.5, 1)  # ties in the targets
    examples = _examples(texts, targets)
    preprocessor = REGRESSION.make_preprocessor(VOCAB, max_seq_length=16)
    model = TokenIdSum()
    model.compile(loss=REGRESSION.loss(), metrics=REGRESSION.metrics(model))
    # The reference, from the texts alone: Σ ids of [CLS] text [SEP], correlated by hand.
    scores = np.array([VOCAB.index("[CLS]") + VOCAB.index("[SEP]")
                       + sum(VOCAB.index(word) for word in text.split()) for text in texts])
    assert len(set(scores)) < len(scores)  # ties in the scores too
    expected = {"mse": np.mean((scores - targets) ** 2), "pearson": _pearson(scores, targets),
                "spearman": _pearson(_ranks(scores), _ranks(targets)), "examples": 11}
    for batch_size in (3, 4, 11):
        dataset = REGRESSION.make_dataset(examples, preprocessor, [], batch_size=batch_size)
        found = REGRESSION.evaluate(model, dataset, examples, [])
        assert found == pytest.approx(expected, rel=1e-6), batch_size
        # Keras's own per-batch mse (a mean of squares) is exact over uneven batches too.
        keras_metrics = model.evaluate(dataset, return_dict=True, verbose=0)
        assert keras_metrics["mse"] == pytest.approx(expected["mse"], rel=1e-6)
        assert keras_metrics["loss"] == pytest.approx(expected["mse"], rel=1e-6)
    # A mean of per-batch correlations would not be the correlation of the set.
    per_batch = np.mean([_pearson(_ranks(scores[i:i + 4]), _ranks(targets[i:i + 4]))
                         for i in (0, 4)])
    assert abs(per_batch - expected["spearman"]) > 1e-3


def test_evaluation_metrics_by_hand():
    # Scores 0, 1, 2, 3 against targets 0, 2, 2, 6: mse (0 + 1 + 0 + 9) / 4 = 2.5;
    # Pearson: centred -1.5, -0.5, 0.5, 1.5 and -2.5, -0.5, -0.5, 3.5 → 9 / √(5 · 19);
    # Spearman: target ranks 1, 2.5, 2.5, 4 → 4.5 / √(5 · 4.5).
    metrics = evaluation_metrics([0.0, 1.0, 2.0, 3.0], [0.0, 2.0, 2.0, 6.0])
    assert metrics == pytest.approx({"mse": 2.5, "pearson": 9 / np.sqrt(95),
                                     "spearman": 4.5 / np.sqrt(22.5)}, abs=1e-12)


# --- training, predicting, saving ---------------------------------------------------------


def test_regression_classifier_trains_predicts_and_round_trips(tmp_path):
    model = _regressor(learning_rate=1e-2, pooling="mean")
    assert model.output_shape == (None, 1) and model.label_names == []
    assert model.task_metadata["task_options"]["objective"] == "regression"
    texts, targets = _texts(48)
    losses = model.fit(texts, targets, epochs=10, batch_size=8, verbose=0,
                       shuffle=False).history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert losses[-1] < 0.5 * np.var(targets), losses  # better than predicting the mean

    records = model.predict(texts[:3])
    assert [set(record) for record in records] == [{"score"}] * 3
    scores = [record["score"] for record in records]
    direct = keras.ops.convert_to_numpy(model(model.preprocessor(tf.constant(texts[:3]))))
    np.testing.assert_allclose(scores, direct[:, 0], rtol=1e-5, atol=1e-5)

    output = tmp_path / "predictions.jsonl"
    REGRESSION.write_predictions(model, model.preprocessor, _examples(texts[:3], [0] * 3), [],
                                 str(output))
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert [set(record) for record in written] == [{"text", "score"}] * 3
    assert [record["score"] for record in written] == pytest.approx(scores, abs=1e-5)

    served = REGRESSION.serving_outputs(model, model.preprocessor, [], tf.constant(texts[:3]))
    assert set(served) == {"score"} and served["score"].dtype == tf.float32
    np.testing.assert_allclose(served["score"].numpy(), scores, rtol=1e-5, atol=1e-5)

    exported = str(tmp_path / "saved_model")
    export_saved_model(REGRESSION, model, model.preprocessor, [], exported)
    serve = tf.saved_model.load(exported).signatures["serving_default"]
    np.testing.assert_allclose(serve(text=tf.constant(texts[:3]))["score"].numpy(), scores,
                               rtol=1e-5, atol=1e-5)

    path = str(tmp_path / "regressor.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)  # no custom_objects
    assert loaded.task.options.objective == "regression"
    assert [r["score"] for r in loaded.predict(texts[:3])] == pytest.approx(scores, abs=1e-5)
    restored = task_from_metadata(loaded.task_metadata)
    assert restored.options == REGRESSION.options and restored.regression
    assert ClassificationTask.from_metadata({"task_options": {}}).options.objective == (
        "classification")  # models saved before the option


# slow (30 s of XLA on CPU): the same Classifier's contract runs in the default suite
# (test_classification_model.test_pair_classifier_task_contract)
@pytest.mark.slow
def test_task_contract_under_xla_and_mixed_precision():
    """XLA training, .keras round trip, and a float32 score under mixed_bfloat16."""
    rng = np.random.default_rng(0)
    features = {"token_ids": rng.integers(5, 50, (8, 16)).astype("int32"),
                "segment_ids": np.zeros((8, 16), "int32"),
                "padding_mask": np.ones((8, 16), "int32")}
    run_task_test(
        lambda jit_compile: build_task_model(REGRESSION, "bert_tiny", vocabulary_size=50,
                                             num_layers=1, jit_compile=jit_compile),
        features, rng.normal(size=8).astype("float32"), expected_output_shape=(8, 1))


def test_an_ensemble_averages_the_scores():
    members = [_regressor(), _regressor()]
    texts, targets = _texts(5, seed=1)
    examples = _examples(texts, targets)
    ensemble = REGRESSION.ensemble(members)
    preprocessor = members[0].preprocessor
    expected = np.mean([predicted_scores(m, preprocessor, examples, 8) for m in members], 0)
    np.testing.assert_allclose(predicted_scores(ensemble, preprocessor, examples, 8), expected,
                               rtol=1e-5, atol=1e-6)
    dataset = REGRESSION.make_dataset(examples, preprocessor, [], batch_size=2)
    assert REGRESSION.evaluate(ensemble, dataset, examples, [])["mse"] == pytest.approx(
        np.mean((expected - np.array(targets)) ** 2), rel=1e-5)
    assert REGRESSION.ensemble_conflict(ClassificationTask()) == (
        "objective 'regression' here, 'classification' there")


# --- the task's door: options, flags, refusals --------------------------------------------


def test_options_monitor_and_logged_metrics():
    assert REGRESSION.monitor(num_classes=0) == ("val_spearman", "max")
    assert REGRESSION.logged_metrics == ("spearman", "pearson")
    assert ClassificationTask().logged_metrics == ()
    assert REGRESSION.model_head_options([]) == {} and REGRESSION.default_labels(1) == []
    assert isinstance(REGRESSION.loss(), keras.losses.MeanSquaredError)
    assert get_task("classification", objective="regression").options == REGRESSION.options


def _flag_values(*argv):
    values = flags.FlagValues()
    for name in task_names():  # every task's flags in one set, as tools/train.py has them
        get_task_class(name).define_flags(values)
    values(["train", *argv])
    return values


def test_the_objective_flag_is_shared_with_the_bi_encoder():
    values = _flag_values()
    assert "objective" not in ClassificationTask.options_from_flags(values)[0]
    assert get_task_class("bi_encoder").options_from_flags(values)[0]["objective"] == "softmax"
    values = _flag_values("--objective=regression")
    options, head = ClassificationTask.options_from_flags(values)
    assert ClassificationTask(**options).regression and head == {"pooling": "pooler"}
    with pytest.raises(ValueError, match="objective must be one of softmax, cosine"):
        get_task_class("bi_encoder")(
            **get_task_class("bi_encoder").options_from_flags(values)[0])
    values = _flag_values("--objective=cosine")
    with pytest.raises(ValueError, match="objective must be one of classification, regression, "
                                         "got 'cosine'"):
        ClassificationTask(**ClassificationTask.options_from_flags(values)[0])


@pytest.mark.parametrize("argv, message", [
    (["--label_smoothing=0.1"], "label_smoothing=0.1 smooths class labels; the regression "
                                "objective has none"),
    (["--class_weights=balanced"], "class_weights=balanced weigh classes; the regression "
                                   "objective has none"),
    (["--class_weights=1,2"], r"class_weights=\[1.0, 2.0\] weigh classes"),
])
def test_class_only_options_are_refused_in_one_line(argv, message):
    options, _ = ClassificationTask.options_from_flags(
        _flag_values("--objective=regression", *argv))
    with pytest.raises(ValueError, match=message) as error:
        ClassificationTask(**options)
    assert "\n" not in str(error.value)


def test_a_head_of_classes_is_refused():
    with pytest.raises(ValueError, match="num_classes must be 1 or left out, got 3"):
        _regressor(num_classes=3)
    with pytest.raises(ValueError, match="one score per example, not labels; got 2 labels"):
        _regressor(labels=["low", "high"])
    from nlpzoo.tasks.distillation.families import family_of
    with pytest.raises(ValueError, match="not the regression objective"):
        family_of(REGRESSION)
