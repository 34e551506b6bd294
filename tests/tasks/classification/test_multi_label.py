"""The classifier's multi-label objective (tasks/classification/multi_label.py) through its task:
label lists from JSONL and CSV/TSV, multi-hot targets, whole-set F1 at tuned thresholds,
training, predictions, serving, saving, ensembles and refusals."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from nlpzoo.tasks.classification.multi_label import multi_hot_targets, multi_label_metrics
from nlpzoo.tasks.classification.predictions import label_probabilities
from nlpzoo.tasks.classification.task import ClassificationTask
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.modeling.serving import export_saved_model
from nlpzoo.tasks.registry import get_task_class, task_from_metadata, task_names
from nlpzoo.tasks.text.text_readers import ClassificationExample
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS
from nlpzoo.zoo import build_task_model
from nlpzoo.zoo.runs import directory as md

WORDS = "a b c d e f g h".split()
VOCAB = list(RESERVED_TOKENS) + WORDS
TINY = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0)
MULTI = ClassificationTask(multi_label=True)
LABELS = ["has_a", "has_b", "has_c"]


def _multi_labeller(labels=LABELS, **overrides):
    return build_task_model(MULTI, "bert_tiny", vocabulary=VOCAB, max_seq_length=16,
                            labels=labels, jit_compile=False, **{**TINY, **overrides})


def _texts(count, seed=0):
    """Texts of 2-6 words; an example has `has_w` for each of a, b, c that it contains
    (none, one or several: about 40% of the (example, label) pairs are positive)."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, rng.integers(2, 7))) for _ in range(count)]
    return texts, [[f"has_{w}" for w in "abc" if w in text.split()] for text in texts]


def _examples(texts, label_sets):
    return [ClassificationExample(text, tuple(names), source="toy", line=index + 1)
            for index, (text, names) in enumerate(zip(texts, label_sets))]


# --- reading label lists -------------------------------------------------------------------


def test_jsonl_lists_and_separated_cells_are_read_as_label_sets(tmp_path):
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text('{"text": "goals in the rain", "labels": ["weather", "sports"]}\n'
                     '{"text": "hello", "labels": []}\n'
                     '{"text": "vote", "labels": ["politics", "politics"]}\n')
    examples = MULTI.read(str(jsonl))
    assert [e.label for e in examples] == [("weather", "sports"), (), ("politics",)]
    assert MULTI.label_names(examples) == ["politics", "sports", "weather"]  # sorted union

    csv = tmp_path / "train.csv"
    csv.write_text('text,labels\n"goals, rain",weather|sports\nhello,\nvote, politics |\n')
    assert [e.label for e in MULTI.read(str(csv))] == [("weather", "sports"), (),
                                                      ("politics",)]
    tsv = tmp_path / "train.tsv"
    tsv.write_text("id\tsentence\ttopics\n1\tgoals in the rain\tweather;sports\n")
    task = ClassificationTask(multi_label=True, label_separator=";")
    from nlpzoo.tasks.text.columns import Columns
    read = task.read(str(tsv), columns=Columns(text="sentence", label="topics"))
    assert [(e.text, e.label, e.line) for e in read] == [("goals in the rain",
                                                          ("weather", "sports"), 2)]


def test_text_pairs_are_read_and_make_a_pair_classifier(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"text": "a b", "text_pair": "c", "labels": ["x"]}\n'
                    '{"text": "d", "text_pair": "e f", "labels": ["x", "y"]}\n')
    examples = MULTI.read(str(path))
    task = MULTI.adapt(examples)
    assert task.options.paired_input and task.multi_label
    model = build_task_model(task, "bert_tiny", vocabulary=VOCAB, max_seq_length=16,
                             labels=task.label_names(examples), jit_compile=False, **TINY)
    records = model.predict([("a b", "c"), ("d", "e f")])
    assert [sorted(record["scores"]) for record in records] == [["x", "y"]] * 2


