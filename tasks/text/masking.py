"""Input masking for pretraining: BERT MLM, whole-word MLM, SpanBERT spans, NSP pairs.

`mlm_mask` and `span_mask` take ONE sequence `token_ids` [T] and are written
in TensorFlow ops only, so they run inside `tf.data.Dataset.map` (graph mode)
and draw new masks every time the dataset is iterated. `unigram_distribution`
and `make_nsp_pairs` run once, offline, in NumPy / Python.

Positions never selected: those flagged in `special_mask` and those holding
one of `special_ids` ([CLS], [SEP], [PAD], ... pass both or either one).
Padding must therefore be special (pass `pad_id` in `special_ids`).

Determinism. All randomness comes from stateless ops
(`tf.random.stateless_*`) keyed by `seed`, a [2] integer tensor (a Python
int `n` means `[0, n]`): the same inputs and the same seed give the same
masks, on every run, in any order and with any `num_parallel_calls`,
whatever the global seed. To draw a fresh seed per example and per epoch,
zip the dataset with `zip_with_seeds(dataset, seed)`: it pairs every
element with two values of `tf.data.Dataset.random(seed,
rerandomize_each_iteration=True)`, so epoch k of a pipeline built with the
same `seed` (and the same TensorFlow global seed, which that stream also
depends on) always sees the same masks, and two epochs see different ones::

    dataset = zip_with_seeds(dataset, seed=42).map(
        lambda example, seed: mlm_mask(example["token_ids"], seed=seed, ...))

Outputs (all have a static length `max_predictions` except `masked_token_ids`):

- `masked_token_ids` [T] int32: the input with the selected tokens replaced;
- `mask_positions` [P] int32: selected positions, ascending, 0-padded;
- `target_ids` [P] int32: the original ids there (the labels), 0-padded;
- `mask_weights` [P] float32: 1 for real predictions, 0 for padding.

`span_mask` adds `span_left`, `span_right`, `span_offset` [P] int32 and
`sbo_weights` [P] float32 for the span boundary objective.

The selection budget is `round(mask_rate × eligible tokens)` (half rounds
up), at least 1 when any token is eligible, at most `max_predictions`. The
80/10/10 split is drawn independently per token (`mlm_mask`) or once per
span (`span_mask`); a random replacement may equal the original token, as
in BERT.
"""

import numpy as np
import tensorflow as tf

# The three treatments of a selected token.
MASK, RANDOM, KEEP = 0, 1, 2


def default_max_predictions(max_seq_length, mask_rate=0.15):
    """Prediction slots per sequence: the 15% budget of a full sequence, rounded up."""
    return int(np.ceil(mask_rate * max_seq_length))


def zip_with_seeds(dataset, seed):
    """Pairs each element with a fresh [2] int64 seed: `(element, seed)`.

    The seeds come from `tf.data.Dataset.random(seed,
    rerandomize_each_iteration=True)`: deterministic for a given `seed` and
    TensorFlow global seed, different on each iteration (epoch) of the
    returned dataset and on each pass of a `repeat()` applied after it.

    Examples:
    >>> ds = zip_with_seeds(tf.data.Dataset.range(3), seed=1)
    >>> [tuple(s.shape) for _, s in ds]
    [(2,), (2,), (2,)]
    """
    seeds = tf.data.Dataset.random(
        seed=seed, rerandomize_each_iteration=True
    ).batch(2, drop_remainder=True)
    return tf.data.Dataset.zip((dataset, seeds))


def word_start_flags(word_pieces):
    """Ragged [batch, words, pieces] from the tokenizer → ragged bool [batch, pieces].

    True on the first piece of each word, aligned with `tokenize_flat`. Cut
    and pack the flags as `WordPieceTokenizer.pack` does the ids (the lengths
    of `tasks.text.subword_tokenizer.longest_first_lengths`, [CLS] and [SEP] flagged True)
    to keep them aligned.

    Examples:
    >>> pieces = tf.ragged.constant([[[5], [7, 8]], [[9, 10, 11]]])
    >>> word_start_flags(pieces).to_list()
    [[True, True, False], [True, False, False]]
    """
    words = word_pieces.values
    flags = tf.equal(tf.ragged.range(words.row_lengths()), 0)
    return word_pieces.with_values(flags).merge_dims(1, 2)


