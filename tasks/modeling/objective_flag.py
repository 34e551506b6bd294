"""`--objective`: what a task's head is trained to predict, for every task that has more than
one (classification, the bi-encoder), defined once whichever task comes first."""

from absl import flags

# Each task's own objectives, its default first; the flag takes any of them.
TASK_OBJECTIVES = {
    "classification": ("classification", "regression"),
    "bi_encoder": ("softmax", "cosine", "multiple_negatives"),
}
OBJECTIVE_FLAG = "objective"


def define_objective_flag(flag_values):
    """Defines `--objective` in `flag_values`, once for every task with a choice of objective.

    Classification and the bi-encoder share the flag (absl refuses a second
    definition). It is None when omitted: each task then takes its own
    default; a task refuses another task's objective (its options say which
    it takes).

    Examples:
    >>> values = flags.FlagValues()
    >>> define_objective_flag(values); define_objective_flag(values)
    >>> _ = values(["train", "--objective=regression"])
    >>> values.objective
    'regression'
    """
    if OBJECTIVE_FLAG in flag_values:
        return
    choices = [name for objectives in TASK_OBJECTIVES.values() for name in objectives]
    flags.DEFINE_enum(OBJECTIVE_FLAG, None, choices, "What the head learns. Classification: "
                      "classification (cross-entropy over the labels) or regression (one "
                      "score per text or pair, mean squared error against a numeric label; "
                      "best epoch by validation Spearman). Bi-encoder: softmax "
                      "(cross-entropy over concat(u, v, |u-v|), a class per pair) or cosine "
                      "(mean squared error of cos(u, v) against a score in [-1, 1]) or "
                      "multiple_negatives (in-batch negatives: each anchor picks its "
                      "positive among the batch's positives, --ranking_scale x cosine, "
                      "cross-entropy; best epoch by validation MRR@10). When "
                      "omitted: classification, softmax.", flag_values=flag_values)
