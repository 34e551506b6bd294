"""Every span of up to L words, laid out as a [words, L] grid (dynamic length)."""

import keras
from keras import ops

from nlpzoo.layers.serialization import register


@register
class SpanGrid(keras.layers.Layer):
    """Lists the spans (i, i + w) for every start i < T and width w + 1 ≤ L.

    Span k = i * L + w starts at word i and ends (inclusive) at word i + w,
    so per-span labels can be stored as a [T, L] matrix and flattened. Spans
    that run past the last real word are listed but masked; there are T·L
    of them, of which Σ_{w=1..L} (T − w + 1) are valid when all T words are
    real. T may be dynamic, so one model serves every bucket length.

    Call with `word_mask` [B, T] (1 for real words, right-padded); returns a
    dict of `span_starts`, `span_ends`, `span_mask`, each [B, T·L] int32.

    Examples:
    >>> import numpy as np
    >>> grid = SpanGrid(max_span_width=2)(np.array([[1, 1, 0]]))
    >>> grid["span_starts"].numpy().tolist(), grid["span_ends"].numpy().tolist()
    ([[0, 0, 1, 1, 2, 2]], [[0, 1, 1, 2, 2, 3]])
    >>> grid["span_mask"].numpy().tolist()
    [[1, 1, 1, 0, 0, 0]]
    """

    def __init__(self, max_span_width, **kwargs):
        super().__init__(**kwargs)
        if int(max_span_width) < 1:
            raise ValueError(f"max_span_width must be >= 1, got {max_span_width}")
        self.max_span_width = int(max_span_width)

    def call(self, word_mask):
        width = self.max_span_width
        real = ops.cast(word_mask, "int32")
        batch, num_words = ops.shape(real)[0], ops.shape(real)[1]
        starts = ops.repeat(ops.arange(num_words, dtype="int32"), width)
        ends = starts + ops.tile(ops.arange(width, dtype="int32"), [num_words])
        # Past the last position counts as padding.
        padded = ops.pad(real, [[0, 0], [0, width]])
        mask = ops.take(real, starts, axis=1) * ops.take(padded, ends, axis=1)
        shape = (batch, num_words * width)
        return {
            "span_starts": ops.broadcast_to(starts[None, :], shape),
            "span_ends": ops.broadcast_to(ends[None, :], shape),
            "span_mask": mask,
        }

    def compute_output_spec(self, word_mask):
        batch, num_words = word_mask.shape[0], word_mask.shape[1]
        spans = None if num_words is None else num_words * self.max_span_width
        # One KerasTensor per output: a shared one would alias them in a functional graph.
        return {name: keras.KerasTensor((batch, spans), dtype="int32")
                for name in ("span_starts", "span_ends", "span_mask")}

    def get_config(self):
        config = super().get_config()
        config.update({"max_span_width": self.max_span_width})
        return config
