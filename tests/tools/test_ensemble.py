"""Ensembles (`Task.ensemble`, tasks/modeling/ensemble.py, tools/model_directory.load_ensemble):
one model is itself, probabilities are the mean of the members' (checked by hand in
NumPy), a CRF ensemble decodes the best path of the summed path scores (checked
against every path), and models that do not fit together are refused in one line."""

import itertools
import json
import os

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.registry import get_task
from tests.helpers.binaries import run_tools
from tests.helpers.paths import CONLL, TREC
from nlpzoo.zoo.runs import directory as md
from nlpzoo.tools.cli.errors import UserError

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(45)]
TAGS = ["O", "B-PER", "I-PER"]


def _encoder(seed):
    keras.utils.set_random_seed(seed)
    return Encoder(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=16,
                   intermediate_dim=32, max_sequence_length=32)


def _encoder_inputs(batch=8, length=10, seed=0):
    rng = np.random.default_rng(seed)
    return {"token_ids": rng.integers(5, 50, (batch, length)).astype("int32"),
            "segment_ids": np.zeros((batch, length), "int32"),
            "padding_mask": np.ones((batch, length), "int32")}


def _word_inputs(lengths, words=4):
    """Encoder inputs plus `word_starts` and a right-padded `word_mask` of `lengths`."""
    x = _encoder_inputs(len(lengths), words + 2)
    x["word_starts"] = np.tile(np.arange(1, words + 1), (len(lengths), 1)).astype("int32")
    x["word_mask"] = (np.arange(words)[None, :] < np.asarray(lengths)[:, None]).astype("int32")
    return x


def _softmax(logits):
    logits = np.asarray(logits, np.float64)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _classifiers(count, num_classes=3):
    task = get_task("classification")
    return task, [task.build_model(_encoder(seed), num_classes=num_classes)
                  for seed in range(count)]


def test_an_ensemble_of_one_model_is_that_model():
    for name in ("classification", "tagging", "span_ner"):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
        assert get_task(name).ensemble([model]) is model


def test_classification_ensemble_is_the_mean_of_the_class_probabilities():
    task, members = _classifiers(2)
    x = _encoder_inputs()
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    each = [_softmax(member.predict_on_batch(x)) for member in members]
    assert np.abs(each[0] - each[1]).max() > 1e-3  # two really different models
    mean = (each[0] + each[1]) / 2
    ensemble = task.ensemble(members)
    np.testing.assert_allclose(_softmax(ensemble.predict(x, verbose=0)), mean, atol=1e-6)
    # `evaluate` reads the mean probabilities: its cross-entropy and accuracy by hand.
    metrics = ensemble.evaluate(x, y, batch_size=4, return_dict=True, verbose=0)
    assert metrics["loss"] == pytest.approx(-np.log(mean[np.arange(8), y]).mean(), abs=1e-5)
    assert metrics["accuracy"] == pytest.approx(np.mean(mean.argmax(1) == y))
    # Two copies of one model: that model's probabilities.
    twice = task.ensemble([members[0], members[0]])
    np.testing.assert_allclose(_softmax(twice.predict(x, verbose=0)), each[0], atol=1e-6)


def _taggers(head, count=2):
    task = get_task("tagging", tag_scheme="IOB2")
    members = [task.build_model(_encoder(seed), labels=TAGS, head=head, tag_scheme="IOB2",
                                dropout=0.0) for seed in range(count)]
    if head == "crf":  # trained-looking CRF weights, different in each member
        rng = np.random.default_rng(7)
        for member in members:
            member.crf.set_weights([rng.normal(0, 2, w.shape).astype("float32")
                                    for w in member.crf.get_weights()])
    return task, members


def _best_path(emissions, weights, allowed, length):
    """The highest-scoring valid tag sequence of `length` words, over every sequence."""
    transitions, start, end = weights
    allowed, allowed_start, allowed_end = (np.asarray(a, bool) for a in allowed)
    best, best_score = None, -np.inf
    for path in itertools.product(range(len(start)), repeat=length):
        if not (allowed_start[path[0]] and allowed_end[path[-1]]
                and all(allowed[a, b] for a, b in zip(path, path[1:]))):
            continue
        score = start[path[0]] + end[path[-1]] + sum(emissions[t, k] for t, k in enumerate(path))
        score += sum(transitions[a, b] for a, b in zip(path, path[1:]))
        if score > best_score:
            best, best_score = list(path), score
    return best


def test_crf_ensemble_decodes_the_best_path_of_the_mean_scores():
    task, members = _taggers("crf")
    lengths = [4, 4, 3, 3, 2, 1, 4, 2]
    x = _word_inputs(lengths)
    emissions = [np.asarray(member(x, training=False)) for member in members]
    weights = [member.crf.get_weights() for member in members]
    crf = members[0].crf
    allowed = (crf.allowed, crf.allowed_start, crf.allowed_end)
    mean_emissions = np.mean(emissions, axis=0)
    mean_weights = [np.mean(w, axis=0) for w in zip(*weights)]
    tags = np.asarray(task.ensemble(members).predict_on_batch(x))
    expected = [_best_path(mean_emissions[b], mean_weights, allowed, n)
                for b, n in enumerate(lengths)]
    assert [row[:n].tolist() for row, n in zip(tags, lengths)] == expected
    assert all((row[n:] == 0).all() for row, n in zip(tags, lengths))
    # Averaging the emissions only (the first model's transitions) decodes otherwise here:
    # the test tells the two apart.
    first_only = [_best_path(mean_emissions[b], weights[0], allowed, n)
                  for b, n in enumerate(lengths)]
    assert first_only != expected