def unigram_distribution(token_id_sequences, vocabulary_size, special_ids=()):
    """Corpus unigram probabilities of each id, specials set to zero.

    Args:
        token_id_sequences: an iterable of id sequences (lists or arrays), an
            array, or a `tf.RaggedTensor` / tensor of ids.
        vocabulary_size: V.
        special_ids: ids whose probability is zero ([PAD], [CLS], [SEP],
            [MASK], often [UNK]).

    Returns:
        float32 NumPy array [V] summing to 1.

    Examples:
    >>> probabilities = unigram_distribution([[2, 5, 5, 3], [2, 6, 3]], 8,
    ...                                      special_ids=(0, 2, 3))
    >>> [round(float(x), 3) for x in probabilities]
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.667, 0.333, 0.0]
    """
    vocabulary_size = int(vocabulary_size)
    counts = np.zeros(vocabulary_size, np.int64)

    def add(ids):
        ids = np.asarray(ids, np.int64).ravel()
        if ids.size == 0:
            return
        if ids.min() < 0 or ids.max() >= vocabulary_size:
            raise ValueError(
                f"token ids must lie in [0, {vocabulary_size}); got "
                f"{ids.min()}..{ids.max()}"
            )
        counts[:] += np.bincount(ids, minlength=vocabulary_size)

    if isinstance(token_id_sequences, tf.RaggedTensor):
        add(token_id_sequences.flat_values.numpy())
    elif tf.is_tensor(token_id_sequences) or isinstance(
        token_id_sequences, np.ndarray
    ):
        add(np.asarray(token_id_sequences))
    else:
        for sequence in token_id_sequences:
            add(sequence)
    counts[list(special_ids)] = 0
    total = counts.sum()
    if total == 0:
        raise ValueError("no non-special token in the corpus")
    return (counts / total).astype(np.float32)


def make_nsp_pairs(documents, rng, next_probability=0.5):
    """Builds next-sentence-prediction pairs from documents.

    For every pair of consecutive segments `(a, next)` of a document, with
    probability `next_probability` the pair is `(a, next, 1)`; otherwise
    `(a, b, 0)` with `b` drawn uniformly from a segment of another,
    uniformly chosen, document. Pack the result as `[CLS] a [SEP] b [SEP]`
    with segment ids 0 / 1 (`WordPieceTokenizer.pack`).

    Args:
        documents: a list of documents, each a list of segments (sentences or
            chunks), each a list of token ids.
        rng: a `numpy.random.Generator`.
        next_probability: the share of true next segments.

    Returns:
        A list of `(a, b, is_next)` tuples, `is_next` 1 or 0.

    Examples:
    >>> docs = [[[5, 6], [7]], [[8], [9, 10]]]
    >>> pairs = make_nsp_pairs(docs, np.random.default_rng(0))
    >>> [(a, is_next) for a, _, is_next in pairs]
    [([5, 6], 0), ([8], 1)]
    """
    documents = [list(document) for document in documents]
    nonempty = [index for index, document in enumerate(documents) if document]
    if len(nonempty) < 2:
        raise ValueError("NSP needs at least two non-empty documents")
    pairs = []
    for index, document in enumerate(documents):
        others = [other for other in nonempty if other != index]
        for position in range(len(document) - 1):
            first = list(document[position])
            if rng.random() < next_probability:
                pairs.append((first, list(document[position + 1]), 1))
            else:
                other = documents[others[rng.integers(len(others))]]
                pairs.append((first, list(other[rng.integers(len(other))]), 0))
    return pairs


# --------------------------------------------------------------------------
# Shared TensorFlow pieces.


def _as_seed(seed):
    seed = tf.convert_to_tensor(seed)
    if not seed.dtype.is_integer:
        raise TypeError(f"seed must be an integer tensor, got {seed.dtype}")
    if seed.dtype not in (tf.int32, tf.int64):
        seed = tf.cast(seed, tf.int64)
    if seed.shape.rank == 0:
        seed = tf.stack([tf.zeros_like(seed), seed])
    return tf.ensure_shape(seed, [2])


