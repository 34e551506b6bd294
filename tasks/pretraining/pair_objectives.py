"""The segment-pair objectives: next sentence prediction (BERT) and sentence order (ALBERT).

Both read `[CLS] a [SEP] b [SEP]` pairs (`packing.pack_sentence_pairs`) and
classify them two ways from the pooled output with a `NextSentenceHead`; they
differ in the negative pairs and in their names:

- `"mlm_nsp"`: b is the true next segment (label 1) or a segment of another
  document (0): `make_nsp_pairs`. Head `nsp_head`, output `nsp_logits`, label
  `next_sentence`, metrics `nsp_loss`, `nsp_accuracy`.
- `"mlm_sop"`: a and b are consecutive segments of one document, in their
  order (1) or swapped (0): `make_sop_pairs`. Head `sop_head`, output
  `sop_logits`, label `sentence_order`, metrics `sop_loss`, `sop_accuracy`.

This table is the one place that tells them apart; the packing, pipeline,
model and tools/pretrain.py read it.

Examples:
>>> PAIR_OBJECTIVES["mlm_sop"].head, PAIR_OBJECTIVES["mlm_sop"].label
('sop_head', 'sentence_order')
>>> pair_objective("mlm") is None
True
"""

import dataclasses
from typing import Callable

from nlpzoo.tasks.pretraining.sentence_order import make_sop_pairs
from nlpzoo.tasks.text.masking import make_nsp_pairs


@dataclasses.dataclass(frozen=True)
class PairObjective:
    """One segment-pair objective.

    Attributes:
        prefix: "nsp" or "sop": names its head (`<prefix>_head`), logits
            (`<prefix>_logits`), loss and accuracy (`<prefix>_loss`,
            `<prefix>_accuracy`).
        label: the label's key in the dataset (int32 [B], 1 = `a` then `b`
            as they stand in the document).
        make_pairs: `(documents of segments, rng, probability of 1) → [(a, b, label)]`.
        min_documents: documents the corpus must hold.
        description: what it is, for messages and help.
    """

    prefix: str
    label: str
    make_pairs: Callable
    min_documents: int
    description: str

    @property
    def head(self):
        return f"{self.prefix}_head"

    @property
    def logits(self):
        return f"{self.prefix}_logits"


PAIR_OBJECTIVES = {
    "mlm_nsp": PairObjective("nsp", "next_sentence", make_nsp_pairs, 2,
                             "next sentence prediction"),
    "mlm_sop": PairObjective("sop", "sentence_order", make_sop_pairs, 1,
                             "sentence-order prediction"),
}


def pair_objective(objective):
    """The `PairObjective` of `objective`, or None for single-segment objectives."""
    return PAIR_OBJECTIVES.get(objective)
