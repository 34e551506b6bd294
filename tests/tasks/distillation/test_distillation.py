"""Knowledge distillation (tasks/distillation, tasks/losses.distillation_loss, CRF marginals).

The maths against NumPy and brute force; then, on toy tasks, a student that
sees no gold label at all (α = 1, unlabelled text only) learns to predict what
a fixed teacher predicts, for classification and for CRF tagging, with a
tokenizer of its own.
"""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers.crf import CRF
from nlpzoo.tasks.classification import ClassificationExample
from nlpzoo.tasks.distillation import (
    LABELS,
    TARGETS,
    distillation_dataset,
    family_of,
    teacher_targets,
    use_distillation_loss,
)
from nlpzoo.tasks.modeling.losses import distillation_loss
from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.tagging import TaggedSentence
from nlpzoo.tasks.words.tags import allowed_transitions
from nlpzoo.tasks.text.tokenizer import CLS, MASK, PAD, SEP, UNK
from nlpzoo.zoo import build_task_model

# --- the loss against NumPy ---------------------------------------------------------------


def _numpy_distillation_loss(p, logits, temperature):
    """T² · Σ_slots KL(p ‖ softmax(logits / T)) / (slots with a target), float64."""
    p = np.asarray(p, "float64").reshape(-1, p.shape[-1])
    z = np.asarray(logits, "float64").reshape(-1, logits.shape[-1]) / temperature
    q = np.exp(z - z.max(-1, keepdims=True))
    q /= q.sum(-1, keepdims=True)
    total, slots = 0.0, 0
    for p_row, q_row in zip(p, q):
        if p_row.sum() == 0:
            continue
        slots += 1
        total += sum(pk * np.log(pk / qk) for pk, qk in zip(p_row, q_row) if pk > 0)
    return temperature ** 2 * total / max(slots, 1)


@pytest.mark.parametrize("temperature", [1.0, 2.0, 5.0])
def test_distillation_loss_equals_numpy_reference(temperature):
    rng = np.random.default_rng(int(temperature))
    teacher_logits = rng.normal(size=(3, 5, 4)) * 3
    p = np.exp(teacher_logits / temperature)
    p /= p.sum(-1, keepdims=True)
    p[0, 3:] = 0.0  # padded words: no target
    p[1, 0] = [0.0, 1.0, 0.0, 0.0]  # a one-hot row: 0 · log 0 terms
    logits = rng.normal(size=(3, 5, 4)).astype("float32") * 4
    loss = float(distillation_loss(p.astype("float32"), logits, temperature))
    assert loss == pytest.approx(_numpy_distillation_loss(p, logits, temperature), rel=1e-5)


def test_distillation_loss_gradient_is_t_times_q_minus_p():
    # d/dz of T² KL(p ‖ softmax(z/T)) = T (q − p): the T² keeps it at the hard loss's scale.
    temperature, p = 3.0, np.array([[0.7, 0.2, 0.1], [0.0, 0.0, 0.0]], "float32")
    logits = tf.Variable([[1.0, -2.0, 0.5], [4.0, 0.0, 0.0]])
    with tf.GradientTape() as tape:
        loss = distillation_loss(p, logits, temperature)
    q = tf.nn.softmax(logits / temperature).numpy()
    expected = np.stack([temperature * (q[0] - p[0]), np.zeros(3)])  # mean over 1 slot
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), expected, atol=1e-6)


def test_distillation_loss_is_zero_when_the_student_agrees_and_refuses_bad_temperature():
    logits = np.array([[2.0, -1.0, 0.0]], "float32")
    p = tf.nn.softmax(logits / 2.0).numpy()
    assert float(distillation_loss(p, logits, 2.0)) == pytest.approx(0.0, abs=1e-6)
    assert float(distillation_loss(np.zeros_like(p), logits, 2.0)) == 0.0  # no target at all
    with pytest.raises(ValueError, match="temperature"):
        distillation_loss(p, logits, 0.0)


# --- CRF marginals against brute force ----------------------------------------------------


def _brute_force_marginals(potentials, length, transitions, start, end, temperature):
    num_tags = potentials.shape[-1]
    marginals = np.zeros((potentials.shape[0], num_tags))
    paths = list(itertools.product(range(num_tags), repeat=length))
    scores = []
    for path in paths:
        score = start[path[0]] + end[path[-1]] + sum(potentials[i, t] for i, t in enumerate(path))
        score += sum(transitions[a, b] for a, b in zip(path[:-1], path[1:]))
        scores.append(score / temperature)
    scores = np.asarray(scores, "float64")
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    for path, weight in zip(paths, weights):
        for i, tag in enumerate(path):
            marginals[i, tag] += weight
    return marginals


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_crf_marginals_equal_brute_force_enumeration(temperature):
    rng = np.random.default_rng(7)
    num_tags, time = 3, 4
    crf = CRF(num_tags)
    weights = [rng.normal(size=v.shape).astype("float32") for v in
               (crf.transitions, crf.start_transitions, crf.end_transitions)]
    for variable, value in zip((crf.transitions, crf.start_transitions, crf.end_transitions),
                               weights):
        variable.assign(value)
    potentials = rng.normal(size=(3, time, num_tags)).astype("float32") * 2
    lengths = [4, 2, 1]
    mask = np.array([[1] * n + [0] * (time - n) for n in lengths])
    marginals = keras.ops.convert_to_numpy(crf.marginals(potentials, mask, temperature))
    for b, length in enumerate(lengths):
        expected = _brute_force_marginals(potentials[b], length, *weights, temperature)
        np.testing.assert_allclose(marginals[b, :length], expected[:length], atol=1e-5)
        assert np.all(marginals[b, length:] == 0.0)


