"""Linear-chain conditional random field: likelihood, partition function, marginals,
Viterbi."""

import keras
import numpy as np
from keras import ops

from nlpzoo.layers.serialization import register

# Added to the score of every transition (and start or end tag) that the
# constraints forbid. Finite, so nothing ever computes inf - inf = NaN; its
# exp() is exactly 0 in float32; and it outweighs any realistic sum of
# emission and transition scores over a long sentence (with -1e4, 512 tokens
# whose logits differ by 20 could buy a forbidden path).
_DISALLOWED_SCORE = -1e6


def _zero_one_mask(value, shape, name):
    """Checks a 0/1 (or boolean) mask of `shape`; returns it as nested lists of ints.

    Lists of ints are what `get_config` has always stored, so saved models load.
    """
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(f"`{name}` has shape {array.shape}, expected {shape}")
    if not np.all((array == 0) | (array == 1)):
        raise ValueError(f"`{name}` must hold only 0 and 1")
    return array.astype("int32").tolist()


def _steps(potentials, mask):
    """The scan input: positions 1..T-1 and one padded step, time-major.

    Returns [T, B, K+1]: row t holds position t + 1's emissions and, as the
    last channel, its mask; the last row is an extra padded step. With it a
    scan always runs T >= 1 steps, also when T is 1 but not known statically
    (TensorFlow cannot stack zero outputs of unknown batch size), and the
    outputs line up with the positions (see `_forward`, `_backward`,
    `_viterbi`). The mask rides as a channel because Keras's TensorFlow scan
    cannot check several inputs against each other when T is unknown.
    """
    packed = ops.concatenate([potentials, mask[:, :, None]], axis=-1)
    shifted = ops.concatenate([packed[:, 1:], ops.zeros_like(packed[:, :1])], axis=1)
    return ops.moveaxis(shifted, 1, 0)


def _unpack(step):
    """[B, K+1] scan input -> ([B, K] emissions, [B, 1] bool is-real)."""
    return step[:, :-1], step[:, -1:] > 0.5


def _forward(potentials, mask, transitions, start):
    """alphas [B, T, K]: log-sum of the scores of all prefixes ending in each tag.

    On padding the last real alpha is carried, so alphas[:, -1] is the final one.
    """
    alpha = start[None, :] + potentials[:, 0]

    def step(alpha, inputs):
        emissions, is_real = _unpack(inputs)
        # new[b, j] = logsumexp_i(alpha[b, i] + transitions[i, j]) + e[b, j]
        new = ops.logsumexp(alpha[:, :, None] + transitions[None], axis=1) + emissions
        alpha = ops.where(is_real, new, alpha)
        return alpha, alpha  # TF's scan wants outputs shaped like the carry.

    # Output t is alpha at position t + 1; the last (extra step) is dropped.
    _, alphas = ops.scan(step, alpha, _steps(potentials, mask))
    return ops.concatenate([alpha[:, None], ops.moveaxis(alphas, 0, 1)[:, :-1]], axis=1)


def _backward(potentials, mask, transitions, end):
    """betas [B, T, K]: log-sum of the scores of all suffixes after each tag.

    A suffix score counts the transitions, the later emissions and the end
    score; betas at and after the last real position are the end scores.
    """
    beta = ops.zeros_like(potentials[:, 0]) + end[None, :]

    def step(beta, inputs):
        emissions, is_real = _unpack(inputs)  # of the next position
        # new[b, i] = logsumexp_j(transitions[i, j] + e[b, j] + beta[b, j])
        new = ops.logsumexp(transitions[None] + (emissions + beta)[:, None, :], axis=2)
        beta = ops.where(is_real, new, beta)
        return beta, beta

    # Reversed, output t is beta at position t (the extra step gives the end).
    _, betas = ops.scan(step, beta, _steps(potentials, mask), reverse=True)
    return ops.moveaxis(betas, 0, 1)