def _validate(max_predictions, mask_rate, mask_token_rate, random_token_rate):
    if int(max_predictions) < 1:
        raise ValueError(f"max_predictions must be positive, got {max_predictions}")
    if not 0.0 < mask_rate <= 1.0:
        raise ValueError(f"mask_rate must be in (0, 1], got {mask_rate}")
    if mask_token_rate < 0 or random_token_rate < 0 or (
        mask_token_rate + random_token_rate > 1.0 + 1e-9
    ):
        raise ValueError("mask_token_rate + random_token_rate must lie in [0, 1]")


def _special_positions(token_ids, special_mask, special_ids):
    if special_mask is None and not special_ids:
        raise ValueError("pass special_mask or special_ids (at least [CLS], [SEP], [PAD])")
    special = tf.zeros_like(token_ids, tf.bool)
    if special_mask is not None:
        special = tf.cast(special_mask, tf.bool)
    if special_ids:
        ids = tf.constant(sorted(set(int(i) for i in special_ids)), tf.int32)
        special = special | tf.reduce_any(token_ids[:, None] == ids[None, :], axis=-1)
    return special


def _budget(num_eligible, mask_rate, max_predictions):
    """round-half-up(rate × eligible), ≥ 1 if any is eligible, ≤ max_predictions."""
    wanted = tf.cast(
        tf.floor(tf.cast(num_eligible, tf.float32) * mask_rate + 0.5), tf.int32
    )
    wanted = tf.maximum(wanted, tf.minimum(num_eligible, 1))
    return tf.minimum(wanted, max_predictions)


def _replacement_distribution(
    vocabulary_size, unigram_probabilities, special_ids, mask_id
):
    """Returns (cdf [V] float32, id of the last id with positive probability)."""
    if unigram_probabilities is None:
        probabilities = np.ones(vocabulary_size, np.float32)
        probabilities[[int(i) for i in special_ids] + [int(mask_id)]] = 0.0
        probabilities = tf.constant(probabilities)
    else:
        probabilities = tf.cast(tf.convert_to_tensor(unigram_probabilities), tf.float32)
        probabilities.shape.assert_is_compatible_with([vocabulary_size])
    cdf = tf.cumsum(probabilities)
    # argmax finds the first index reaching the total: the last positive id.
    return cdf, tf.argmax(cdf, output_type=tf.int32)


def _draw_ids(distribution, count, seed):
    """`count` ids drawn from the distribution by inverse-CDF sampling."""
    cdf, last_id = distribution
    uniform = tf.random.stateless_uniform([count], seed, dtype=tf.float32)
    ids = tf.searchsorted(cdf, uniform * cdf[-1], side="right", out_type=tf.int32)
    return tf.minimum(ids, last_id)


def _treatments(uniform, mask_token_rate, random_token_rate):
    return tf.where(
        uniform < mask_token_rate,
        MASK,
        tf.where(uniform < mask_token_rate + random_token_rate, RANDOM, KEEP),
    )


def _word_structure(word_starts, special):
    """Word index per token plus per-word length and eligibility.

    Specials are one-token words of their own and also end the word before
    them, whatever `word_starts` says; position 0 always starts a word. The
    per-word arrays have T slots; slots past the last word have length 0.
    """
    length = tf.shape(special)[0]
    previous_special = tf.concat([[True], special], 0)[:-1]
    boundary = tf.cast(word_starts, tf.bool) | special | previous_special
    word_index = tf.cumsum(tf.cast(boundary, tf.int32)) - 1
    word_length = tf.math.unsorted_segment_sum(
        tf.ones_like(word_index), word_index, length
    )
    word_special = tf.math.unsorted_segment_max(
        tf.cast(special, tf.int32), word_index, length
    )
    word_eligible = (word_length > 0) & (word_special <= 0)
    return word_index, word_length, word_eligible


def _pad(values, max_predictions):
    padded = tf.pad(values, [[0, max_predictions - tf.size(values)]])
    return tf.ensure_shape(padded, [max_predictions])


