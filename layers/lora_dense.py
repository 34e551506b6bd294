"""`keras.layers.Dense` with Keras's own LoRA, whose saved files keep the LoRA factors."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


@register
class LoraDense(keras.layers.Dense):
    """A `Dense` layer that saves its LoRA factors instead of merging them.

    LoRA itself is Keras's (`Dense(lora_rank=r)` / `enable_lora`: a frozen
    kernel plus `lora_alpha / r · A·B`, A he-uniform, B zero). What changes is
    the weight file. Keras's `Dense` saves the kernel with A·B merged in and,
    on load, sets A and B to zero: the reloaded layer predicts the same, but
    with both factors at zero neither gets a gradient again, so a run resumed
    from a checkpoint, or a saved model trained further, silently stops
    learning. This layer saves the frozen kernel, the bias, A and B as they
    are, so a reload is exactly the trained layer. Without LoRA it saves and
    loads exactly as `Dense`. Files written by a plain LoRA `Dense` (merged
    kernel) still load: the factors then restart from Keras's initialisers.

    Args:
        As `keras.layers.Dense` (`lora_rank`, `lora_alpha` included).

    Examples:
    >>> import numpy as np
    >>> layer = LoraDense(4, lora_rank=2)
    >>> layer.build((None, 3))
    >>> sorted(v.name for v in layer.trainable_weights)
    ['bias', 'lora_kernel_a', 'lora_kernel_b']
    >>> x = np.ones((1, 3), "float32")
    >>> bool(np.allclose(layer(x), x @ np.asarray(layer._kernel) + np.asarray(layer.bias)))
    True
    """

    def _lora_variables(self):
        variables = [self._kernel]
        if self.bias is not None:
            variables.append(self.bias)
        return variables + [self.lora_kernel_a, self.lora_kernel_b]

    def save_own_variables(self, store):
        if not (self.built and self.lora_enabled) or self.quantization_mode is not None:
            return super().save_own_variables(store)
        for index, variable in enumerate(self._lora_variables()):
            store[str(index)] = variable

    def load_own_variables(self, store):
        variables = self._lora_variables() if self.built and self.lora_enabled else None
        if (variables is None or self.quantization_mode is not None
                or len(store.keys()) != len(variables)):
            super().load_own_variables(store)
            if variables is not None and self.quantization_mode is None:
                # A merged-kernel file: restart the factors so that they can learn again.
                self.lora_kernel_a.assign(keras.initializers.HeUniform()(
                    self.lora_kernel_a.shape, dtype="float32"))
            return
        for index, variable in enumerate(variables):
            variable.assign(ops.convert_to_tensor(store[str(index)], variable.dtype))