@ops.custom_gradient
def _log_partition(potentials, mask, transitions, start, end):
    """log Z [B] with the forward-backward gradient.

    Differentiating through the forward recursion would need the loop's
    intermediates, and TensorFlow cannot compile that gradient under XLA
    (Keras's `scan` has no maximum iteration count). The gradient of log Z is
    the marginals instead: d/d potentials[b, t, k] = p(y_t = k), d/d
    transitions[i, j] = sum_t p(y_{t-1} = i, y_t = j), d/d start = p(y_1),
    d/d end = p(y_n), all from alphas and betas. Empty sequences give garbage
    log Z here; the caller replaces it by 0, so their upstream gradient is 0.
    """
    alphas = _forward(potentials, mask, transitions, start)
    log_z = ops.logsumexp(alphas[:, -1] + end[None, :], axis=1)

    def grad(*args, upstream=None):
        if upstream is None:
            (upstream,) = args
        upstream = ops.cast(upstream, "float32")
        betas = _backward(potentials, mask, transitions, end)
        is_real = mask > 0.5  # [B, T]
        norm = log_z[:, None, None]

        # Node marginals, exponents <= 0 up to rounding.
        marginals = ops.where(
            is_real[:, :, None], ops.exp(alphas + betas - norm), 0.0
        )
        d_potentials = upstream[:, None, None] * marginals

        # Pair marginals p(y_{t-1} = i, y_t = j) for t = 1..T-1.
        pairs = ops.exp(
            alphas[:, :-1, :, None]
            + transitions[None, None]
            + (potentials[:, 1:] + betas[:, 1:])[:, :, None, :]
            - norm[:, :, :, None]
        )
        pairs = ops.where(is_real[:, 1:, None, None], pairs, 0.0)
        d_transitions = ops.sum(upstream[:, None, None, None] * pairs, axis=(0, 1))

        # The last real position is where the next one is padding (or absent).
        next_is_real = ops.concatenate(
            [is_real[:, 1:], ops.zeros_like(is_real[:, :1])], axis=1
        )
        is_last = ops.logical_and(is_real, ops.logical_not(next_is_real))
        d_start = ops.sum(d_potentials[:, 0], axis=0)
        d_end = ops.sum(
            ops.where(is_last[:, :, None], d_potentials, 0.0), axis=(0, 1)
        )
        return (
            d_potentials,
            ops.zeros_like(mask),
            d_transitions,
            d_start,
            d_end,
        )

    return log_z, grad


def _viterbi(potentials, mask, transitions, start, end):
    """Best tags [B, T] int32 (padding not yet zeroed) and their scores [B]."""
    delta = start[None, :] + potentials[:, 0]  # [B, K]
    identity = ops.arange(ops.shape(potentials)[-1], dtype="int32")[None, :]

    def forward(delta, inputs):
        emissions, is_real = _unpack(inputs)
        candidates = delta[:, :, None] + transitions[None]  # [B, prev, next]
        best_previous = ops.cast(ops.argmax(candidates, axis=1), "int32")
        new = ops.max(candidates, axis=1) + emissions
        # On padding the path stands still: delta is carried over and the
        # back-pointer of tag k is k itself.
        backpointer = ops.where(is_real, best_previous, identity)
        delta = ops.where(is_real, new, delta)
        # TF's scan stores outputs with the carry's shape and dtype, so the
        # [B, K] back-pointers travel as float32 (exact below 2^24).
        return delta, ops.cast(backpointer, "float32")

    # backpointers[t][b, k]: the best tag at t given tag k at t + 1 (the
    # last row, from the extra padded step, is the identity).
    delta, backpointers = ops.scan(forward, delta, _steps(potentials, mask))
    final = delta + end[None, :]
    last_tag = ops.cast(ops.argmax(final, axis=1), "int32")  # [B]
    scores = ops.max(final, axis=1)

    def backward(tag, backpointer):
        previous = ops.take_along_axis(
            ops.cast(backpointer, "int32"), tag[:, None], axis=1
        )[:, 0]
        return previous, previous  # int32 [B], like the carry.

    # Walks back from a virtual position T; output t is the tag at position t.
    _, tags = ops.scan(backward, last_tag, backpointers, reverse=True)
    return ops.transpose(tags), scores