def test_crf_marginals_respect_constraints():
    labels = ["O", "B-PER", "I-PER"]
    crf = CRF(3, *allowed_transitions("IOB2", labels))
    potentials = np.array([[[0.0, 0.0, 9.0], [0.0, 0.0, 9.0]]], "float32")  # I-PER wanted
    marginals = keras.ops.convert_to_numpy(crf.marginals(potentials))
    assert marginals[0, 0, 2] < 1e-6  # I-PER may not start a sentence
    assert marginals[0, 1, 2] > 0.99 and marginals[0, 0, 1] > 0.99  # B-PER I-PER instead
    with pytest.raises(ValueError, match="temperature"):
        crf.marginals(potentials, temperature=-1.0)


# --- a fixed teacher, a student that sees only its soft targets ---------------------------

_SPECIAL = [PAD, UNK, CLS, SEP, MASK]
_FILLERS = ["red", "blue", "green", "cat", "dog", "fish", "runs", "sits", "the", "a"]
# The student splits the keywords differently: the two models share no tokenizer.
_TEACHER_VOCABULARY = _SPECIAL + ["paris", "rome", "anna", "marc"] + _FILLERS
_STUDENT_VOCABULARY = _SPECIAL + ["par", "##is", "ro", "##me", "an", "##na", "mar", "##c"] + (
    _FILLERS)
_TINY = dict(num_layers=1, hidden_dim=32, num_heads=2, intermediate_dim=64, dropout=0.0,
             max_sequence_length=32, jit_compile=False)


def _model(task, vocabulary, labels, learning_rate, steps, **head):
    model = build_task_model(task, "bert_tiny", vocabulary_size=len(vocabulary),
                             learning_rate=learning_rate, total_steps=steps, **_TINY,
                             **task.model_head_options(labels), **head)
    return model


def _toy_sentences(rng, count):
    """Sentences of 3-6 words; a city is a LOC, a first name a PER."""
    words = []
    for _ in range(count):
        sentence = list(rng.choice(_FILLERS, size=rng.integers(2, 5)))
        sentence.insert(int(rng.integers(0, len(sentence) + 1)),
                        str(rng.choice(["paris", "rome", "anna", "marc", "dog"])))
        words.append(sentence)
    return words


def _classification_examples(rng, count):
    """The label says which kind of keyword the text holds."""
    kinds = {"paris": "city", "rome": "city", "anna": "name", "marc": "name"}
    return [ClassificationExample(" ".join(words), next(
        (kinds[w] for w in words if w in kinds), "none")) for words in _toy_sentences(rng, count)]


def _distil(task, teacher, teacher_preprocessor, student, student_preprocessor, examples,
            labels, epochs, temperature=2.0):
    """Trains `student` on the teacher's targets only (α = 1, every example unlabelled)."""
    family = family_of(task)
    unlabelled = [family.with_placeholder_label(example, labels) for example in examples]
    targets = teacher_targets(teacher, task, family, unlabelled, teacher_preprocessor, labels,
                              temperature)
    dataset = distillation_dataset(task, unlabelled, [False] * len(examples), targets,
                                   student_preprocessor, labels, batch_size=16, seed=1)
    use_distillation_loss(student, family, alpha=1.0, temperature=temperature)
    history = student.fit(dataset, epochs=epochs, verbose=0)
    return targets, history


@pytest.mark.slow  # two models trained from scratch: about a minute on 2 cores
def test_student_distilled_from_a_fixed_classifier_predicts_what_it_predicts():
    task = get_task("classification")
    rng = np.random.default_rng(0)
    train, held_out = _classification_examples(rng, 96), _classification_examples(rng, 64)
    labels = task.label_names(train)
    teacher_preprocessor = task.make_preprocessor(_TEACHER_VOCABULARY, max_seq_length=16)
    student_preprocessor = task.make_preprocessor(_STUDENT_VOCABULARY, max_seq_length=16)
    teacher = _model(task, _TEACHER_VOCABULARY, labels, 1e-2, 60, pooling="mean")
    teacher.fit(task.make_dataset(train, teacher_preprocessor, labels, batch_size=16,
                                  training=True, seed=0), epochs=10, verbose=0)
    teacher.trainable = False  # fixed from here on

    student = _model(task, _STUDENT_VOCABULARY, labels, 1e-2, 60, pooling="mean")
    targets, history = _distil(task, teacher, teacher_preprocessor, student,
                               student_preprocessor, train, labels, epochs=10)
    assert history.history["loss"][-1] < 0.25 * history.history["loss"][0]
    assert len(targets) == len(train) and targets[0].shape == (len(labels),)

    def predictions(model, preprocessor):
        dataset = task.make_dataset(held_out, preprocessor, labels, batch_size=32)
        return np.argmax(model.predict(dataset, verbose=0), axis=-1)

    teacher_says = predictions(teacher, teacher_preprocessor)
    gold = [labels.index(example.label) for example in held_out]
    assert np.mean(teacher_says == gold) > 0.9
    agreement = np.mean(predictions(student, student_preprocessor) == teacher_says)
    assert agreement >= 0.95, agreement