@pytest.mark.parametrize("line, message", [
    ('{"text": "a", "labels": "sports"}', r"bad\.jsonl:2: 'labels' must be a list of label "
                                          r"names \(multi-label\), found 'sports'$"),
    ('{"text": "a", "labels": ["sports", null]}', r"bad\.jsonl:2: 'labels' must hold label "
                                                  r"names \(non-empty strings\), found None$"),
    ('{"text": "a", "label": ["sports"]}', r"bad\.jsonl:2: expected an object with 'text' "
                                           r"and 'labels' \(found 'text', 'label'\)$"),
])
def test_a_bad_jsonl_label_list_names_its_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine", "labels": ["sports"]}\n' + line + "\n")
    with pytest.raises(DataFormatError, match=message):
        MULTI.read(str(path))


def test_files_with_one_label_per_example_are_refused(tmp_path):
    path = tmp_path / "train.label"
    path.write_text("HUM:ind Who wrote Hamlet ?\n")
    with pytest.raises(DataFormatError, match=r"train\.label: not a multi-label file"):
        MULTI.read(str(path))
    with pytest.raises(DataFormatError, match="multi-label examples are read from csv, tsv, "
                                              "jsonl files, not trec"):
        MULTI.read(str(path), data_format="trec")


def test_an_unknown_label_at_evaluation_names_its_file_and_line(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_text('{"text": "a", "labels": ["has_a"]}\n{"text": "b c", "labels": []}\n'
                    '{"text": "d", "labels": ["has_b", "has_z"]}\n')
    examples = MULTI.read(str(path))
    preprocessor = MULTI.make_preprocessor(VOCAB, max_seq_length=16)
    with pytest.raises(ValueError, match=r"dev\.jsonl:3: label 'has_z' was not seen in "
                                         r"training \(known labels: has_a, has_b, has_c\)$"):
        MULTI.make_dataset(examples, preprocessor, LABELS)


def test_training_data_without_any_label_is_refused():
    examples = _examples(["a", "b"], [[], []])
    for refuse in (MULTI.label_names, MULTI.adapt):  # adapt: tools/train.py's one line
        with pytest.raises(ValueError, match="no example has a label"):
            refuse(examples)


# --- the maths of evaluation and threshold tuning, with a model whose logits are known -----


class WordCountLogits(keras.Model):
    """A stand-in multi-label model with known logits: label j's is 2·count(word j) −
    count(word j + 4) − 0.75 over the words a b c d | e f g h (padding masked)."""

    def call(self, features):
        ids = features["token_ids"] * features["padding_mask"]
        counts = [keras.ops.sum(keras.ops.cast(ids == VOCAB.index(word), "float32"), axis=1)
                  for word in WORDS]
        return keras.ops.stack([2 * counts[j] - counts[j + 4] - 0.75 for j in range(4)], 1)


def _known_logits(texts):
    return np.array([[2 * text.split().count(WORDS[j]) - text.split().count(WORDS[j + 4])
                      - 0.75 for j in range(4)] for text in texts])


def _noisy_case(count=29, seed=5):
    """Texts, their gold label sets (a, b, c present, 20% of decisions flipped; `z` never
    present) and the four labels, `z` last: the stand-in predicts it when `d` is there."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, rng.integers(2, 7))) for _ in range(count)]
    label_sets = []
    for text in texts:
        present = [w in text.split() for w in "abc"]
        flipped = [p != (rng.random() < 0.2) for p in present]
        label_sets.append([name for name, yes in zip("abc", flipped) if yes])
    return texts, label_sets, ["a", "b", "c", "z"]


def _f1_by_counting(gold, predicted, labels):
    """Micro and macro F1, counted decision by decision over (example, label)."""
    def f1(names):
        tp = sum(1 for g, p in zip(gold, predicted) for n in names if n in g and n in p)
        fp = sum(1 for g, p in zip(gold, predicted) for n in names if n not in g and n in p)
        fn = sum(1 for g, p in zip(gold, predicted) for n in names if n in g and n not in p)
        return 0.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)
    return f1(labels), float(np.mean([f1([name]) for name in labels]))


def test_evaluation_and_tuning_against_brute_force_over_uneven_batches():
    texts, label_sets, labels = _noisy_case()
    examples = _examples(texts, label_sets)
    preprocessor = MULTI.make_preprocessor(VOCAB, max_seq_length=16)
    model = WordCountLogits()
    model.compile(loss=MULTI.loss(), metrics=multi_label_metrics(len(labels)))
    probabilities = 1 / (1 + np.exp(-_known_logits(texts)))
    at_half = [[n for n, p in zip(labels, row) if p >= 0.5] for row in probabilities]
    micro, macro = _f1_by_counting(label_sets, at_half, labels)
    assert 0 < macro < micro < 1  # errors of both kinds; z (never present) lowers macro

    # Brute force: each label's best F1 over a fine grid of thresholds.
    tuned = {name: max(_f1_by_counting(label_sets, [[name] if p >= t else []
                                                    for p in probabilities[:, j]], [name])[0]
                       for t in np.linspace(0, 1, 1001))
             for j, name in enumerate(labels)}
    for batch_size in (4, 7, 29):
        dataset = MULTI.make_dataset(examples, preprocessor, labels, batch_size=batch_size)
        found = MULTI.evaluate(model, dataset, examples, labels)
        assert found["micro_f1"] == pytest.approx(micro, abs=1e-12)
        assert found["macro_f1"] == pytest.approx(macro, abs=1e-12)
        assert found["examples"] == 29
        # Keras's batch-by-batch metrics at 0.5 give the same numbers, and the same loss.
        keras_metrics = model.evaluate(dataset, return_dict=True, verbose=0)
        assert keras_metrics["micro_f1"] == pytest.approx(micro, abs=1e-6)
        assert keras_metrics["macro_f1"] == pytest.approx(macro, abs=1e-6)
        assert keras_metrics["loss"] == pytest.approx(found["loss"], rel=1e-5)

        changes = MULTI.tune_decoding(model, dataset, examples, labels)
        thresholds = changes["thresholds"]
        assert thresholds[3] == 0.5  # z: never present, nothing to gain
        for j, name in enumerate(labels):
            predicted = [[name] if p >= thresholds[j] else [] for p in probabilities[:, j]]
            assert _f1_by_counting(label_sets, predicted, [name])[0] == pytest.approx(
                tuned[name])
        after = MULTI.with_options(**changes).evaluate(model, dataset, examples, labels)
        tuned_sets = [[n for n, p, t in zip(labels, row, thresholds) if p >= t]
                      for row in probabilities]
        assert (after["micro_f1"], after["macro_f1"]) == pytest.approx(
            _f1_by_counting(label_sets, tuned_sets, labels), abs=1e-12)
        assert after["macro_f1"] >= macro


# --- training, predicting, saving, serving ------------------------------------------------


def test_a_multi_label_classifier_learns_predicts_serves_and_round_trips(tmp_path):
    model = _multi_labeller(learning_rate=1e-2, pooling="mean")
    assert model.output_shape == (None, 3) and model.label_names == LABELS
    assert model.task_metadata["task_options"]["multi_label"] is True
    texts, label_sets = _texts(64)
    model.fit(texts, label_sets, epochs=12, batch_size=8, verbose=0)

    dev_texts, dev_sets = _texts(40, seed=1)
    dev = _examples(dev_texts, dev_sets)
    dataset = MULTI.make_dataset(dev, model.preprocessor, LABELS, batch_size=16)
    changes = MULTI.tune_decoding(model, dataset, dev, LABELS)
    metrics = MULTI.with_options(**changes).evaluate(model, dataset, dev, LABELS)
    # Chance: predicting every label for every text (the best constant prediction).
    positives = multi_hot_targets(dev, LABELS).mean()
    chance = 2 * positives / (1 + positives)
    assert metrics["micro_f1"] > max(0.85, chance + 0.2), (metrics, chance)

    path = str(tmp_path / "multi_label.keras")
    md.update_task_options(changes, "dev", model, model_path=path)  # as tools/train.py does
    loaded = keras.saving.load_model(path)  # no custom_objects
    task = loaded.task
    assert task.multi_label and task.options.thresholds == pytest.approx(changes["thresholds"])
    assert task_from_metadata(loaded.task_metadata).options == task.options
    thresholds = np.array(changes["thresholds"])

    records = loaded.predict(dev_texts[:6])
    probabilities = label_probabilities(loaded, loaded.preprocessor, dev[:6], 4)
    direct = keras.ops.convert_to_numpy(loaded(loaded.preprocessor(tf.constant(dev_texts[:6]))))
    np.testing.assert_allclose(probabilities, 1 / (1 + np.exp(-direct)), rtol=1e-5, atol=1e-6)
    for record, row in zip(records, probabilities):
        assert set(record) == {"labels", "scores"}
        assert record["labels"] == [n for n, p, t in zip(LABELS, row, thresholds) if p >= t]
        assert list(record["scores"].values()) == pytest.approx(row.tolist(), abs=1e-6)

    output = tmp_path / "predictions.jsonl"
    task.write_predictions(loaded, loaded.preprocessor, dev[:6], LABELS, str(output))
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert [set(r) for r in written] == [{"text", "labels", "probabilities"}] * 6
    assert [r["labels"] for r in written] == [r["labels"] for r in records]

    served = task.serving_outputs(loaded, loaded.preprocessor, LABELS,
                                  tf.constant(dev_texts[:6]))
    assert set(served) == {"probabilities", "labels", "num_labels"}
    assert served["probabilities"].dtype == tf.float32
    np.testing.assert_allclose(served["probabilities"].numpy(), probabilities, atol=1e-5)
    exported = str(tmp_path / "saved_model")
    export_saved_model(task, loaded, loaded.preprocessor, LABELS, exported)
    serve = tf.saved_model.load(exported).signatures["serving_default"]
    outputs = serve(text=tf.constant(dev_texts[:6]))
    for row, count, record in zip(outputs["labels"].numpy(), outputs["num_labels"].numpy(),
                                  records):
        assert [name.decode() for name in row[:count]] == record["labels"]
        assert not any(row[count:])  # "" as padding
    np.testing.assert_allclose(outputs["probabilities"].numpy(), probabilities, atol=1e-5)


def test_tensorboard_examples_show_gold_and_predicted_label_sets():
    texts, label_sets, labels = _noisy_case(count=3)
    examples = _examples(texts, label_sets)
    preprocessor = MULTI.make_preprocessor(VOCAB, max_seq_length=16)
    dataset = MULTI.make_dataset(examples, preprocessor, labels, batch_size=2)
    shown = MULTI.describe_predictions(WordCountLogits(), dataset, examples, labels, count=2)
    probabilities = 1 / (1 + np.exp(-_known_logits(texts)))
    for line, text, gold, row in zip(shown, texts, label_sets, probabilities):
        predicted = " ".join(n for n, p in zip(labels, row) if p >= 0.5) or "-"
        gold = " ".join(n for n in labels if n in gold) or "-"
        assert line.startswith(text) and f"gold **{gold}** / predicted **{predicted}**" in line
    assert len(shown) == 2


# slow (30 s of XLA on CPU): the same Classifier's contract runs in the default suite
# (test_classification_model.test_pair_classifier_task_contract)
@pytest.mark.slow
def test_task_contract_under_xla_and_mixed_precision():
    """XLA training with the F1 metrics, .keras round trip, float32 logits under
    mixed_bfloat16."""
    from tests.helpers.task_checks import run_task_test
    rng = np.random.default_rng(0)
    features = {"token_ids": rng.integers(5, 50, (8, 16)).astype("int32"),
                "segment_ids": np.zeros((8, 16), "int32"),
                "padding_mask": np.ones((8, 16), "int32")}
    run_task_test(
        lambda jit_compile: build_task_model(MULTI, "bert_tiny", vocabulary_size=50,
                                             num_layers=1, labels=LABELS,
                                             jit_compile=jit_compile),
        features, (rng.random((8, 3)) < 0.4).astype("float32"), expected_output_shape=(8, 3))


def test_an_ensemble_averages_each_labels_probability():
    members = [_multi_labeller(), _multi_labeller()]
    texts, label_sets = _texts(5, seed=2)
    examples = _examples(texts, label_sets)
    preprocessor = members[0].preprocessor
    expected = np.mean([label_probabilities(m, preprocessor, examples, 8) for m in members], 0)
    ensemble = MULTI.ensemble(members)
    np.testing.assert_allclose(label_probabilities(ensemble, preprocessor, examples, 8),
                               expected, rtol=1e-5, atol=1e-6)
    dataset = MULTI.make_dataset(examples, preprocessor, LABELS, batch_size=2)
    assert 0 <= MULTI.evaluate(ensemble, dataset, examples, LABELS)["micro_f1"] <= 1
    tuned = MULTI.with_options(thresholds=[0.1, 0.2, 0.3])
    assert MULTI.ensemble_conflict(tuned) is None  # decoding: the first model's
    assert MULTI.ensemble_conflict(ClassificationTask()) == (
        "multi_label True here, False there")


# --- the task's door: options, flags, refusals --------------------------------------------


def _flag_values(*argv):
    values = flags.FlagValues()
    for name in task_names():  # every task's flags in one set, as tools/train.py has them
        get_task_class(name).define_flags(values)
    values(["train", *argv])
    return values


def test_flags_options_monitor_and_loss():
    options, head = ClassificationTask.options_from_flags(
        _flag_values("--multi_label", "--label_separator=;", "--label_smoothing=0.1"))
    task = ClassificationTask(**options)
    assert (task.multi_label, task.options.label_separator, task.options.label_smoothing) == (
        True, ";", 0.1)
    assert task.monitor(num_classes=3) == ("val_micro_f1", "max")
    assert task.calibration_option == "thresholds"
    assert ClassificationTask().calibration_option is None
    assert isinstance(task.loss(), keras.losses.BinaryCrossentropy)
    assert ClassificationTask.options_from_flags(_flag_values())[0] == {}


@pytest.mark.parametrize("options, message", [
    (dict(objective="regression"), "multi_label predicts label sets; the regression objective "
                                   "predicts one score per example"),
    (dict(class_weights="balanced"), "class_weights=balanced weigh the classes of a "
                                     "single-label cross-entropy"),
    (dict(thresholds=[0.5, 1.5]), r"thresholds must be probabilities in \[0, 1\]"),
    (dict(label_separator=""), "label_separator must be a non-empty string"),
])
def test_options_that_do_not_apply_are_refused_in_one_line(options, message):
    with pytest.raises(ValueError, match=message) as error:
        ClassificationTask(multi_label=True, **options)
    assert "\n" not in str(error.value)


def test_multi_label_options_without_multi_label_are_refused():
    with pytest.raises(ValueError, match="add --multi_label"):
        ClassificationTask.options_from_flags(_flag_values("--label_separator=;"))
    with pytest.raises(ValueError, match="set multi_label=True"):
        ClassificationTask(thresholds=[0.5])
    with pytest.raises(ValueError, match="has no threshold to calibrate"):
        ClassificationTask().calibrate(None, None, [], [])
    from nlpzoo.tasks.distillation.families import family_of
    with pytest.raises(ValueError, match="not multi-label ones"):
        family_of(MULTI)


def test_raw_targets_are_lists_of_names_or_ids():
    examples = MULTI.raw_examples(["a", "b"], [["has_c", 0], []], LABELS)
    assert [e.label for e in examples] == [("has_c", "has_a"), ()]
    with pytest.raises(ValueError, match=r"y\[0\]: a multi-label target is a list"):
        MULTI.raw_examples(["a"], ["has_a"], LABELS)