@register
class CRF(keras.layers.Layer):
    """A linear-chain CRF over per-token tag scores ("potentials").

    The score of a tag sequence y of length n is

        start[y_1] + sum_i potentials[i, y_i]
                   + sum_{i>1} transitions[y_{i-1}, y_i] + end[y_n]

    and p(y | potentials) = exp(score(y)) / Z, where the partition function Z
    sums exp(score) over all tag sequences of length n. `log_partition` runs
    the forward algorithm and `decode` the Viterbi algorithm, both as a
    `keras.ops.scan` over time. The gradient of log Z is computed by the
    forward-backward algorithm (the marginals) rather than by differentiating
    the scan, whose gradient TensorFlow cannot compile under XLA; so
    `log_likelihood` trains in a `fit` with `jit_compile=True`. Every
    computation is done in float32 whatever the dtype policy: potentials
    arriving in bfloat16 or float16 are cast up, and the weights never
    autocast down.

    `mask` is a right-padding mask [batch, time] (1 or True for real tokens,
    then 0 for padding). A mask hole in the middle of a sequence is not the
    same as removing the token: gather real tokens (e.g. first subwords) into
    a left-aligned sequence first. Potentials and tags at padded positions are
    ignored, whatever they hold. A sequence of length 0 has log Z = 0,
    log-likelihood 0, and decodes to all tag 0 with score 0.

    Constraints: `allowed[i][j] = 0` forbids tag j right after tag i,
    `allowed_start[j] = 0` forbids tag j first and `allowed_end[i] = 0`
    forbids tag i last. The layer knows no tag names: whoever knows what the
    tags mean builds the masks (e.g. a tagging task, from its tag scheme).
    A forbidden transition gets a large finite negative score (-1e6) added on
    top of the learned one in training (`log_likelihood`, `log_partition`) as
    well as in decoding, so the model is a distribution over valid sequences
    only, the learned weights of forbidden transitions get no gradient, and
    `decode` never returns a forbidden transition whenever a valid sequence
    exists. Gold sequences must then be valid: each forbidden transition in a
    gold sequence lowers its log-likelihood by 1e6 (the gradient is unchanged,
    but the reported loss is huge).

    `call` returns the potentials unchanged, cast to float32, so the layer can
    end a functional model whose output feeds a loss built on
    `log_likelihood`, and whose predictions are read with `decode`. The
    learned weights only enter through those methods. The layer consumes an
    incoming Keras mask and puts none on its output: `compile` would apply a
    [B, T] mask to the [B] per-sequence loss. Pass the padding mask to the
    methods explicitly.

    Weights: `transitions` [num_tags, num_tags], `start_transitions` and
    `end_transitions` [num_tags], all float32 and initialised to zeros (so an
    untrained CRF decodes each token's arg-max tag, within the constraints).

    Args:
        num_tags: number of tags K.
        allowed: optional [K, K] 0/1 (or boolean) matrix; `allowed[i][j]`
            allows tag i -> tag j. All allowed by default.
        allowed_start: optional [K] 0/1 (or boolean) mask of the tags that may
            come first.
        allowed_end: optional [K] 0/1 (or boolean) mask of the tags that may
            come last.

    Examples:
    >>> import numpy as np
    >>> allowed = [[1, 1, 0], [1, 1, 1], [1, 1, 1]]  # not tag 2 after tag 0
    >>> crf = CRF(3, allowed, allowed_start=[1, 1, 0])  # nor tag 2 first
    >>> potentials = np.array([[[0., 0., 2.], [0., 0., 2.], [5., 0., 0.]],
    ...                        [[0., 2., 0.], [0., 0., 2.], [9., 9., 9.]]],
    ...                       dtype="float32")
    >>> mask = np.array([[1, 1, 1], [1, 1, 0]])
    >>> best, scores = crf.decode(potentials, mask)
    >>> keras.ops.convert_to_numpy(best)  # tag 2 neither first nor after 0
    array([[1, 2, 0],
           [1, 2, 0]], dtype=int32)
    >>> keras.ops.convert_to_numpy(scores)
    array([7., 4.], dtype=float32)
    >>> log_likelihood = crf.log_likelihood(potentials, best, mask)
    >>> tuple(log_likelihood.shape)
    (2,)

    Training: end a model with the CRF and use a loss such as
    `lambda y_true, y_pred: -crf.log_likelihood(y_pred, y_true, y_true >= 0)`
    with padded tags set to -1; predict with `crf.decode(model(x), mask)`.
    """

    def __init__(
        self, num_tags, allowed=None, allowed_start=None, allowed_end=None, **kwargs
    ):
        # Inputs are not cast to the compute dtype: the CRF works in float32.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.num_tags = int(num_tags)
        shape = (self.num_tags,)
        self.allowed = (
            None
            if allowed is None
            else _zero_one_mask(allowed, shape + shape, "allowed")
        )
        self.allowed_start = (
            None
            if allowed_start is None
            else _zero_one_mask(allowed_start, shape, "allowed_start")
        )
        self.allowed_end = (
            None
            if allowed_end is None
            else _zero_one_mask(allowed_end, shape, "allowed_end")
        )

        # === Constraint penalties (constants, not weights) ===
        def penalty(mask):
            if mask is None:
                return None
            return (1.0 - np.asarray(mask, "float32")) * np.float32(_DISALLOWED_SCORE)

        self._transition_penalty = penalty(self.allowed)
        self._start_penalty = penalty(self.allowed_start)
        self._end_penalty = penalty(self.allowed_end)

        # The weights depend on num_tags only, so they exist from the start and
        # `decode`/`log_likelihood` work before the layer is ever called.
        self.build()

    def build(self, potentials_shape=None, mask_shape=None):
        if self.built:
            return
        # === Weights ===
        # autocast=False: reads stay float32 even inside another layer's
        # mixed-precision call.
        def weight(name, shape):
            return self.add_weight(
                name=name,
                shape=shape,
                initializer="zeros",
                dtype="float32",
                autocast=False,
            )

        self.transitions = weight("transitions", (self.num_tags, self.num_tags))
        self.start_transitions = weight("start_transitions", (self.num_tags,))
        self.end_transitions = weight("end_transitions", (self.num_tags,))
        self.built = True

    def call(self, potentials, mask=None):
        """Returns `potentials` as float32; see `decode` and `log_likelihood`."""
        # A new tensor even when the input is float32 already, so that the
        # input's Keras mask does not ride along (see `compute_mask`).
        return ops.copy(ops.cast(potentials, "float32"))

    def compute_output_spec(self, potentials, mask=None):
        return keras.KerasTensor(tuple(potentials.shape), dtype="float32")

    def compute_mask(self, potentials, previous_mask=None):
        # The CRF consumes the padding mask: a [B, T] Keras mask on its output
        # would be applied to the [B] per-sequence loss by `compile`.
        return None

    # --- Helpers -----------------------------------------------------------

    def _scores(self):
        """Transition, start and end scores, constraints included, float32."""
        scores = []
        for variable, penalty in (
            (self.transitions, self._transition_penalty),
            (self.start_transitions, self._start_penalty),
            (self.end_transitions, self._end_penalty),
        ):
            score = ops.cast(ops.convert_to_tensor(variable), "float32")
            if penalty is not None:
                score = score + ops.convert_to_tensor(penalty)
            scores.append(score)
        return scores

    def _prepare(self, potentials, mask):
        """float32 potentials with padded positions zeroed, and a bool mask."""
        potentials = ops.cast(ops.convert_to_tensor(potentials), "float32")
        if mask is None:
            mask = ops.ones(ops.shape(potentials)[:2], "bool")
        else:
            mask = ops.cast(ops.convert_to_tensor(mask), "bool")
        # Padding may hold anything (even inf or NaN): zero it so neither
        # values nor gradients can pick anything up from it.
        potentials = ops.where(mask[:, :, None], potentials, 0.0)
        return potentials, mask

    # --- Public API ----------------------------------------------------------

    def log_partition(self, potentials, mask=None):
        """log Z per sequence, by the forward algorithm.

        Its gradient is computed by the forward-backward algorithm (a custom
        gradient: the marginals), not by differentiating the recursion, which
        keeps memory at O(B T K^2) and lets it compile under XLA.

        Args:
            potentials: [B, T, K] tag scores, any float dtype.
            mask: optional [B, T] right-padding mask; all real if omitted.

        Returns:
            [B] float32 log Z (0 for an empty sequence).
        """
        potentials, mask = self._prepare(potentials, mask)
        transitions, start, end = self._scores()
        log_z = _log_partition(
            potentials, ops.cast(mask, "float32"), transitions, start, end
        )
        return ops.where(ops.any(mask, axis=1), log_z, 0.0)

    def sequence_score(self, potentials, tags, mask=None):
        """Unnormalised score of the given tag sequences (constraints included).

        Args:
            potentials: [B, T, K] tag scores, any float dtype.
            tags: [B, T] integer tags; values at padded positions are ignored.
            mask: optional [B, T] right-padding mask.

        Returns:
            [B] float32 scores (0 for an empty sequence).
        """
        potentials, mask = self._prepare(potentials, mask)
        transitions, start, end = self._scores()
        tags = ops.where(mask, ops.cast(tags, "int32"), 0)
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)

        emissions = ops.take_along_axis(potentials, tags[:, :, None], axis=2)[:, :, 0]
        emission_score = ops.sum(ops.where(mask, emissions, 0.0), axis=1)

        pairs = tags[:, :-1] * self.num_tags + tags[:, 1:]  # [B, T-1]
        transition = ops.take(ops.reshape(transitions, (-1,)), pairs)
        transition_score = ops.sum(ops.where(mask[:, 1:], transition, 0.0), axis=1)

        last = ops.take_along_axis(tags, ops.maximum(lengths - 1, 0)[:, None], axis=1)
        score = (
            ops.take(start, tags[:, 0])
            + emission_score
            + transition_score
            + ops.take(end, last[:, 0])
        )
        return ops.where(lengths > 0, score, 0.0)

    def log_likelihood(self, potentials, tags, mask=None):
        """log p(tags | potentials) = score(tags) - log Z.

        Args:
            potentials: [B, T, K] tag scores, any float dtype.
            tags: [B, T] integer gold tags; values at padded positions (e.g.
                -1) are ignored.
            mask: optional [B, T] right-padding mask.

        Returns:
            [B] float32 log-likelihoods (0 for an empty sequence). The
            negative is the usual training loss.
        """
        return self.sequence_score(potentials, tags, mask) - self.log_partition(
            potentials, mask
        )

    def marginals(self, potentials, mask=None, temperature=1.0):
        """Per-position tag marginals p(y_t = k | potentials), by forward-backward.

        Computed in log space, p(y_t = k) = exp(alpha_t[k] + beta_t[k] - log Z),
        where alpha sums the scores of all prefixes ending in k and beta those
        of all suffixes after it (constraints included), so each real
        position's row sums to 1; padded positions are all 0. With a
        `temperature` T every score (emissions, transitions, start and end) is
        divided by T before normalising, which softens the distribution over
        whole sequences (T > 1) as a softmax temperature does for one
        position: the marginals of the distribution proportional to
        exp(score(y) / T). Knowledge distillation matches a student's per-word
        distributions to these. Not meant to be differentiated (the scans'
        gradient does not compile under XLA).

        Args:
            potentials: [B, T, K] tag scores, any float dtype.
            mask: optional [B, T] right-padding mask.
            temperature: positive float; 1 gives the model's own marginals.

        Returns:
            [B, T, K] float32 probabilities (rows of 0 at padded positions).

        Examples:
        >>> crf = CRF(2)
        >>> _ = crf.transitions.assign([[2.0, 0.0], [0.0, 2.0]])  # likes to stay
        >>> potentials = np.array([[[3.0, 0.0], [0.0, 0.0]]], "float32")
        >>> marginals = crf.marginals(potentials)
        >>> # Paths 00, 01, 10 and 11 score 5, 3, 0 and 2.
        >>> np.round(keras.ops.convert_to_numpy(marginals), 3)
        array([[[0.953, 0.047],
                [0.845, 0.155]]], dtype=float32)
        >>> soft = crf.marginals(potentials, temperature=4.0)
        >>> np.round(keras.ops.convert_to_numpy(soft)[0, 0], 3)
        array([0.679, 0.321], dtype=float32)
        """
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        potentials, mask = self._prepare(potentials, mask)
        scale = 1.0 / float(temperature)
        transitions, start, end = (score * scale for score in self._scores())
        potentials = potentials * scale
        float_mask = ops.cast(mask, "float32")
        alphas = _forward(potentials, float_mask, transitions, start)
        betas = _backward(potentials, float_mask, transitions, end)
        log_z = ops.logsumexp(alphas[:, -1] + end[None, :], axis=1)
        # Exponents <= 0 up to rounding; an empty sequence's rows are all padding.
        marginals = ops.exp(alphas + betas - log_z[:, None, None])
        return ops.where(mask[:, :, None], marginals, 0.0)

    def decode(self, potentials, mask=None):
        """The highest-scoring tag sequence, by the Viterbi algorithm.

        Args:
            potentials: [B, T, K] tag scores, any float dtype.
            mask: optional [B, T] right-padding mask.

        Returns:
            `(tags, scores)`: [B, T] int32 best tags (0 at padded positions)
            and [B] float32 scores of those sequences (0 when empty). Not
            differentiable.
        """
        potentials, mask = self._prepare(potentials, mask)
        transitions, start, end = self._scores()
        tags, scores = _viterbi(
            potentials, ops.cast(mask, "float32"), transitions, start, end
        )
        tags = ops.where(mask, tags, 0)
        scores = ops.where(ops.any(mask, axis=1), scores, 0.0)
        return tags, scores

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_tags": self.num_tags,
                "allowed": self.allowed,
                "allowed_start": self.allowed_start,
                "allowed_end": self.allowed_end,
            }
        )
        return config