def _apply(token_ids, selected, treatment, mask_id, distribution, seed, max_predictions):
    """Replaces the selected tokens; returns the outputs and the positions."""
    positions = tf.cast(tf.reshape(tf.where(selected), [-1]), tf.int32)
    count = tf.size(positions)
    original = tf.gather(token_ids, positions)
    kind = tf.gather(treatment, positions)
    replacement = _draw_ids(distribution, max_predictions, seed)[:count]
    new = tf.where(
        kind == MASK,
        tf.cast(mask_id, tf.int32),
        tf.where(kind == RANDOM, replacement, original),
    )
    outputs = {
        "masked_token_ids": tf.tensor_scatter_nd_update(token_ids, positions[:, None], new),
        "mask_positions": _pad(positions, max_predictions),
        "target_ids": _pad(original, max_predictions),
        "mask_weights": _pad(tf.ones([count], tf.float32), max_predictions),
    }
    return outputs, positions


# --------------------------------------------------------------------------
# BERT masked LM.


def mlm_mask(
    token_ids,
    *,
    seed,
    vocabulary_size,
    mask_id,
    max_predictions,
    special_mask=None,
    special_ids=(),
    word_starts=None,
    whole_word=False,
    mask_rate=0.15,
    mask_token_rate=0.8,
    random_token_rate=0.1,
    unigram_probabilities=None,
):
    """BERT masked-LM masking of one sequence.

    Selects `round(mask_rate × eligible)` tokens uniformly at random (see the
    module docstring for the budget); each selected token independently
    becomes [MASK] (`mask_token_rate`), a random token (`random_token_rate`,
    drawn from `unigram_probabilities`, or uniformly over the ids that are
    neither in `special_ids` nor `mask_id` when None) or stays unchanged.

    With `whole_word=True`, words (a piece flagged in `word_starts` and the
    pieces after it) are visited in random order and taken whole when they
    fit in the remaining budget, skipped otherwise (BERT's whole-word
    masking): the budget is never exceeded and every word is masked
    entirely or not at all.

    Args:
        token_ids: int [T], one sequence, [CLS] ... [SEP] [PAD]...
        seed: a [2] integer tensor (or a Python int) keying the randomness.
        vocabulary_size: V, for the default replacement distribution.
        mask_id: the [MASK] id.
        max_predictions: P, the static length of the prediction outputs.
        special_mask: optional bool [T], True where a token may never be
            selected.
        special_ids: ids that are never selected (and never drawn as
            replacements by default).
        word_starts: bool [T], True on the first piece of each word; needed
            with `whole_word`.
        whole_word: select whole words.
        mask_rate, mask_token_rate, random_token_rate: the 15 / 80 / 10 rates.
        unigram_probabilities: float [V] replacement distribution (see
            `unigram_distribution`).

    Returns:
        A dict with `masked_token_ids` [T], `mask_positions` [P], `target_ids` [P]
        (int32) and `mask_weights` [P] (float32).

    Examples:
    >>> ids = tf.constant([2, 11, 12, 13, 14, 15, 16, 3, 0, 0])
    >>> out = mlm_mask(ids, seed=[0, 7], vocabulary_size=20, mask_id=4,
    ...                max_predictions=3, special_ids=(0, 1, 2, 3, 4), mask_rate=0.3)
    >>> out["mask_weights"].numpy().tolist()
    [1.0, 1.0, 0.0]
    >>> positions = out["mask_positions"][:2]
    >>> bool(tf.reduce_all(tf.gather(ids, positions) == out["target_ids"][:2]))
    True
    """
    _validate(max_predictions, mask_rate, mask_token_rate, random_token_rate)
    if whole_word and word_starts is None:
        raise ValueError("whole_word=True needs word_starts")
    max_predictions = int(max_predictions)
    token_ids = tf.cast(tf.convert_to_tensor(token_ids), tf.int32)
    seeds = tf.random.experimental.stateless_split(_as_seed(seed), 3)
    special = _special_positions(token_ids, special_mask, special_ids)
    eligible = ~special
    length = tf.shape(token_ids)[0]
    budget = _budget(tf.reduce_sum(tf.cast(eligible, tf.int32)), mask_rate, max_predictions)

    if whole_word:
        word_index, word_length, word_eligible = _word_structure(word_starts, special)
        keys = tf.random.stateless_uniform([length], seeds[0])
        order = tf.argsort(tf.where(word_eligible, keys, 2.0), stable=True)
        lengths_in_order = tf.gather(word_length, order)
        num_words = tf.reduce_sum(tf.cast(word_eligible, tf.int32))

        def keep_going(i, used, taken):
            return (i < num_words) & (used < budget)

        def visit_word(i, used, taken):
            fits = used + lengths_in_order[i] <= budget
            taken = tf.tensor_scatter_nd_update(
                taken, [[i]], [tf.cast(fits, tf.int32)]
            )
            return i + 1, used + tf.where(fits, lengths_in_order[i], 0), taken

        _, _, taken = tf.while_loop(
            keep_going, visit_word, (0, 0, tf.zeros([length], tf.int32))
        )
        word_selected = tf.scatter_nd(order[:, None], taken, [length]) > 0
        selected = tf.gather(word_selected, word_index)
    else:
        keys = tf.random.stateless_uniform([length], seeds[0])
        _, top = tf.math.top_k(tf.where(eligible, keys, -1.0), k=budget)
        selected = tf.scatter_nd(top[:, None], tf.ones_like(top), [length]) > 0

    treatment = _treatments(
        tf.random.stateless_uniform([length], seeds[1]), mask_token_rate, random_token_rate
    )
    distribution = _replacement_distribution(
        vocabulary_size, unigram_probabilities, special_ids, mask_id
    )
    outputs, _ = _apply(
        token_ids, selected, treatment, mask_id, distribution, seeds[2], max_predictions
    )
    return outputs


