"""Every span of at most `max_span_width` words, as static index arrays."""

import keras
import numpy as np
from keras import ops

from layers.serialization import register


def num_spans(num_words, max_span_width):
    """How many spans `enumerate_spans(num_words, max_span_width)` lists.

    It is sum_{w=1..min(L, T)} (T - w + 1) for T words and width limit L; when
    L >= T that is T (T + 1) / 2.

    Examples:
    >>> num_spans(5, 2), num_spans(4, 10)
    (9, 10)
    """
    num_words, max_span_width = _check(num_words, max_span_width)
    widest = min(max_span_width, num_words)
    return sum(num_words - width + 1 for width in range(1, widest + 1))


def enumerate_spans(num_words, max_span_width):
    """Start and inclusive end of every span of 1..`max_span_width` words.

    Spans are listed by width, then by start: first the `num_words` one-word
    spans (0, 0), (1, 1), ..., then the two-word spans (0, 1), (1, 2), ...,
    and so on. So span k of the one-word block is word k, and each width is a
    contiguous block. Widths above `num_words` add nothing.

    Args:
        num_words: T, the (padded) number of words; 0 gives no spans.
        max_span_width: L >= 1, the widest span in words.

    Returns:
        `(starts, ends)`: int32 NumPy arrays of shape [S] with
        S = `num_spans(num_words, max_span_width)`, 0 <= starts <= ends < T
        and ends - starts + 1 <= L.

    Examples:
    >>> starts, ends = enumerate_spans(3, 2)
    >>> starts.tolist(), ends.tolist()
    ([0, 1, 2, 0, 1], [0, 1, 2, 1, 2])
    """
    num_words, max_span_width = _check(num_words, max_span_width)
    starts, ends = [], []
    for width in range(1, min(max_span_width, num_words) + 1):
        block = np.arange(num_words - width + 1, dtype="int32")
        starts.append(block)
        ends.append(block + (width - 1))
    if not starts:
        return np.zeros((0,), "int32"), np.zeros((0,), "int32")
    return np.concatenate(starts), np.concatenate(ends)


def _check(num_words, max_span_width):
    if int(num_words) != num_words or num_words < 0:
        raise ValueError(f"num_words must be an integer >= 0, got {num_words}")
    if int(max_span_width) != max_span_width or max_span_width < 1:
        raise ValueError(
            f"max_span_width must be an integer >= 1, got {max_span_width}"
        )
    return int(num_words), int(max_span_width)


@register
class SpanEnumeration(keras.layers.Layer):
    """Lists every span of up to `max_span_width` words, with a span mask.

    The spans are the same for every sentence of a batch: those of
    `enumerate_spans(T, max_span_width)` for the static padded length T of
    `word_mask` (ordered by width, then start). A span is real (`span_mask`
    1) when both its first and last word are real words (`word_mask` 1);
    with right padding that means every word in it is real. The number of
    spans S grows as T * L, never T^2 (unless L >= T). T must be known
    statically: the spans are constants, so the layer compiles under XLA.

    The layer has no weights.

    Args:
        max_span_width: L >= 1, the widest span in words.

    Call arguments:
        word_mask: [B, T] 0/1 (or bool) mask of real words, static T.

    Returns:
        A dict with `span_starts`, `span_ends` (inclusive) and `span_mask`,
        each [B, S] int32; it can be unpacked into `SpanRepresentation`.

    Examples:
    >>> import numpy as np
    >>> layer = SpanEnumeration(max_span_width=2)
    >>> spans = layer(np.array([[1, 1, 0], [1, 1, 1]]))
    >>> np.asarray(spans["span_starts"]).tolist()
    [[0, 1, 2, 0, 1], [0, 1, 2, 0, 1]]
    >>> np.asarray(spans["span_ends"]).tolist()
    [[0, 1, 2, 1, 2], [0, 1, 2, 1, 2]]
    >>> np.asarray(spans["span_mask"]).tolist()
    [[1, 1, 0, 1, 0], [1, 1, 1, 1, 1]]
    """

    def __init__(self, max_span_width, **kwargs):
        super().__init__(**kwargs)
        _, self.max_span_width = _check(0, max_span_width)

    def _num_words(self, word_mask_shape):
        if len(word_mask_shape) != 2 or word_mask_shape[1] is None:
            raise ValueError(
                "SpanEnumeration needs a [batch, words] word_mask with a static "
                f"number of words, got shape {tuple(word_mask_shape)}"
            )
        return int(word_mask_shape[1])

    def call(self, word_mask):
        starts, ends = enumerate_spans(
            self._num_words(word_mask.shape), self.max_span_width
        )
        word_mask = ops.cast(ops.cast(word_mask, "bool"), "int32")
        # [B, S] copies of the constant spans, without a dynamic-shape op.
        zeros = ops.zeros_like(word_mask[:, :1])
        span_starts = zeros + ops.convert_to_tensor(starts)[None, :]
        span_ends = zeros + ops.convert_to_tensor(ends)[None, :]
        span_mask = ops.take(word_mask, starts, axis=1) * ops.take(
            word_mask, ends, axis=1
        )
        return {
            "span_starts": span_starts,
            "span_ends": span_ends,
            "span_mask": span_mask,
        }

    def compute_output_spec(self, word_mask):
        shape = (
            word_mask.shape[0],
            num_spans(self._num_words(word_mask.shape), self.max_span_width),
        )
        return {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in ("span_starts", "span_ends", "span_mask")
        }

    def get_config(self):
        config = super().get_config()
        config.update({"max_span_width": self.max_span_width})
        return config
