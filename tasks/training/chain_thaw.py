"""Chain-thaw (Felbo et al. 2017, DeepMoji): the new head alone, then each encoder part alone, then all.

"Chain-thaw ... sequentially unfreezing and fine-tuning a single layer at a
time": training starts with the newly added head alone, then trains each part
of the encoder on its own, from the top block (with the pooler) down to the
embeddings, with everything else frozen (the head too), then the whole
model. Every stage lasts `every_steps` optimizer steps but the last, which
lasts to the end of training. The parts are gradual unfreezing's groups
(`unfreezing_groups`), and the flags are set by the same mechanism
(`TrainableStages`), so a resumed run lands in the right stage.

The paper trains each stage to convergence on the validation set and goes
from the first (lowest) layer upwards; here every stage has a fixed length,
so the schedule is a function of the step (resumable), and the order is
gradual unfreezing's top-down one (the NAACL 2019 tutorial's reading: the
layers nearest the task first).
"""

from nlpzoo.tasks.training.gradual_unfreezing import (
    encoder_transformer,
    unfreezing_groups,
    used_encoder_variables,
)
from nlpzoo.tasks.training.trainable_stages import PeriodicStages


def chain_thaw_stages(num_blocks):
    """How many stages chain-thaw has for an encoder of `num_blocks` distinct blocks
    (`layers.distinct_block_count`): the head, each block, the embeddings, everything.

    Examples:
    >>> chain_thaw_stages(6), chain_thaw_stages(1)  # MiniLM-L6; ALBERT's one shared block
    (9, 4)
    """
    return int(num_blocks) + 3


def default_chain_thaw_steps(total_steps, num_blocks):
    """The stage length that gives the single-part stages the first half of the run
    (the whole model trains for the second half); at least 1.

    Examples:
    >>> default_chain_thaw_steps(465, num_blocks=6)  # 8 single-part stages of 29 steps
    29
    """
    single_part_stages = chain_thaw_stages(num_blocks) - 1
    return max(1, int(total_steps) // (2 * single_part_stages))


class ChainThaw(PeriodicStages):
    """Keras callback: chain-thaw; each stage `every_steps` optimizer steps, the last to the end.

    At global step s the stage is min(s // every_steps, G + 1), with G the
    number of gradual unfreezing's groups (`unfreezing_groups`: the top block
    with the pooler and `final_norm`, each block below, the embeddings):

    - stage 0: the head only (every variable outside the transformer: the
      task head, a scalar mix, CRF transitions), the encoder frozen;
    - stage k, 1 ≤ k ≤ G: group k alone (the top block and the pooler first,
      the embeddings last), the head and the rest of the encoder frozen;
    - stage G + 1: everything.

    See `TrainableStages` for how the flags are set and restored, and why
    `fit` must start with everything trainable.

    Args:
        every_steps: the length of each stage but the last, in optimizer steps (≥ 1).
        transformer: the `TransformerEncoder` (or encoder); by default that of
            `model.encoder`.

    Examples:
    >>> from nlpzoo.layers import Encoder
    >>> encoder = Encoder(vocabulary_size=50, num_layers=2, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> callback = ChainThaw(every_steps=10, transformer=encoder)
    >>> [(step, callback.describe(callback.stage(step))) for step in (0, 10, 25, 30, 99)]
    [(0, 'head only (encoder frozen)'), (10, 'block 1 and pooler only'),
     (25, 'block 0 only'), (30, 'embeddings only'), (99, 'everything')]
    """

    log_name = "chain-thaw"

    def __init__(self, every_steps, transformer=None):
        super().__init__(every_steps, transformer)
        self._head = []

    @property
    def groups(self):
        """`unfreezing_groups` of the transformer, in the order the stages train them."""
        if self._groups is None:
            self._groups = unfreezing_groups(encoder_transformer(self))
        return self._groups

    def stage(self, step):
        """The stage at global step `step`."""
        return min(int(step) // self.every_steps, len(self.groups) + 1)

    def controlled_variables(self):
        self._groups = None
        encoder = used_encoder_variables(self.model, self.groups)
        in_encoder = {id(v) for group in self.groups for v in group.variables}
        # The head: whatever else trains (new layers, a scalar mix, an auxiliary MLM's).
        self._head = [v for v in self.model.trainable_variables if id(v) not in in_encoder]
        return self._head + encoder

    def trainable_at(self, stage):
        if stage == 0:
            return self._head
        if stage <= len(self.groups):
            return self.groups[stage - 1].variables
        return self.model_variables

    def describe(self, stage):
        """What trains at `stage`, in words (the log line's text)."""
        if stage == 0:
            return "head only (encoder frozen)"
        if stage > len(self.groups):
            return "everything"
        names = [name.replace("_", " ") for name in self.groups[stage - 1].layers]
        return f"{' and '.join(names)} only"