# Named, not "auto_select" (which depends on the device). XLA's Philox still draws
# other numbers than TensorFlow's kernels: masks are reproducible per jit_compile setting.
_ALGORITHM = "philox"


def batch_mlm_mask(
    token_ids,
    *,
    seed,
    vocabulary_size,
    mask_id,
    max_predictions,
    special_ids,
    mask_rate=0.15,
    mask_token_rate=0.8,
    random_token_rate=0.1,
):
    """BERT masked-LM masking of a whole batch, inside a model's step (XLA-friendly).

    The batched twin of `mlm_mask` (same budget per row, same 80/10/10
    treatments, replacements uniform over the ids that are neither special
    nor [MASK]), written with static shapes only: no `tf.where` on a
    boolean mask and a `top_k` whose `k` is `max_predictions`, so that it
    compiles under XLA and runs in a train step rather than in `tf.data`
    (the auxiliary masked-LM loss of fine-tuning uses it; see
    `tasks.modeling.auxiliary_mlm`). Rows draw independent masks from one `seed`.

    Args:
        token_ids: int [B, T], [CLS] ... [SEP] [PAD]...
        seed: a [2] integer tensor (or a Python int) keying the randomness.
        vocabulary_size: V.
        mask_id: the [MASK] id.
        max_predictions: P, the static number of prediction slots per row.
        special_ids: ids never selected nor drawn as replacements ([PAD],
            [CLS], [SEP], [MASK], ...).
        mask_rate, mask_token_rate, random_token_rate: the 15 / 80 / 10 rates.

    Returns:
        A dict with `masked_token_ids` [B, T], `mask_positions` [B, P]
        (0 in unused slots), `target_ids` [B, P] (-1 in unused slots) and
        `mask_weights` [B, P] (float32, 1 for real slots), int32 except the
        weights. Slots are in random order, not sorted by position.

    Examples:
    >>> ids = tf.constant([[2, 11, 12, 13, 14, 15, 16, 3, 0, 0], [2, 17, 3, 0, 0, 0, 0, 0, 0, 0]])
    >>> out = batch_mlm_mask(ids, seed=[0, 7], vocabulary_size=20, mask_id=4,
    ...                      max_predictions=3, special_ids=(0, 1, 2, 3, 4), mask_rate=0.3)
    >>> out["mask_weights"].numpy().tolist()  # round(0.3 × 6) = 2 and at least 1 of 1
    [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    >>> out["target_ids"][1].numpy().tolist(), int(out["mask_positions"][1, 0])
    ([17, -1, -1], 1)
    """
    _validate(max_predictions, mask_rate, mask_token_rate, random_token_rate)
    max_predictions = int(max_predictions)
    if not special_ids:
        raise ValueError("pass special_ids (at least [CLS], [SEP], [PAD])")
    token_ids = tf.cast(tf.convert_to_tensor(token_ids), tf.int32)
    batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    seeds = tf.random.experimental.stateless_split(_as_seed(seed), 4, alg=_ALGORITHM)
    specials = tf.constant(sorted(set(int(i) for i in special_ids)), tf.int32)
    eligible = ~tf.reduce_any(token_ids[..., None] == specials, axis=-1)
    budget = _budget(tf.reduce_sum(tf.cast(eligible, tf.int32), axis=1), mask_rate,
                     max_predictions)

    # The budget's worth of eligible positions with the largest random keys; P dummy
    # keys below every real one make k = P valid whatever T is.
    keys = tf.where(eligible, tf.random.stateless_uniform([batch, length], seeds[0],
                                                          alg=_ALGORITHM), -1.0)
    keys = tf.concat([keys, tf.fill([batch, max_predictions], -2.0)], axis=1)
    _, positions = tf.math.top_k(keys, k=max_predictions)
    used = tf.range(max_predictions)[None, :] < budget[:, None]
    positions = tf.where(used, positions, 0)
    original = tf.gather(token_ids, positions, batch_dims=1)

    treatment = _treatments(tf.random.stateless_uniform([batch, max_predictions], seeds[1],
                                                        alg=_ALGORITHM),
                            mask_token_rate, random_token_rate)
    allowed = np.setdiff1d(np.arange(int(vocabulary_size)),
                           [int(i) for i in special_ids] + [int(mask_id)])
    if allowed.size == 0:
        raise ValueError("no id is left to draw as a random replacement")
    replacement = tf.gather(tf.constant(allowed, tf.int32), tf.random.stateless_uniform(
        [batch, max_predictions], seeds[2], maxval=allowed.size, dtype=tf.int32,
        alg=_ALGORITHM))
    new = tf.where(treatment == MASK, tf.cast(mask_id, tf.int32),
                   tf.where(treatment == RANDOM, replacement, original))
    # Dense scatter (one-hot over T): every used slot holds a distinct position.
    hits = tf.one_hot(positions, length, dtype=tf.int32) * tf.cast(used, tf.int32)[..., None]
    replaced = tf.reduce_sum(hits, axis=1) > 0
    masked = tf.where(replaced, tf.reduce_sum(hits * new[..., None], axis=1), token_ids)
    return {
        "masked_token_ids": masked,
        "mask_positions": positions,
        "target_ids": tf.where(used, original, -1),
        "mask_weights": tf.cast(used, tf.float32),
    }