def test_softmax_tagger_ensemble_takes_the_arg_max_of_the_mean_probabilities():
    task, members = _taggers("softmax")
    lengths = [4, 3, 2, 1]
    x = _word_inputs(lengths)
    mean = np.mean([_softmax(member(x, training=False)) for member in members], axis=0)
    tags = np.asarray(task.ensemble(members).predict_on_batch(x))
    np.testing.assert_array_equal(tags, mean.argmax(-1) * x["word_mask"])


def test_span_ner_ensemble_predicts_the_mean_span_probabilities():
    task = get_task("span_ner", max_span_width=2)
    members = [task.build_model(_encoder(seed), num_classes=3, max_span_width=2,
                                span_hidden_dim=8, width_embedding_dim=4, dropout=0.0)
               for seed in range(2)]
    x = _word_inputs([4, 3, 2])
    mean = np.mean([member.predict_on_batch(x) for member in members], axis=0)
    np.testing.assert_allclose(task.ensemble(members).predict_on_batch(x), mean, atol=1e-6)


def test_different_heads_are_refused():
    task = get_task("tagging", tag_scheme="IOB2")
    members = [task.build_model(_encoder(0), labels=TAGS, head=head, tag_scheme="IOB2")
               for head in ("crf", "softmax")]
    with pytest.raises(ValueError, match=r"different heads \(crf, softmax\)"):
        task.ensemble(members)


def _save_classifier(path, labels, seed=0, vocabulary=VOCABULARY, task_options=None):
    task = get_task("classification")
    model = task.build_model(_encoder(seed), num_classes=len(labels))
    model.attach_metadata(task="classification", labels=labels, vocabulary=vocabulary,
                          max_seq_length=16,
                          task_options=task_options or {"paired_input": False})
    model.save(path)
    return str(path)


def test_loading_refuses_models_that_do_not_fit_together(tmp_path):
    base = _save_classifier(tmp_path / "a.keras", ["ABBR", "DESC"])
    other_labels = _save_classifier(tmp_path / "b.keras", ["ABBR", "ENTY"], seed=1)
    pairs = _save_classifier(tmp_path / "c.keras", ["ABBR", "DESC"], seed=2,
                             task_options={"paired_input": True})
    other_vocabulary = _save_classifier(tmp_path / "d.keras", ["ABBR", "DESC"], seed=3,
                                        vocabulary=VOCABULARY[:-1])
    expected = {
        other_labels: "labels ABBR, DESC here, ABBR, ENTY there",
        pairs: "paired_input False here, True there",
        other_vocabulary: "another vocabulary (50 tokens here, 49 there)",
    }
    for path, reason in expected.items():
        with pytest.raises(UserError) as error:
            md.load_models(model_path=f"{base},{path}")
        assert str(error.value) == (f"--model={path} cannot join an ensemble with "
                                    f"--model={base}: {reason}")
    # Models that fit: the first model's task, labels and preprocessor, an averaged model.
    fitting = _save_classifier(tmp_path / "e.keras", ["ABBR", "DESC"], seed=4)
    trained = md.load_models(model_path=f"{base},{fitting}")
    assert trained.labels == ["ABBR", "DESC"] and len(trained.model.members) == 2
    single = md.load_models(model_path=base)
    assert single.model.name == "classifier"  # one model: loaded as before, no ensemble


@pytest.mark.slow
def test_binaries_take_several_models(trained_classifier_dir, trained_tagger_dir, tmp_path):
    """compare.py and predict.py on an ensemble of a trained model with itself: the model's
    own results (a CRF merged with itself is itself, and so are mean probabilities)."""
    data = os.path.join(TREC, "test.label")
    twice = f"{trained_classifier_dir},{trained_classifier_dir}/best_model.keras"
    results = run_tools({
        "compare": ("compare.py", "--data", data, f"--run=one={trained_classifier_dir}",
                    f"--run=twice={twice}", "--noprogress"),
        "predict_one": ("predict.py", f"--model_dir={trained_tagger_dir}",
                        f"--input={os.path.join(CONLL, 'dev.txt')}", "--output=-"),
        "predict_twice": ("predict.py", f"--model_dir={trained_tagger_dir},{trained_tagger_dir}",
                          f"--input={os.path.join(CONLL, 'dev.txt')}", "--output=-"),
    })
    for result in results.values():
        assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(results["compare"].stdout.strip().splitlines()[-1])
    assert summary["one_accuracy"] == summary["twice_accuracy"]
    assert results["predict_one"].stdout == results["predict_twice"].stdout
    assert results["predict_one"].stdout.count("\n") > 20
