"""What distillation needs to know about a task family: its soft targets and its hard loss.

A teacher's knowledge is one distribution per *slot*: per example for
classification, per word for tagging. Slots are what teacher and student have
in common even when their tokenizers differ (different vocabularies, cased
and uncased, other subword splits): the teacher reads each example with its
own preprocessor, and its distributions are matched to the student's by
example index and word index, never by subword.
"""

import dataclasses

import numpy as np
from keras import ops

from nlpzoo.tasks.classification.task import ClassificationTask
from nlpzoo.tasks.modeling.losses import masked_sparse_cross_entropy
from nlpzoo.tasks.tagging.task import TaggingTask


def _softmax(logits, temperature):
    scaled = np.asarray(logits, "float64") / temperature
    scaled -= scaled.max(axis=-1, keepdims=True)
    exp = np.exp(scaled)
    return (exp / exp.sum(axis=-1, keepdims=True)).astype("float32")


class ClassificationFamily:
    """One distribution per example: softmax(teacher logits / T).

    Examples:
    >>> family = ClassificationFamily()
    >>> rows = family.teacher_rows(None, np.array([[2.0, 0.0]]), {}, [None], 1.0)
    >>> np.round(rows[0], 3)
    array([0.881, 0.119], dtype=float32)
    """

    def student_task(self, teacher_task):
        return teacher_task

    def with_placeholder_label(self, example, labels):
        """`example` with some known label: for unlabelled text (its hard loss is masked)."""
        return dataclasses.replace(example, label=labels[0])

    def teacher_rows(self, teacher, outputs, features, examples, temperature):
        """One [K] probability row per example of a batch, from the teacher's logits."""
        return list(_softmax(outputs, temperature))

    def hard_loss(self, student, x, labels, y_pred):
        """Cross-entropy over labelled examples (label -1: unlabelled, not counted)."""
        return masked_sparse_cross_entropy(labels, y_pred)


class TaggingFamily:
    """One distribution per word: softmax(emissions / T), or a CRF's marginals at T.

    The student's side is the softmax of its own per-word emission scores at
    T, for a softmax and for a CRF head alike: a CRF student's transitions
    learn from the hard labels only (see docs/distillation.md). Words the
    teacher did not see (cut off by its `max_seq_length`) have no target.

    Examples:
    >>> from nlpzoo.tasks.tagging import TaggedSentence
    >>> sentence = TaggedSentence(("Anna", "sees", "Rome"), ("B-PER", "O", "B-LOC"))
    >>> scores = np.array([[[2.0, 0.0], [0.0, 0.0], [5.0, 5.0]]])  # a softmax teacher's
    >>> rows = TaggingFamily().teacher_rows(None, scores, {"word_mask": np.array([[1, 1, 0]])},
    ...                                     [sentence], temperature=1.0)
    >>> np.round(rows[0], 3)  # the third word was cut off: no target
    array([[0.881, 0.119],
           [0.5  , 0.5  ],
           [0.   , 0.   ]], dtype=float32)
    """

    def student_task(self, teacher_task):
        # Targets are per word: the student learns on first subwords.
        return teacher_task.with_options(label_all_subwords=False)

    def with_placeholder_label(self, sentence, labels):
        return dataclasses.replace(sentence, tags=(labels[0],) * len(sentence.words))

    def teacher_rows(self, teacher, outputs, features, sentences, temperature):
        """One [words, K] row per sentence of a batch (zeros where the teacher saw no word)."""
        word_mask = np.asarray(features["word_mask"])
        crf = getattr(teacher, "crf", None)
        if crf is not None:
            probabilities = ops.convert_to_numpy(
                crf.marginals(outputs, word_mask, temperature=temperature))
        else:
            probabilities = _softmax(outputs, temperature) * word_mask[..., None]
        rows = []
        for sentence, row, seen in zip(sentences, probabilities, word_mask.sum(axis=1)):
            target = np.zeros((len(sentence.words), row.shape[-1]), "float32")
            seen = min(int(seen), len(sentence.words))
            target[:seen] = row[:seen]
            rows.append(target)
        return rows

    def hard_loss(self, student, x, labels, y_pred):
        """The tagger's own loss (CRF negative log-likelihood or cross-entropy) per
        labelled word; unlabelled sentences carry -1 tags and count for nothing."""
        return student.tag_loss(x, labels, y_pred)


def family_of(task):
    """The distillation family of a task, or a `ValueError` for a task it does not support.

    Examples:
    >>> type(family_of(TaggingTask())).__name__
    'TaggingFamily'
    """
    if isinstance(task, ClassificationTask):
        if task.regression:  # soft targets are class probabilities; a score has none
            raise ValueError("distillation supports classifiers with labels, not the "
                             "regression objective (a score has no class probabilities)")
        if task.multi_label:  # soft targets are one softmax over the classes
            raise ValueError("distillation supports classifiers with one label per example, "
                             "not multi-label ones (their labels are independent sigmoids, "
                             "not one distribution)")
        return ClassificationFamily()
    if isinstance(task, TaggingTask):
        return TaggingFamily()
    raise ValueError(f"distillation supports classification and tagging models, not "
                     f"{task.name}")