# --------------------------------------------------------------------------
# SpanBERT span masking.


def span_length_probabilities(p=0.2, max_span_words=10):
    """SpanBERT's span-length distribution over 1..max_span_words words.

    The geometric distribution `p (1 − p)^(l − 1)` truncated to
    `l ≤ max_span_words` and renormalised, as in SpanBERT's code (mean 3.80
    words for p = 0.2, max 10); `min(geometric, 10)` would have mean 4.46.

    Examples:
    >>> probabilities = span_length_probabilities(0.2, 10)
    >>> round(float(np.dot(np.arange(1, 11), probabilities)), 2)
    3.8
    """
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must be in (0, 1], got {p}")
    lengths = np.arange(1, int(max_span_words) + 1)
    probabilities = p * (1.0 - p) ** (lengths - 1)
    return probabilities / probabilities.sum()


def span_mask(
    token_ids,
    *,
    seed,
    vocabulary_size,
    mask_id,
    max_predictions,
    word_starts,
    special_mask=None,
    special_ids=(),
    p=0.2,
    max_span_words=10,
    mask_rate=0.15,
    mask_token_rate=0.8,
    random_token_rate=0.1,
    unigram_probabilities=None,
    exact_budget=False,
):
    """SpanBERT span masking of one sequence, with span-boundary targets.

    Repeats until at least the budget of tokens (module docstring) is
    selected: draw a length of `l` words from `span_length_probabilities(p,
    max_span_words)`, then a start uniformly among the word starts where a
    span of `l` whole words fits. A span fits when its words are all
    eligible and unselected (spans never cross [SEP] or overlap) and the
    tokens just before and after it are not selected, so spans never touch
    and every span is a maximal run of selected tokens whose neighbours
    s − 1 and e + 1 stay visible.

    Budget rule: by default spans are kept whole, so the last one may
    overshoot the budget, by less than one span; the selected share is then
    above `mask_rate` on short sequences (about 19% for ~110 eligible
    tokens with 1.7 pieces a word, nearer 16% at T = 512). With
    `exact_budget=True` the last span is shortened to the whole words that
    fit in the budget, which is never exceeded (SpanBERT's code cuts the last
    span at the budget, mid-word if need be, and merges spans that touch).
    Otherwise only two things shorten a span: no room anywhere for `l`
    words (the longest span that fits is taken instead; selection stops
    when none does) and `max_predictions` (the span is cut to the whole
    words that fit in P). Give `max_predictions` room above `mask_rate × T`
    (e.g. +12 for T = 128) so this stays rare.

    The 80/10/10 choice is made once per span: every token of a span is
    [MASK]ed, or every token replaced by an (independent) random token, or
    the whole span left unchanged.

    Args:
        token_ids, seed, vocabulary_size, mask_id, max_predictions,
        special_mask, special_ids, mask_rate, mask_token_rate,
        random_token_rate, unigram_probabilities: as in `mlm_mask`.
        word_starts: bool [T], True on the first piece of each word.
        p: the geometric distribution's parameter.
        max_span_words: the longest span, in words.
        exact_budget: shorten the last span so the budget is never exceeded.

    Returns:
        `mlm_mask`'s outputs plus, per prediction slot:
        - `span_left`, `span_right` [P] int32: positions s − 1 and e + 1 of
          the span holding the prediction (clipped into [0, T)).
        - `span_offset` [P] int32: the prediction's position minus s.
        - `sbo_weights` [P] float32: 1 for real predictions whose span has a
          real token on both sides; 0 when s − 1 or e + 1 is special, padding
          or outside the sequence (spans touching the sequence edges get no
          SBO target), and 0 for padding slots.

    Examples:
    >>> ids = tf.constant([2, 11, 12, 13, 14, 15, 16, 17, 18, 3])
    >>> starts = tf.constant([1, 1, 0, 1, 1, 0, 1, 1, 1, 1]) > 0
    >>> out = span_mask(ids, seed=[0, 3], vocabulary_size=20, mask_id=4,
    ...                 max_predictions=6, word_starts=starts,
    ...                 special_ids=(0, 1, 2, 3, 4), mask_rate=0.25)
    >>> n = int(out["mask_weights"].numpy().sum())
    >>> n >= 2
    True
    >>> positions = out["mask_positions"].numpy()[:n]
    >>> bool((positions - out["span_offset"].numpy()[:n] - 1
    ...       == out["span_left"].numpy()[:n]).all())
    True
    """
    _validate(max_predictions, mask_rate, mask_token_rate, random_token_rate)
    max_predictions = int(max_predictions)
    max_span_words = int(max_span_words)
    token_ids = tf.cast(tf.convert_to_tensor(token_ids), tf.int32)
    seeds = tf.random.experimental.stateless_split(_as_seed(seed), 5)
    special = _special_positions(token_ids, special_mask, special_ids)
    length = tf.shape(token_ids)[0]
    budget = _budget(
        tf.reduce_sum(tf.cast(~special, tf.int32)), mask_rate, max_predictions
    )
    word_index, word_length, word_eligible = _word_structure(word_starts, special)

    # Each span holds ≥ 1 token, so P spans at most: draw all randomness now.
    length_cdf = tf.constant(
        np.cumsum(span_length_probabilities(p, max_span_words)), tf.float32
    )
    span_lengths = 1 + tf.minimum(
        tf.searchsorted(
            length_cdf,
            tf.random.stateless_uniform([max_predictions], seeds[3]),
            side="right",
            out_type=tf.int32,
        ),
        max_span_words - 1,
    )
    anchor_uniform = tf.random.stateless_uniform([max_predictions], seeds[4])

    word_range = tf.range(length)
    tokens_through = tf.cumsum(word_length)  # tokens in words 0..w
    tokens_before = tokens_through - word_length
    token_limit = budget if exact_budget else tf.constant(max_predictions)

    def keep_going(num_spans, used, word_span, done):
        return ~done & (used < budget) & (num_spans < max_predictions)

    def add_span(num_spans, used, word_span, done):
        wanted = span_lengths[num_spans]
        taken = word_span >= 0
        free = word_eligible & ~taken
        not_free = tf.cast(~free, tf.int32)
        # First non-free word at or after each word: a run of free words ends there.
        run_end = tf.searchsorted(
            tf.cumsum(not_free), tf.cumsum(not_free) - not_free + 1, side="left",
            out_type=tf.int32,
        )
        taken_after_run = tf.gather(tf.concat([taken, [False]], 0), run_end)
        taken_before = tf.concat([[False], taken], 0)[:-1]
        # Longest span starting at each word that leaves a gap on both sides...
        longest = tf.where(
            free & ~taken_before,
            run_end - word_range - tf.cast(taken_after_run, tf.int32),
            0,
        )
        # ... and whose tokens fit in what is left (of P, or of the budget).
        fit = tf.searchsorted(
            tokens_through,
            tokens_before + (token_limit - used),
            side="right",
            out_type=tf.int32,
        ) - word_range
        longest = tf.minimum(longest, fit)
        best = tf.reduce_max(longest)
        span_words = tf.where(tf.reduce_any(longest >= wanted), wanted, best)
        candidates = (longest >= span_words) & (span_words > 0)
        count = tf.reduce_sum(tf.cast(candidates, tf.int32))
        pick = tf.minimum(
            tf.cast(anchor_uniform[num_spans] * tf.cast(count, tf.float32), tf.int32),
            count - 1,
        )
        start = tf.argmax(
            tf.cumsum(tf.cast(candidates, tf.int32)) > pick, output_type=tf.int32
        )
        in_span = (word_range >= start) & (word_range < start + span_words)
        stop = best <= 0
        return (
            tf.where(stop, num_spans, num_spans + 1),
            used + tf.where(stop, 0, tf.reduce_sum(tf.where(in_span, word_length, 0))),
            tf.where(in_span & ~stop, num_spans, word_span),
            stop,
        )

    _, _, word_span, _ = tf.while_loop(
        keep_going,
        add_span,
        (0, 0, -tf.ones([length], tf.int32), tf.constant(False)),
    )
    token_span = tf.gather(word_span, word_index)
    selected = token_span >= 0

    span_treatment = _treatments(
        tf.random.stateless_uniform([max_predictions], seeds[1]),
        mask_token_rate,
        random_token_rate,
    )
    treatment = tf.gather(span_treatment, tf.maximum(token_span, 0))
    distribution = _replacement_distribution(
        vocabulary_size, unigram_probabilities, special_ids, mask_id
    )
    outputs, positions = _apply(
        token_ids, selected, treatment, mask_id, distribution, seeds[2], max_predictions
    )

    # Span boundaries of each prediction.
    span_of = tf.gather(token_span, positions)
    starts = tf.gather(
        tf.math.unsorted_segment_min(positions, span_of, max_predictions), span_of
    )
    ends = tf.gather(
        tf.math.unsorted_segment_max(positions, span_of, max_predictions), span_of
    )
    left, right = starts - 1, ends + 1
    # Outside the sequence counts as special: index shifted by one.
    edge = tf.concat([[True], special, [True]], 0)
    has_context = ~tf.gather(edge, left + 1) & ~tf.gather(edge, right + 1)
    outputs.update(
        {
            "span_left": _pad(tf.clip_by_value(left, 0, length - 1), max_predictions),
            "span_right": _pad(tf.clip_by_value(right, 0, length - 1), max_predictions),
            "span_offset": _pad(positions - starts, max_predictions),
            "sbo_weights": _pad(tf.cast(has_context, tf.float32), max_predictions),
        }
    )
    return outputs
