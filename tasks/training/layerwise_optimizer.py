"""AdamW with a learning rate per part of an encoder-plus-head model.

Two knobs of the fine-tuning literature, read from each variable's path (so
they hold for every task model, and survive saving: the rule is saved, not a
list of variables):

- the head — everything outside the encoder's `transformer` layer, which
  starts from scratch — learns at `head_multiplier` × the learning rate
  (heads and CRF transitions want far larger steps than a pretrained encoder);
- discriminative fine-tuning (ULMFiT; Howard & Ruder 2018): block `l` of `L`
  learns at `layer_decay ** (L - 1 - l)` × the rate, the embeddings at
  `layer_decay ** L`, the top block and the pooler at the rate itself.
"""

import re

import keras
from keras import ops

from nlpzoo.layers.keras_internals import (
    WithoutSharedWeightDecay,
    uses_weight_decay,
    variable_key,
)

ENCODER_SCOPE = "transformer"
_BLOCK = re.compile(rf"^{ENCODER_SCOPE}/block_(\d+)/")


@keras.saving.register_keras_serializable(package="nlpzoo")
class LayerwiseAdamW(WithoutSharedWeightDecay, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` whose step (and decoupled weight decay) is scaled per variable.

    Args:
        head_multiplier: learning-rate factor of the variables outside the
            encoder (the task head).
        layer_decay: ξ; block `l` of `num_layers` gets ξ^(num_layers − 1 − l),
            the embeddings ξ^num_layers (1.0: off).
        num_layers: the encoder's number of blocks (needed with `layer_decay`).
        **kwargs: `AdamW` arguments.

    Examples:
    >>> optimizer = LayerwiseAdamW(head_multiplier=10.0, layer_decay=0.5, num_layers=2,
    ...                            learning_rate=1e-3)
    >>> [optimizer.multiplier(path) for path in ("transformer/embeddings/token/embeddings",
    ...     "transformer/block_0/output/kernel", "transformer/block_1/output/kernel",
    ...     "transformer/pooler/kernel", "crf/transitions")]
    [0.25, 0.5, 1.0, 1.0, 10.0]
    """

    def __init__(self, head_multiplier=1.0, layer_decay=1.0, num_layers=None, **kwargs):
        super().__init__(**kwargs)
        if head_multiplier <= 0 or not 0 < layer_decay <= 1:
            raise ValueError(f"need head_multiplier > 0 and 0 < layer_decay <= 1, got "
                             f"{head_multiplier} and {layer_decay}")
        if layer_decay != 1 and not num_layers:
            raise ValueError("layer_decay needs the encoder's num_layers")
        self.head_multiplier = float(head_multiplier)
        self.layer_decay = float(layer_decay)
        self.num_layers = None if num_layers is None else int(num_layers)

    def multiplier(self, path):
        """The learning-rate factor of the variable at `path` (e.g. "transformer/block_3/...")."""
        if not path.startswith(ENCODER_SCOPE + "/"):
            return self.head_multiplier
        if self.layer_decay == 1:
            return 1.0
        block = _BLOCK.match(path)
        if block:
            return self.layer_decay ** (self.num_layers - 1 - int(block.group(1)))
        if path.startswith(f"{ENCODER_SCOPE}/embeddings/"):
            return self.layer_decay ** self.num_layers
        return 1.0  # the pooler, and a block shared by every layer (ALBERT)

    def build(self, var_list):
        super().build(var_list)
        # update_step sees backend variables (no `path`): look factors up by the key the
        # optimizer itself uses for them.
        self._factors = {variable_key(self, variable): self.multiplier(variable.path)
                         for variable in var_list}

    def update_step(self, gradient, variable, learning_rate):
        factor = self._factors.get(variable_key(self, variable), 1.0)
        learning_rate = ops.cast(learning_rate, variable.dtype)
        if factor != 1:
            learning_rate = learning_rate * ops.cast(factor, variable.dtype)
        if self.weight_decay is not None and uses_weight_decay(self, variable):
            # Decoupled weight decay at the variable's own rate, before the Adam step as
            # AdamW does it (`WithoutSharedWeightDecay` switches the shared pass off).
            decay = ops.cast(self.weight_decay, variable.dtype) * learning_rate
            variable.assign(variable - variable * decay)
        super().update_step(gradient, variable, learning_rate)

    def get_config(self):
        config = super().get_config()
        config.update(head_multiplier=self.head_multiplier, layer_decay=self.layer_decay,
                      num_layers=self.num_layers)
        return config
