"""Per-entity-type scores as TensorBoard tags grouped by type (`entity/PER/f1`)."""

_MEASURES = ("precision", "recall", "f1")


def entity_type_scalars(scores, overall=()):
    """`{tag: value}` of the per-type and overall P/R/F1 among an evaluation's `scores`.

    A per-type score is a key `<type>_<measure>` (measure: precision, recall,
    f1) whose type also has an `<type>_f1`, as the tagging and span NER
    evaluations write them; it becomes `entity/<type>/<measure>`, so that
    TensorBoard shows one card group per measure with a series per type
    (filter `entity/.*/f1`). The names in `overall` (the task's
    `logged_metrics`, such as `entity_f1`) become `entity/all/<measure>`,
    beside them; other keys are left out.

    Examples:
    >>> entity_type_scalars({"entity_f1": 0.5, "PER_f1": 0.8, "PER_recall": 1.0,
    ...                      "token_accuracy": 0.9, "B_I_f1": 0.1},
    ...                     overall=("entity_f1",))
    {'entity/all/f1': 0.5, 'entity/B_I/f1': 0.1, 'entity/PER/f1': 0.8, 'entity/PER/recall': 1.0}
    """
    scalars = {}
    for name in overall:
        prefix, _, measure = name.rpartition("_")
        if measure in _MEASURES and name in scores:
            scalars[f"entity/all/{measure}"] = float(scores[name])
    types = {name[:-len("_f1")] for name in scores
             if name.endswith("_f1") and name not in overall}
    for name, value in sorted(scores.items()):
        entity_type, _, measure = name.rpartition("_")
        if name not in overall and measure in _MEASURES and entity_type in types:
            scalars[f"entity/{entity_type}/{measure}"] = float(value)
    return scalars
