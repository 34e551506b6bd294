"""The student's training loss:
(1 − α) · hard-label loss + α · T² · KL(teacher_T ‖ student_T)."""

import tensorflow as tf
from keras import ops

from nlpzoo.tasks.distillation.soft_targets import LABELS, TARGETS
from nlpzoo.tasks.modeling.losses import distillation_loss


def use_distillation_loss(student, family, alpha, temperature):
    """Makes `student` train on the mixed distillation loss; returns it.

    The student stays a plain task model of its class (what is saved is what
    tools/train.py would save); only this instance's `compute_loss` and
    `compute_metrics` change, for batches whose labels are a dict with the
    teacher's targets (`distillation_dataset`). Validation batches (plain
    labels) keep the task's own loss and metrics, so the monitored metric and
    the best-model choice mean what they mean in tools/train.py. Regularising
    layer losses (L2-SP) are added unscaled by α.

    Call it after `compile` and after the compiled loss and metrics were built
    on plain labels (e.g. by one `evaluate` batch), so Keras never tries to
    match the dict labels to them.

    Args:
        student: a compiled task model.
        family: the task's distillation family (`family_of`).
        alpha: weight of the soft-target loss, in [0, 1]; 0 is plain training.
        temperature: T > 0.

    Returns:
        `student`.

    Examples:
    >>> import numpy as np
    >>> from nlpzoo.layers import Encoder
    >>> from nlpzoo.tasks.classification.model import Classifier
    >>> from nlpzoo.tasks.distillation.families import ClassificationFamily
    >>> student = Classifier(Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                              hidden_dim=8, intermediate_dim=16), num_classes=2)
    >>> _ = use_distillation_loss(student, ClassificationFamily(), alpha=0.5, temperature=2.0)
    >>> logits = np.array([[1.0, -1.0], [1.0, -1.0]], "float32")
    >>> y = {LABELS: np.array([0, -1]),  # the second example is unlabelled
    ...      TARGETS: np.array([[0.5, 0.5], [0.5, 0.5]], "float32")}
    >>> # 0.5 CE(label 0) + 0.5 · 2² KL(uniform ‖ q at T=2) = 0.5 · 0.1269 + 0.5 · 0.4805
    >>> round(float(student.compute_loss(None, y, logits)), 4)
    0.3037
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    task_loss, task_metrics = student.compute_loss, student.compute_metrics

    def compute_loss(x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if not isinstance(y, dict):
            return task_loss(x, y, y_pred, sample_weight, training=training)
        hard = family.hard_loss(student, x, y[LABELS], y_pred)
        soft = distillation_loss(y[TARGETS], y_pred, temperature)
        loss = (1.0 - alpha) * hard + alpha * soft
        for extra in student.losses:
            loss = loss + ops.cast(extra, "float32")
        # As Keras's own compute_loss: replicas' gradients are summed.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return loss / replicas if replicas > 1 else loss

    def compute_metrics(x, y, y_pred, sample_weight=None):
        if not isinstance(y, dict):
            return task_metrics(x, y, y_pred, sample_weight)
        hard = y[LABELS]
        # Per-example labels: unlabelled examples (-1) weigh 0; per-word metrics skip -1.
        weight = ops.cast(hard >= 0, "float32") if len(hard.shape) == 1 else None
        return task_metrics(x, ops.maximum(hard, 0) if weight is not None else hard, y_pred,
                            weight)

    student.compute_loss = compute_loss
    student.compute_metrics = compute_metrics
    return student

