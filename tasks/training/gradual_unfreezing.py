"""Gradual unfreezing (ULMFiT; Howard & Ruder 2018): the encoder thaws from the top down.

Training starts with the head alone; every `every_steps` steps one more
group of the encoder becomes trainable, from the top block (with the pooler)
down to the embeddings, so the randomly initialised head settles before its
gradients reach the pretrained layers that need the least change.
"""

from typing import NamedTuple

from nlpzoo.layers import distinct_block_count, transformer_of
from nlpzoo.tasks.training.trainable_stages import PeriodicStages


class UnfreezingGroup(NamedTuple):
    """One group of encoder variables that gradual unfreezing releases together."""

    layers: tuple  # the names of the transformer's sublayers, e.g. ("block_1", "pooler")
    variables: list


def unfreezing_groups(transformer):
    """The transformer's weights in the order gradual unfreezing makes them trainable.

    Group 1 is the top block with what sits on top of it (`final_norm` when
    the encoder has one, and the pooler); groups 2 … L the blocks below it,
    one by one, downwards (L is the number of distinct blocks: 1 when
    `share_layers` makes every layer the same block); group L + 1 the
    embeddings, with any weight that no other group holds.

    Args:
        transformer: a `layers.TransformerEncoder`, or an encoder that holds one.

    Returns:
        A list of `UnfreezingGroup`s.

    Examples:
    >>> from nlpzoo.layers import Encoder
    >>> encoder = Encoder(vocabulary_size=50, num_layers=3, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> [group.layers for group in unfreezing_groups(encoder)]
    [('block_2', 'pooler'), ('block_1',), ('block_0',), ('embeddings',)]
    """
    transformer = transformer_of(transformer)
    top = [transformer.blocks[-1]]
    if transformer.final_norm is not None:
        top.append(transformer.final_norm)
    top.extend(transformer.pooler_layers)
    layer_groups = [top] + [[block] for block in reversed(transformer.blocks[:-1])]
    layer_groups.append([transformer.embeddings])
    groups, seen = [], set()
    for group in layer_groups:
        variables = [v for layer in group for v in layer.weights if id(v) not in seen]
        seen.update(id(v) for v in variables)
        groups.append(UnfreezingGroup(tuple(layer.name for layer in group), variables))
    # Anything else the transformer owns (a future sublayer) thaws last, with the embeddings.
    groups[-1].variables.extend(v for v in transformer.weights if id(v) not in seen)
    return groups


def freeze_below_top_layers(encoder, trainable_layers):
    """Freezes all of `encoder` but its top `trainable_layers` blocks and what sits on them.

    What trains is the first `trainable_layers` groups of `unfreezing_groups`
    (the top block with the pooler and `final_norm`, then the blocks below,
    one by one): the embeddings and the lower blocks keep their weights, as a
    gradual unfreezing that stops at stage `trainable_layers`. The sublayers'
    own `trainable` flags are set, so the head and a scalar mix still train.

    Raises:
        ValueError: `trainable_layers` is not between 1 and the number of
            distinct blocks (named in the message).

    Examples:
    >>> from nlpzoo.layers import Encoder
    >>> encoder = Encoder(vocabulary_size=50, num_layers=3, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> freeze_below_top_layers(encoder, 1)
    >>> trained = {id(v) for v in encoder.trainable_weights}
    >>> [(group.layers, any(id(v) in trained for v in group.variables))
    ...  for group in unfreezing_groups(encoder)]
    [(('block_2', 'pooler'), True), (('block_1',), False), (('block_0',), False),
     (('embeddings',), False)]
    """
    transformer = transformer_of(encoder)
    blocks = distinct_block_count(transformer.num_layers, transformer.share_layers)
    if not 1 <= trainable_layers <= blocks:
        raise ValueError(f"trainable_layers must be between 1 and the encoder's {blocks} "
                         f"distinct blocks, got {trainable_layers}")
    groups = unfreezing_groups(encoder)
    # Only blocks and the embeddings can lie below the top group (which always trains).
    frozen = {name for group in groups[trainable_layers:] for name in group.layers}
    for layer in [transformer.embeddings, *transformer.blocks]:
        if layer.name in frozen:
            layer.trainable = False


