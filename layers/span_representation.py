"""Span vectors: boundary words, pooled content and a width embedding."""

import keras
from keras import ops

from nlpzoo.layers.position_gather import gather_positions
from nlpzoo.layers.serialization import register

_TERMS = ("x", "y", "x*y", "x+y", "x-y")
_POOLINGS = (None, "mean", "attention")

# Score of the window positions past the last word (attention pooling).
# Finite, so no inf - inf = NaN; its exp() next to any real score is 0.
_MASKED_SCORE = -1e9


def _parse_combination(combination):
    terms = [t.strip() for t in (combination or "").split(",") if t.strip()]
    for term in terms:
        if term not in _TERMS:
            raise ValueError(
                f"unknown term {term!r} in combination {combination!r}; "
                f"allowed terms are {', '.join(_TERMS)}"
            )
    return terms


@register
class SpanRepresentation(keras.layers.Layer):
    """One vector per span from word vectors (SLP3 section 11.3.4).

    The output of span (i, j) (inclusive end) is the concatenation, in this
    order, of:

    1. the `combination` terms, left to right. `x` is the start word's
       vector and `y` the end word's: h_i and h_j, or, when
       `start_end_ffnn_dim` > 0, s_i = FFNN_start(h_i) and e_j = FFNN_end(h_j)
       (each one dense layer with `ffnn_activation`), which then replace the
       raw boundary vectors. Terms are `x`, `y`, `x*y`, `x+y`, `x-y`
       (element-wise), e.g. "x,y" or "x,y,x*y" (as in AllenNLP's endpoint
       extractor). An empty string gives no boundary terms.
    2. a content summary of h_i..h_j when `pooling` is set: `"mean"`, or
       `"attention"` (self-attentive pooling: a dense layer scores each word,
       a_t = w . h_t + b, and the summary is sum_t softmax(a)_t h_t with the
       softmax over the words of the span only; with w = 0 it is the mean).
    3. a learned embedding of the width j - i + 1 when `width_embedding_dim`
       > 0 (row width - 1; widths above `max_span_width` use the last row).

    So D = len(terms) * (start_end_ffnn_dim or H) + (H if pooling)
    + width_embedding_dim. Spans whose `span_mask` is 0 get a zero vector;
    their indices may be anything (they are clipped into range).

    Memory (no B x S x L x H tensor is ever built; S spans of up to L words
    over T words of width H, batch B):

    - boundary terms gather [B, S, H] (or [B, S, F]) rows with flat indices;
      FFNNs run on the T words before the gather, not on the S spans.
    - mean pooling: prefix sums over the words ([B, T + 1, H], float32), two
      [B, S, H] float32 gathers (at end + 1 and start) and a difference.
      Float32 prefix sums lose about T * 1e-7 relative precision.
    - attention pooling: an online (running-max) softmax walks the L
      window offsets over all T start positions at once, keeping [B, T, H]
      float32 running sums, and stacks the weighted means of every
      (start, width) into one [B, T, L, H] tensor in the compute dtype, from
      which the S spans are gathered. Training keeps O(L) [B, T, H]
      intermediates for the backward pass: O(B T L H) in all.

    For B=32, T=128, L=10, H=256 (S=1235): the largest pieces are
    [B, T, L, H] = 10.5M elements (attention window tensor) and
    [B, S, H] = 10.1M per piece (the output [B, S, D] is the largest of all
    when D > H); the naive windowed gather [B, S, L, H] would be 101M.

    Scores, softmax and sums are float32 under mixed precision; the output
    is in the compute dtype. H must be static; T may be dynamic.

    Args:
        combination: comma-separated boundary terms (see above).
        max_span_width: L, the widest span; needed for `pooling="attention"`
            and for the width embedding.
        width_embedding_dim: width of the span-width embedding (0: none).
        start_end_ffnn_dim: width F of the start and end FFNNs (0: none).
        pooling: None, `"mean"` or `"attention"`.
        ffnn_activation: activation of the start and end FFNNs.
        initializer_range: stddev of the truncated-normal initialisers.

    Call arguments:
        sequence: [B, T, H] word vectors.
        span_starts: [B, S] int start word of each span.
        span_ends: [B, S] int inclusive end word of each span.
        span_mask: optional [B, S] 0/1 mask of real spans.

    Returns:
        [B, S, D] span vectors in the compute dtype.

    Examples:
    >>> import numpy as np
    >>> layer = SpanRepresentation(
    ...     combination="x,y", max_span_width=3, width_embedding_dim=4,
    ...     pooling="attention")
    >>> sequence = np.random.rand(2, 5, 8).astype("float32")
    >>> starts = np.array([[0, 1, 2], [0, 3, 4]])
    >>> ends = np.array([[0, 3, 4], [2, 3, 4]])
    >>> mask = np.array([[1, 1, 1], [1, 1, 0]])
    >>> out = layer(sequence=sequence, span_starts=starts, span_ends=ends,
    ...             span_mask=mask)
    >>> tuple(out.shape)  # 8 + 8 + 8 + 4
    (2, 3, 28)
    >>> float(np.abs(np.asarray(out)[1, 2]).max())  # a masked span
    0.0
    """

    def __init__(
        self,
        combination="x,y",
        max_span_width=None,
        width_embedding_dim=0,
        start_end_ffnn_dim=0,
        pooling=None,
        ffnn_activation="relu",
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.combination = combination or ""
        self.terms = _parse_combination(self.combination)
        self.max_span_width = int(max_span_width) if max_span_width else None
        self.width_embedding_dim = int(width_embedding_dim or 0)
        self.start_end_ffnn_dim = int(start_end_ffnn_dim or 0)
        if pooling not in _POOLINGS:
            raise ValueError(f"pooling must be one of {_POOLINGS}, got {pooling!r}")
        self.pooling = pooling
        self.ffnn_activation = ffnn_activation
        self.initializer_range = float(initializer_range)
        if self.max_span_width is None and (
            self.width_embedding_dim or pooling == "attention"
        ):
            raise ValueError(
                "max_span_width is needed for a width embedding and for "
                "attention pooling"
            )
        if not (self.terms or self.pooling or self.width_embedding_dim):
            raise ValueError("the span representation would be empty")
        self.uses_x = any("x" in term for term in self.terms)
        self.uses_y = any("y" in term for term in self.terms)

        # === Layers ===
        def initializer():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        def ffnn(name):
            return keras.layers.Dense(
                self.start_end_ffnn_dim,
                activation=ffnn_activation,
                kernel_initializer=initializer(),
                dtype=self.dtype_policy,
                name=name,
            )

        use_ffnn = self.start_end_ffnn_dim > 0
        self.start_ffnn = ffnn("start_ffnn") if use_ffnn and self.uses_x else None
        self.end_ffnn = ffnn("end_ffnn") if use_ffnn and self.uses_y else None
        self.attention_scorer = None
        if pooling == "attention":
            # float32: the scores feed a softmax.
            self.attention_scorer = keras.layers.Dense(
                1,
                kernel_initializer=initializer(),
                dtype="float32",
                name="attention_scorer",
            )
        self.width_embedding = None
        if self.width_embedding_dim:
            self.width_embedding = keras.layers.Embedding(
                self.max_span_width,
                self.width_embedding_dim,
                embeddings_initializer=initializer(),
                dtype=self.dtype_policy,
                name="width_embedding",
            )

    def build(
        self,
        sequence_shape,
        span_starts_shape=None,
        span_ends_shape=None,
        span_mask_shape=None,
    ):
        for layer in (self.start_ffnn, self.end_ffnn, self.attention_scorer):
            if layer is not None:
                layer.build(sequence_shape)
        if self.width_embedding is not None:
            self.width_embedding.build(span_starts_shape)
        self.built = True

    def output_dim(self, hidden_dim):
        """D for word vectors of width `hidden_dim`."""
        boundary = self.start_end_ffnn_dim or hidden_dim
        pooled = hidden_dim if self.pooling else 0
        return len(self.terms) * boundary + pooled + self.width_embedding_dim

    def call(self, sequence, span_starts, span_ends, span_mask=None):
        if sequence.shape[-1] is None:
            raise ValueError(
                "SpanRepresentation needs a static vector width, "
                f"got sequence shape {tuple(sequence.shape)}"
            )
        # The number of words may be dynamic (bucketed batches): XLA compiles
        # one program per bucket length.
        num_words = ops.shape(sequence)[1]
        starts = ops.clip(ops.cast(span_starts, "int32"), 0, num_words - 1)
        ends = ops.minimum(
            ops.maximum(ops.cast(span_ends, "int32"), starts), num_words - 1
        )
        pieces = []
        if self.terms:
            x = y = None
            if self.uses_x:
                table = sequence
                if self.start_ffnn is not None:
                    table = self.start_ffnn(sequence)
                x = gather_positions(table, starts)
            if self.uses_y:
                table = sequence
                if self.end_ffnn is not None:
                    table = self.end_ffnn(sequence)
                y = gather_positions(table, ends)
            combine = {
                "x": lambda: x,
                "y": lambda: y,
                "x*y": lambda: x * y,
                "x+y": lambda: x + y,
                "x-y": lambda: x - y,
            }
            pieces.extend(combine[term]() for term in self.terms)
        if self.pooling == "mean":
            pieces.append(self._mean_pool(sequence, starts, ends))
        elif self.pooling == "attention":
            pieces.append(self._attention_pool(sequence, starts, ends))
        if self.width_embedding is not None:
            width_ids = ops.minimum(ends - starts, self.max_span_width - 1)
            pieces.append(self.width_embedding(width_ids))

        pieces = [ops.cast(piece, self.compute_dtype) for piece in pieces]
        outputs = pieces[0] if len(pieces) == 1 else ops.concatenate(pieces, axis=-1)
        if span_mask is not None:
            outputs = outputs * ops.cast(span_mask, self.compute_dtype)[:, :, None]
        return outputs

    def _mean_pool(self, sequence, starts, ends):
        """Mean of h_i..h_j from float32 prefix sums: (P[j + 1] - P[i]) / width."""
        prefix = ops.cumsum(ops.cast(sequence, "float32"), axis=1)
        prefix = ops.pad(prefix, [[0, 0], [1, 0], [0, 0]])  # P[0] = 0
        total = gather_positions(prefix, ends + 1) - gather_positions(prefix, starts)
        width = ops.cast(ends - starts + 1, "float32")[:, :, None]
        return total / width

    def _attention_pool(self, sequence, starts, ends):
        """Softmax-weighted mean within each span, via an online softmax.

        For every start t and offset l < L it keeps the
        running max m, numerator sum_k exp(a_{t+k} - m) h_{t+k} and
        denominator sum_k exp(a_{t+k} - m) of the window t..t+l; the ratio is
        the pooled vector of span (t, t + l). The denominator is >= 1 (the
        max term is exp(0)), so nothing underflows to 0 / 0.
        """
        num_words, hidden_dim = ops.shape(sequence)[1], sequence.shape[2]
        window = self.max_span_width
        scores = self.attention_scorer(sequence)[:, :, 0]  # float32 [B, T]
        values = ops.cast(sequence, "float32")
        pad = window - 1
        scores_padded = ops.pad(
            scores, [[0, 0], [0, pad]], constant_values=_MASKED_SCORE
        )
        values_padded = ops.pad(values, [[0, 0], [0, pad], [0, 0]])

        running_max = scores
        numerator = values
        denominator = ops.ones_like(scores)
        pooled = [ops.cast(values, self.compute_dtype)]  # width-1 spans
        for offset in range(1, window):
            score = scores_padded[:, offset : offset + num_words]
            value = values_padded[:, offset : offset + num_words]
            new_max = ops.maximum(running_max, score)
            rescale = ops.exp(running_max - new_max)
            weight = ops.exp(score - new_max)
            numerator = numerator * rescale[:, :, None] + weight[:, :, None] * value
            denominator = denominator * rescale + weight
            running_max = new_max
            pooled.append(
                ops.cast(numerator / denominator[:, :, None], self.compute_dtype)
            )
        # [B, T, W, H] -> [B, T * W, H]; span (i, j) is row i * W + (j - i).
        pooled = ops.reshape(
            ops.stack(pooled, axis=2), (ops.shape(sequence)[0], -1, hidden_dim)
        )
        offsets = ops.minimum(ends - starts, window - 1)
        return gather_positions(pooled, starts * window + offsets)

    def compute_output_shape(
        self,
        sequence_shape,
        span_starts_shape=None,
        span_ends_shape=None,
        span_mask_shape=None,
    ):
        return (
            sequence_shape[0],
            span_starts_shape[1],
            self.output_dim(sequence_shape[-1]),
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "combination": self.combination,
                "max_span_width": self.max_span_width,
                "width_embedding_dim": self.width_embedding_dim,
                "start_end_ffnn_dim": self.start_end_ffnn_dim,
                "pooling": self.pooling,
                "ffnn_activation": self.ffnn_activation,
                "initializer_range": self.initializer_range,
            }
        )
        return config
