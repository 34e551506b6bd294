"""The teacher's soft targets, computed once, and the student's training dataset that carries them.

Trade-off: the teacher runs once over the training data before the student
trains (not inside the `tf.data` pipeline every epoch). Teacher inference is
deterministic (no dropout), so the targets are exactly what a per-batch
teacher would give, at 1/epochs of the cost, and the teacher's weights are not
in memory while the student trains. The price is memory: one [K] row per
example, or [words, K] per sentence (CoNLL-2003's 14,041 training sentences ×
9 tags: about 8 MB of float32), and no augmentation between epochs.
"""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.batching import shuffle_batch_and_count

TARGETS = "teacher_probabilities"
LABELS = "labels"


def teacher_targets(teacher, task, family, examples, preprocessor, labels, temperature,
                    batch_size=64):
    """The teacher's distribution at `temperature` for every example, in order.

    Args:
        teacher: the trained teacher model.
        task: the teacher's task.
        family: the task's distillation family (`family_of`).
        examples: the examples (labelled, or with placeholder labels).
        preprocessor: the teacher's own preprocessor (its tokenizer).
        labels: the teacher's label names.
        temperature: T > 0.
        batch_size: examples per teacher batch.

    Returns:
        A list with one float32 array per example: [K] (classification) or
        [words, K] (tagging).
    """
    dataset = task.make_dataset(examples, preprocessor, labels, batch_size=batch_size,
                                training=False)
    rows, start = [], 0
    for features, _ in dataset:
        outputs = teacher(features, training=False)
        count = int(tf.shape(features["token_ids"])[0])
        rows.extend(family.teacher_rows(teacher, np.asarray(outputs), features,
                                        examples[start:start + count], temperature))
        start += count
    return rows


def distillation_dataset(task, examples, labelled, targets, preprocessor, labels,
                         batch_size=32, seed=None):
    """Shuffled, length-bucketed training batches `(features, {"labels", TARGETS})`.

    The features and hard labels are exactly the task's own (`task.make_dataset`
    encodes every example); `labels` holds -1 where `labelled` is False (its
    hard loss is masked), and `TARGETS` the teacher's rows, cut or padded
    with zero rows to the student's words (tagging).

    Args:
        task: the student's task.
        examples: the training examples (unlabelled ones with placeholder labels).
        labelled: one bool per example.
        targets: one teacher row per example (`teacher_targets`).
        preprocessor: the student's preprocessor.
        labels: the label names.
        batch_size: examples per batch.
        seed: shuffle seed: an int reshuffles at every pass; `(seed, pass)`
            gives that pass its own fixed order (`Task.make_dataset`).
    """
    # Batches of one, in order: each example padded to its own length bucket, as the
    # task's training pipeline pads it.
    encoded = task.make_dataset(examples, preprocessor, labels, batch_size=1,
                                training=False).unbatch()
    if np.ndim(targets[0]) == 1:
        target_slices = np.stack(targets).astype("float32")
    else:
        target_slices = tf.RaggedTensor.from_row_lengths(
            np.concatenate(targets).astype("float32"), [len(row) for row in targets])
    extras = tf.data.Dataset.from_tensor_slices((target_slices, np.asarray(labelled, bool)))

    def combine(encoded, extras):
        (features, hard), (target, is_labelled) = encoded, extras
        hard = tf.where(is_labelled, hard, -tf.ones_like(hard))
        if isinstance(target, tf.RaggedTensor):
            target = target.to_tensor()
        if hard.shape.rank == 1:  # per word: as many rows as the student's word slots
            slots = tf.shape(hard)[0]
            target = target[:slots]
            target = tf.pad(target, [[0, slots - tf.shape(target)[0]], [0, 0]])
        return features, {LABELS: hard, TARGETS: target}

    dataset = tf.data.Dataset.zip((encoded, extras)).map(combine)
    padding = {**preprocessor.padding_values, LABELS: -1, TARGETS: 0.0}
    return shuffle_batch_and_count(dataset, len(examples), batch_size,
                                   preprocessor.max_seq_length, padding, training=True,
                                   seed=seed)