def encoder_transformer(callback):
    """The transformer a staged-training callback works on: its own `transformer`, else
    that of `callback.model.encoder`.

    Examples:
    >>> from nlpzoo.layers import Encoder
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> encoder_transformer(GradualUnfreezing(1, transformer=encoder)) is encoder.transformer
    True
    """
    if callback.transformer is not None:
        return transformer_of(callback.transformer)
    if callback.model is None or not hasattr(callback.model, "encoder"):
        raise ValueError(f"{type(callback).__name__} needs `transformer`, or a model with "
                         "`.encoder`")
    return transformer_of(callback.model.encoder)


def used_encoder_variables(model, groups):
    """The variables of `groups` that `model` trains: without the weights its loss never
    reaches (a tagger's pooler: `EncoderTaskModel.unused_encoder_weights`).

    Examples:
    >>> import types
    >>> from nlpzoo.layers import Encoder
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                   hidden_dim=8, intermediate_dim=16)
    >>> groups = unfreezing_groups(encoder)
    >>> tagger = types.SimpleNamespace(
    ...     unused_encoder_weights=lambda: list(encoder.transformer.pooler.weights))
    >>> len(used_encoder_variables(tagger, groups)) == len(encoder.transformer.weights) - 2
    True
    """
    unused = {id(v) for v in getattr(model, "unused_encoder_weights", list)()}
    return [v for group in groups for v in group.variables if id(v) not in unused]


class GradualUnfreezing(PeriodicStages):
    """Keras callback: unfreezes the encoder group by group, top first, every `every_steps`.

    At global step s (`model.optimizer.iterations`) the stage is
    min(s // every_steps, L + 1), L the number of distinct blocks:

    - stage 0: the head only (every variable of the transformer frozen);
    - stage k, 1 ≤ k ≤ L: the top k blocks trainable; stage 1 also the
      pooler and `final_norm`, which sit on top;
    - stage L + 1: the embeddings too, i.e. everything.

    `unfreezing_groups` lists the groups; `trainable_groups(stage)` the
    ones a stage trains. How the flags are set, retraced and restored, and
    why `fit` must start with the whole encoder trainable, is
    `tasks.training.trainable_stages.TrainableStages`: the stage follows the
    optimizer's step count, so a resumed run lands in the right stage. Only
    the transformer's variables are controlled: the head always trains.

    Args:
        every_steps: the length of each stage, in optimizer steps (≥ 1).
        transformer: the `TransformerEncoder` (or encoder) to thaw; by
            default that of `model.encoder`.

    Examples:
    >>> callback = GradualUnfreezing(every_steps=100)
    >>> [callback.stage(step, num_blocks=2) for step in (0, 99, 100, 250, 300, 10_000)]
    [0, 0, 1, 2, 3, 3]
    """

    log_name = "gradual unfreezing"


    def stage(self, step, num_blocks=None):
        """The stage at global step `step` (by default for the transformer in use)."""
        if num_blocks is None:
            num_blocks = len(self.groups) - 1
        return min(int(step) // self.every_steps, num_blocks + 1)

    @property
    def groups(self):
        """`unfreezing_groups` of the transformer (found at the start of training)."""
        if self._groups is None:
            self._groups = unfreezing_groups(encoder_transformer(self))
        return self._groups

    def trainable_groups(self, stage):
        """The `UnfreezingGroup`s that are trainable at `stage`, in thawing order."""
        return self.groups[:stage]

    def controlled_variables(self):
        self._groups = None
        return used_encoder_variables(self.model, self.groups)

    def trainable_at(self, stage):
        return [v for group in self.trainable_groups(stage) for v in group.variables]

    def describe(self, stage):
        """What trains at `stage`, in words (the log line's text).

        Examples:
        >>> from nlpzoo.layers import Encoder
        >>> encoder = Encoder(vocabulary_size=50, num_layers=4, num_heads=2,
        ...                   hidden_dim=8, intermediate_dim=16)
        >>> callback = GradualUnfreezing(10, transformer=encoder)
        >>> [callback.describe(stage) for stage in (0, 1, 3, 5)]
        ['head only (encoder frozen)', 'block 3 and pooler trainable',
         'blocks 1-3 and pooler trainable', 'everything trainable (embeddings too)']
        """
        num_blocks = len(self.groups) - 1
        if stage == 0:
            return "head only (encoder frozen)"
        if stage > num_blocks:
            return "everything trainable (embeddings too)"
        top = [name for name in self.groups[0].layers if not name.startswith("block_")]
        lowest = num_blocks - stage
        blocks = (f"block {lowest}" if stage == 1
                  else f"blocks {lowest}-{num_blocks - 1}")
        return f"{blocks} and {' and '.join(top)} trainable"
