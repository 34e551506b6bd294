"""EWC in a run directory: the Fisher estimated once, before training, and kept with the run.

A resumed run must weigh its penalty with the very Fisher the run started
with (re-estimating it after training has begun would read other weights),
and a later user may want it too (EWC towards this model on a next task):
`anchor_with_ewc` estimates it at the starting weights on the run's first
training batches, normalises it (mean 1), saves it as `ewc_fisher.npz` in the
run directory (`zoo.runs.directory.EWC_FISHER`), and reads that file back
whenever it is there.
"""

import os

from nlpzoo.tasks.training.ewc import (
    attach_ewc,
    estimate_fisher,
    ewc_variables,
    load_fisher,
    normalize_fisher,
    save_fisher,
)
from nlpzoo.zoo.runs import directory as md


def anchor_with_ewc(model, strength, model_dir, batches, max_batches=100):
    """Attaches EWC of `strength` to the model's encoder weights with the run's Fisher.

    The Fisher is `model_dir/ewc_fisher.npz` when it exists (a resumed run),
    else `normalize_fisher(estimate_fisher(model, batches, max_batches=...))`
    at the model's current weights, then saved there. Call it with the
    starting weights in place, before any training state is restored.

    Args:
        model: the compiled task model (with `.encoder`), at its starting weights.
        strength: λ, > 0.
        model_dir: the run directory.
        batches: the training batches the Fisher is estimated on (the first pass).
        max_batches: at most this many of them.

    Returns:
        (the Fisher: {variable path: array}, whether it was read from the run directory).

    Raises:
        ValueError: a stored Fisher does not fit the model's weights, or the estimate is 0.

    Examples:
    >>> import tempfile
    >>> import numpy as np
    >>> from nlpzoo.zoo import build_model
    >>> model = build_model("bert_tiny_classifier", num_classes=2, vocabulary_size=50,
    ...                     num_layers=1, dropout=0.0)
    >>> features = {"token_ids": np.full((2, 8), 5, "int32"),
    ...             "segment_ids": np.zeros((2, 8), "int32"), "padding_mask": np.ones((2, 8), "int32")}
    >>> batches = [(features, np.array([0, 1]))]
    >>> run = tempfile.mkdtemp()
    >>> fisher, stored = anchor_with_ewc(model, 0.1, run, batches)
    >>> stored, os.listdir(run), round(float(np.mean(np.concatenate(
    ...     [values.ravel() for values in fisher.values()]))), 4)
    (False, ['ewc_fisher.npz'], 1.0)
    >>> anchor_with_ewc(model, 0.1, run, batches=[])[1]  # read back: nothing estimated
    True
    """
    variables = ewc_variables(model)
    fisher_path = md.path(model_dir, md.EWC_FISHER)
    stored = os.path.exists(fisher_path)
    if stored:
        fisher = load_fisher(fisher_path)
        unknown = sorted(set(fisher) - {v.path for v in variables})
        if unknown:
            raise ValueError(f"{fisher_path} holds weights the model has not "
                             f"(e.g. {unknown[0]}): written by another run?")
    else:
        fisher = normalize_fisher(estimate_fisher(model, batches, variables, max_batches))
        save_fisher(fisher, fisher_path)
    try:
        attach_ewc(variables, strength, fisher)
    except ValueError as error:
        raise ValueError(f"{fisher_path}: {error}" if stored else str(error)) from error
    return fisher, stored
