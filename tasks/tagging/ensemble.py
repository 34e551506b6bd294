"""Several taggers of one tag set as one: what averaging means for softmax and CRF heads.

- Softmax heads: each word's tag probabilities are averaged over the members;
  the tag is the arg-max of the mean.
- CRF heads: the layer offers no per-word marginals, so the members' CRFs are
  merged into one: the emissions are averaged, and so are the transition,
  start and end weights, and the merged CRF is Viterbi-decoded once (with the
  first member's constraints, the same for all: one tag set, one scheme).
  This is sound, not a heuristic: a sequence's score in the merged CRF is the
  mean of its scores in the members, so the merged distribution is the
  normalised geometric mean of the members' distributions,
  p(y) ∝ Π_i p_i(y)^(1/n) (a product of experts), and Viterbi returns its
  most probable sequence. For one member it is that member exactly.
"""

import numpy as np

from nlpzoo.layers import CRF
from nlpzoo.tasks.modeling.ensemble import Ensemble, mean_log_probabilities, mean_outputs
from nlpzoo.tasks.tagging.model import SequenceTagger


def merged_crf(crfs):
    """A CRF with the mean weights of `crfs` (same tags and constraints as the first).

    Examples:
    >>> import numpy as np
    >>> crfs = [CRF(2), CRF(2)]
    >>> for crf, value in zip(crfs, (1.0, 3.0)):
    ...     crf.build()
    ...     _ = crf.transitions.assign(np.full((2, 2), value, "float32"))
    >>> merged_crf(crfs).transitions.numpy().tolist()
    [[2.0, 2.0], [2.0, 2.0]]
    """
    merged = CRF.from_config(crfs[0].get_config())
    merged.build()
    merged.set_weights([np.mean(values, axis=0)
                        for values in zip(*(crf.get_weights() for crf in crfs))])
    return merged


class TaggerEnsemble(Ensemble):
    """`SequenceTagger`s with one head and tag set as one tagger (see the module).

    Like a `SequenceTagger`, `model(inputs)` gives the word scores (for a
    softmax head, the log of the mean tag probabilities; for a CRF, the mean
    emissions) and `predict_on_batch` the decoded tag ids.

    Args:
        members: two or more `SequenceTagger`s with the same head and number of tags.

    Raises:
        ValueError: heads or numbers of tags differ.
    """

    def __init__(self, members, **kwargs):
        heads = sorted({member.head for member in members})
        if len(heads) > 1:
            raise ValueError(f"the taggers have different heads ({', '.join(heads)}): a CRF's "
                             "scores and a softmax's probabilities do not average")
        sizes = sorted({member.num_classes for member in members})
        if len(sizes) > 1:
            raise ValueError(f"the taggers have different numbers of tags: {sizes}")
        crf_head = heads[0] == "crf"
        super().__init__(members, mean_outputs if crf_head else mean_log_probabilities,
                         **kwargs)
        self.head = heads[0]
        self.num_classes = sizes[0]
        self.crf = merged_crf([member.crf for member in members]) if crf_head else None

    # The tagger's own decoding, which reads only `self(...)` and `self.crf`.
    decode = SequenceTagger.decode
    predict_step = SequenceTagger.predict_step