_TAGS = {"paris": "B-LOC", "rome": "B-LOC", "anna": "B-PER", "marc": "B-PER"}


def _tagged_sentences(rng, count):
    return [TaggedSentence(tuple(words), tuple(_TAGS.get(w, "O") for w in words))
            for words in _toy_sentences(rng, count)]


def test_word_targets_follow_the_words_whatever_each_tokenizer_does():
    # The teacher sees whole words, cut after 4 subwords; the student splits the
    # keywords in two. Each student word still gets its own word's teacher row.
    task = get_task("tagging").adapt([TaggedSentence(("paris",), ("B-LOC",))])
    labels = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    sentence = TaggedSentence(("anna", "runs", "paris", "rome", "dog", "cat"),
                              ("B-PER", "O", "B-LOC", "B-LOC", "O", "O"))
    teacher = _model(task, _TEACHER_VOCABULARY, labels, 1e-3, 1, head="crf")
    teacher_preprocessor = task.make_preprocessor(_TEACHER_VOCABULARY, max_seq_length=6)
    student_preprocessor = task.make_preprocessor(_STUDENT_VOCABULARY, max_seq_length=16)
    family = family_of(task)
    [row] = teacher_targets(teacher, task, family, [sentence], teacher_preprocessor, labels,
                            temperature=2.0)
    assert row.shape == (6, 5)
    np.testing.assert_allclose(row[:4].sum(axis=1), 1.0, atol=1e-5)  # marginals
    assert np.all(row[4:] == 0.0)  # the teacher never saw these words: no target
    # The same sentence twice, once labelled and once not (unlabelled text: no hard labels).
    dataset = distillation_dataset(task, [sentence, sentence], [True, False], [row, row],
                                   student_preprocessor, labels, batch_size=2)
    [(features, y)] = list(dataset)
    assert features["token_ids"].shape == (2, 16)  # the student's own subwords, bucketed
    np.testing.assert_array_equal(features["word_mask"].numpy().sum(axis=1), [6, 6])
    hard = sorted(y[LABELS].numpy()[:, :6].tolist())
    assert hard == [[-1] * 6, [3, 0, 1, 1, 0, 0]]
    for targets in y[TARGETS].numpy():
        np.testing.assert_allclose(targets[:6], row)
        assert np.all(targets[6:] == 0.0)
    assert np.all(y[LABELS].numpy()[:, 6:] == -1)


@pytest.mark.slow  # two models trained from scratch: about a minute on 2 cores
def test_student_distilled_from_a_fixed_crf_tagger_tags_what_it_tags():
    rng = np.random.default_rng(1)
    train, held_out = _tagged_sentences(rng, 96), _tagged_sentences(rng, 64)
    task = get_task("tagging").adapt(train)
    labels = task.label_names(train)
    teacher_preprocessor = task.make_preprocessor(_TEACHER_VOCABULARY, max_seq_length=16)
    student_preprocessor = task.make_preprocessor(_STUDENT_VOCABULARY, max_seq_length=16)
    teacher = _model(task, _TEACHER_VOCABULARY, labels, 1e-2, 60, head="crf")
    teacher.fit(task.make_dataset(train, teacher_preprocessor, labels, batch_size=16,
                                  training=True, seed=0), epochs=10, verbose=0)
    teacher.trainable = False

    student = _model(task, _STUDENT_VOCABULARY, labels, 1e-2, 60, head="crf")
    targets, history = _distil(task, teacher, teacher_preprocessor, student,
                               student_preprocessor, train, labels, epochs=10)
    assert history.history["loss"][-1] < 0.25 * history.history["loss"][0]
    assert [len(row) for row in targets] == [len(s.words) for s in train]

    def tags(model, preprocessor):
        dataset = task.make_dataset(held_out, preprocessor, labels, batch_size=32)
        predicted = model.predict(dataset, verbose=0)
        return np.concatenate([row[:len(s.words)] for row, s in zip(predicted, held_out)])

    gold = np.concatenate([[labels.index(t) for t in s.tags] for s in held_out])
    teacher_says = tags(teacher, teacher_preprocessor)
    assert np.mean(teacher_says == gold) > 0.9
    student_says = tags(student, student_preprocessor)
    assert np.mean(student_says == teacher_says) >= 0.95
    entities = teacher_says != labels.index("O")  # not only the easy O words
    assert np.mean(student_says[entities] == teacher_says[entities]) >= 0.9
