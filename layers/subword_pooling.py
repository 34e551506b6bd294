"""Word vectors from all of a word's subwords: its first, last, mean or element-wise max."""

import keras
from keras import ops

from nlpzoo.layers.position_gather import gather_positions
from nlpzoo.layers.serialization import register

SUBWORD_POOLINGS = ("first", "last", "mean", "max")


@register
class SubwordPooling(keras.layers.Layer):
    """Pools each word's span of subword vectors into one vector per word.

    Word `w` of row `b` covers the subword positions `starts[b, w]` up to
    `ends[b, w]` (exclusive); the output is left-aligned over words, one
    vector per (b, w), like `PositionGather`:

    - `mode="first"`: the vector at `starts` (the usual BERT tagger);
    - `mode="last"`: the vector at `ends - 1`;
    - `mode="mean"`: the mean of the span's vectors;
    - `mode="max"`: their element-wise maximum.

    (Flair's `subtoken_pooling`.) An empty span (`ends <= starts`: a padded
    word) gives zeros, and no position outside a word's span reaches its
    vector. Spans must not overlap (a subword belongs to one word; word spans
    never overlap): under `max`, a position inside two spans counts for the
    first only. Means and maxima run in float32 whatever the dtype policy;
    the output has the compute dtype.

    Args:
        mode: one of `SUBWORD_POOLINGS`.

    Call args:
        sequence: [B, T, H] subword vectors.
        starts: int [B, W], each word's first subword position.
        ends: int [B, W], one past each word's last subword position.

    Examples:
    >>> import numpy as np
    >>> x = np.array([[[1., 2.], [3., 0.], [5., 6.], [9., 9.]]], "float32")
    >>> starts, ends = np.array([[0, 2, 0]]), np.array([[2, 3, 0]])
    >>> SubwordPooling("mean")(x, starts, ends).numpy().tolist()
    [[[2.0, 1.0], [5.0, 6.0], [0.0, 0.0]]]
    >>> SubwordPooling("max")(x, starts, ends).numpy().tolist()
    [[[3.0, 2.0], [5.0, 6.0], [0.0, 0.0]]]
    >>> SubwordPooling("last")(x, starts, ends).numpy().tolist()
    [[[3.0, 0.0], [5.0, 6.0], [0.0, 0.0]]]
    """

    def __init__(self, mode="first", **kwargs):
        super().__init__(**kwargs)
        if mode not in SUBWORD_POOLINGS:
            raise ValueError(f"mode must be one of {', '.join(SUBWORD_POOLINGS)}, "
                             f"got {mode!r}")
        self.mode = mode

    def call(self, sequence, starts, ends):
        starts, ends = ops.cast(starts, "int32"), ops.cast(ends, "int32")
        real = ends > starts  # [B, W]; padded words have empty spans
        if self.mode in ("first", "last"):
            # One position per word: a gather, in the input's own dtype.
            words = gather_positions(sequence, starts if self.mode == "first" else ends - 1)
        else:
            x = ops.cast(sequence, "float32")
            positions = ops.arange(ops.shape(x)[1], dtype="int32")[None, None, :]
            inside = (positions >= starts[:, :, None]) & (positions < ends[:, :, None])
            if self.mode == "mean":
                # [B, W, T] span indicator @ [B, T, H]: the span sums, no [B, W, T, H] tensor.
                member = ops.cast(inside, "float32")
                sums = ops.matmul(member, x)
                words = sums / ops.maximum(ops.sum(member, axis=-1), 1.0)[:, :, None]
            else:
                words = _span_max(x, inside)
        words = ops.where(real[:, :, None], words, ops.zeros_like(words))
        return ops.cast(words, self.compute_dtype)

    def compute_output_shape(self, sequence_shape, starts_shape, ends_shape):
        return tuple(starts_shape) + tuple(sequence_shape[2:])

    def get_config(self):
        config = super().get_config()
        config["mode"] = self.mode
        return config


def _span_max(x, inside):
    """Element-wise max of x [B, T, H] over each span of `inside` [B, W, T] (float32).

    Each position goes to the segment of the (first) word that contains it,
    or to one spare segment when it is in none (`[CLS]`, `[SEP]`, context,
    padding); one segment max over [B · T, H] then gives every word's
    maximum, without a [B, W, T, H] tensor. Empty words come out as the
    lowest float; the caller zeroes them.
    """
    shape = ops.shape(inside)
    batch, num_words = shape[0], shape[1]
    word = ops.cast(ops.argmax(ops.cast(inside, "int32"), axis=1), "int32")  # [B, T]
    in_a_word = ops.any(inside, axis=1)
    rows = ops.arange(batch, dtype="int32")[:, None] * num_words
    spare = batch * num_words
    segments = ops.where(in_a_word, word + rows, spare)
    maxima = ops.segment_max(ops.reshape(x, (-1, ops.shape(x)[-1])),
                             ops.reshape(segments, (-1,)), num_segments=spare + 1)
    return ops.reshape(maxima[:-1], (batch, num_words, ops.shape(x)[-1]))
