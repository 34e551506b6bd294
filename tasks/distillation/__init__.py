"""Knowledge distillation: a student task model trained on a teacher's softened outputs.

`tools/distill.py` wires these together: `family_of(task)` says how a task's
teacher distributions are made (per example, or per word with a CRF's
marginals), `teacher_targets` runs the teacher once over the training data,
`distillation_dataset` pairs the student's features with those targets, and
`use_distillation_loss` makes the student train on
(1 − α) · hard + α · T² · KL(teacher_T ‖ student_T).
"""

from nlpzoo.tasks.distillation.families import ClassificationFamily, TaggingFamily, family_of
from nlpzoo.tasks.distillation.mixed_loss import use_distillation_loss
from nlpzoo.tasks.distillation.soft_targets import (
    LABELS,
    TARGETS,
    distillation_dataset,
    teacher_targets,
)

__all__ = [
    "ClassificationFamily",
    "LABELS",
    "TARGETS",
    "TaggingFamily",
    "distillation_dataset",
    "family_of",
    "teacher_targets",
    "use_distillation_loss",
]
