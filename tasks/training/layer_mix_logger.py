"""The learned weights of an encoder's scalar mix, written to TensorBoard after every epoch."""

import os

import keras
import numpy as np
import tensorflow as tf

from nlpzoo.tasks.training.scalar_summaries import write_scalars


def scalar_mix_of(model):
    """The model's encoder's scalar mix (`layers.LayerMix`, mode "scalar_mix"), or None.

    Examples:
    >>> import types
    >>> from nlpzoo.layers import Encoder
    >>> def tagger(layer_mix):  # what the function reads of a task model: its `encoder`
    ...     return types.SimpleNamespace(encoder=Encoder(
    ...         vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8,
    ...         intermediate_dim=16, layer_mix=layer_mix))
    >>> scalar_mix_of(tagger("scalar_mix")).name, scalar_mix_of(tagger("last"))
    ('layer_mix', None)
    """
    encoder = getattr(model, "encoder", None)
    if encoder is None or not hasattr(encoder, "get_layer"):
        return None
    try:
        mix = encoder.get_layer("layer_mix")
    except ValueError:  # no such layer: the encoder's last layer is its output
        return None
    return mix if getattr(mix, "mode", None) == "scalar_mix" else None


def scalar_mix_scalars(mix):
    """{tag: value}: softmax(w)_j of each mixed layer (`layer_mix/layer_j`, j = 0 the
    embeddings) and the scale γ (`layer_mix/scale`).

    Examples:
    >>> from nlpzoo.layers import LayerMix
    >>> mix = LayerMix("scalar_mix")
    >>> _ = mix([np.zeros((1, 2, 3), "float32")] * 3)
    >>> _ = mix.logits.assign([0.0, 0.0, np.log(2.0)])
    >>> {tag: round(value, 4) for tag, value in scalar_mix_scalars(mix).items()}
    {'layer_mix/layer_0': 0.25, 'layer_mix/layer_1': 0.25, 'layer_mix/layer_2': 0.5, \
'layer_mix/scale': 1.0}
    """
    weights = np.asarray(keras.ops.convert_to_numpy(mix.mixing_weights()), np.float64)
    scalars = {f"layer_mix/layer_{index}": float(weight) for index, weight in enumerate(weights)}
    scalars["layer_mix/scale"] = float(np.asarray(mix.scale))
    return scalars


class LayerMixLogger(keras.callbacks.Callback):
    """Writes the scalar mix's layer weights and scale to `<log_dir>/train` after every
    epoch (at step `epoch`, as Keras's epoch scalars): which layers the head learned to
    read (Peters et al. 2018; Tenney et al. 2019 read them as a layer attribution).
    A model without a scalar mix is left alone.

    Args:
        log_dir: the run's TensorBoard folder (`<model_dir>/logs`).

    Examples:
    >>> LayerMixLogger("/tmp/no-such-run/logs").log_dir
    '/tmp/no-such-run/logs'
    """

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
        self._writer = None

    def on_epoch_end(self, epoch, logs=None):
        mix = scalar_mix_of(self.model)
        if mix is None:
            return
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(os.path.join(self.log_dir, "train"))
        write_scalars(self._writer, scalar_mix_scalars(mix), epoch)

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
