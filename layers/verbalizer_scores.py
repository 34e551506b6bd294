"""Class scores from masked-LM logits: each label word's mean log-probability at the masks."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


@register
class VerbalizerScores(keras.layers.Layer):
    """Masked-LM logits at the masks → one score per class, averaged over patterns.

    A label word of m pieces scores the mean, over its pieces j < m, of the
    log-probability (log-softmax over the whole vocabulary) of piece j at
    mask j; the class score is that score averaged over the P patterns. The
    rows of `logits` are pattern-major within an example: row b·P + p is
    example b under pattern p (`PatternRows`).

    Args:
        num_patterns: P, the patterns of each example.

    Call arguments:
        logits: float [B·P, n, V], the masked-LM logits at the n masks.
        label_piece_ids: int [B, C, n], each class's word pieces, -1 past its
            end (the first piece of every word is real).

    Returns:
        float32 [B, C] (it computes in float32 under every dtype policy).

    Examples:
    >>> import numpy as np
    >>> logits = np.log(np.array([[[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]], "float32"))
    >>> scores = VerbalizerScores()(logits, np.array([[[0, -1], [1, 2]]]))
    >>> [round(float(p), 4) for p in np.exp(scores.numpy())[0]]  # 0.5; sqrt(0.25 · 0.8)
    [0.5, 0.4472]
    >>> VerbalizerScores(dtype="mixed_bfloat16").dtype_policy.name  # float32 whatever the policy
    'float32'
    """

    def __init__(self, num_patterns=1, **kwargs):
        # float32 under every dtype policy: a bfloat16 log-softmax over a vocabulary of tens
        # of thousands keeps 2-3 digits, too few to tell label words apart.
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)
        if int(num_patterns) < 1:
            raise ValueError(f"num_patterns must be at least 1, got {num_patterns}")
        self.num_patterns = int(num_patterns)

    def call(self, logits, label_piece_ids):
        log_probabilities = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
        ids = ops.cast(label_piece_ids, "int32")
        # Every pattern row of an example reads the same label pieces: [B·P, n, C].
        ids = ops.transpose(ops.repeat(ids, self.num_patterns, axis=0), (0, 2, 1))
        real = ops.cast(ids >= 0, "float32")
        picked = ops.take_along_axis(log_probabilities, ops.maximum(ids, 0), axis=2)
        scores = ops.sum(picked * real, axis=1) / ops.maximum(ops.sum(real, axis=1), 1.0)
        classes = ops.shape(scores)[-1]
        return ops.mean(ops.reshape(scores, (-1, self.num_patterns, classes)), axis=1)

    def compute_output_shape(self, logits_shape, label_piece_ids_shape):
        return (label_piece_ids_shape[0], label_piece_ids_shape[1])

    def get_config(self):
        config = super().get_config()
        config["num_patterns"] = self.num_patterns
        return config
