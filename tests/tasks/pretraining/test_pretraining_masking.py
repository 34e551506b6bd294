import functools

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks import pretraining
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer

PAD, UNK, CLS, SEP, MASK_ID = 0, 1, 2, 3, 4
SPECIAL_IDS = (PAD, UNK, CLS, SEP, MASK_ID)
V, N, T = 300, 2000, 128
MAX_PREDICTIONS = {"mlm": 24, "span": 32}


@functools.lru_cache(maxsize=None)
def _corpus():
    """N sequences [CLS] a ([SEP] b) [SEP] [PAD]... of Zipf ids in 1-3-piece words."""
    rng = np.random.default_rng(0)
    zipf = 1.0 / np.arange(1, V - 5 + 1)
    zipf /= zipf.sum()
    ids = np.zeros((N, T), np.int32)
    starts = np.zeros((N, T), bool)
    for n in range(N):
        length = rng.integers(64, T + 1)
        ids[n, 1:length - 1] = rng.choice(np.arange(5, V), size=length - 2, p=zipf)
        ids[n, [0, length - 1]] = CLS, SEP
        if n % 2:  # a pair: a [SEP] in the middle
            ids[n, length // 2] = SEP
        position = 1
        while position < length - 1:
            starts[n, position] = True
            position += rng.choice([1, 1, 1, 2, 2, 3])
        # Specials are words of their own.
        starts[n, [0, length // 2, length // 2 + 1, length - 1]] = True
    unigram = pretraining.unigram_distribution([row[row > MASK_ID] for row in ids], V, SPECIAL_IDS)
    return ids, starts, unigram


def _run(kind, seed=0, **overrides):
    """Masks the whole corpus in one tf.data pipeline; returns NumPy outputs."""
    ids, starts, unigram = _corpus()
    options = dict(
        vocabulary_size=V, mask_id=MASK_ID, special_ids=SPECIAL_IDS,
        unigram_probabilities=unigram,
    )
    if kind == "span":
        options.update(max_predictions=MAX_PREDICTIONS["span"])
        options.update(overrides)
        fn = functools.partial(pretraining.span_mask, **options)
    else:
        options.update(max_predictions=MAX_PREDICTIONS["mlm"], whole_word=kind == "wwm")
        options.update(overrides)
        fn = functools.partial(pretraining.mlm_mask, **options)
    dataset = tf.data.Dataset.from_tensor_slices({"ids": ids, "starts": starts})
    dataset = pretraining.zip_with_seeds(dataset, seed).map(
        lambda x, s: fn(x["ids"], seed=s, word_starts=x["starts"]),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return {k: np.asarray(v) for k, v in dataset.batch(N).get_single_element().items()}


@functools.lru_cache(maxsize=None)
def _outputs(kind):
    return _run(kind)


def _budget(eligible, max_predictions):
    return np.minimum(np.maximum(np.floor(eligible * 0.15 + 0.5), 1), max_predictions)


def _selected(out):
    """Per sequence: selected positions, their original ids and new ids."""
    weights = out["mask_weights"] > 0
    for n in range(len(weights)):
        count = int(weights[n].sum())
        positions = out["mask_positions"][n, :count]
        yield n, positions, out["target_ids"][n, :count], out["masked_token_ids"][n, positions]


def _check_common(out, max_predictions):
    ids, _, _ = _corpus()
    eligible = ids > MASK_ID
    counts = (out["mask_weights"] > 0).sum(1)
    # Weights are a prefix of ones; positions ascending; padding zero.
    assert np.array_equal(out["mask_weights"], np.arange(max_predictions) < counts[:, None])
    for n, positions, originals, new in _selected(out):
        assert np.all(np.diff(positions) > 0)
        assert eligible[n, positions].all()  # specials never selected
        assert np.array_equal(originals, ids[n, positions])
        unchanged = np.ones(T, bool)
        unchanged[positions] = False
        assert np.array_equal(out["masked_token_ids"][n, unchanged], ids[n, unchanged])
        assert np.all(new != PAD) and np.all(new != CLS) and np.all(new != SEP)
    assert np.all(out["mask_positions"][out["mask_weights"] == 0] == 0)
    return counts, eligible.sum(1)


def _treatment_shares(out):
    new, old = [], []
    for _, _, originals, replaced in _selected(out):
        new.append(replaced)
        old.append(originals)
    new, old = np.concatenate(new), np.concatenate(old)
    masked = new == MASK_ID
    kept = new == old  # includes the rare random draw equal to the original
    return masked.mean(), (~masked & ~kept).mean(), kept.mean()


# --- Token-level and whole-word MLM ---


def test_mlm_rate_budget_and_80_10_10():
    out = _outputs("mlm")
    counts, eligible = _check_common(out, MAX_PREDICTIONS["mlm"])
    assert np.array_equal(counts, _budget(eligible, MAX_PREDICTIONS["mlm"]))
    assert abs(counts.sum() / eligible.sum() - 0.15) < 0.01
    masked, random, kept = _treatment_shares(out)
    assert abs(masked - 0.8) < 0.02 and abs(random - 0.1) < 0.02 and abs(kept - 0.1) < 0.02


def test_whole_word_masking_selects_whole_words():
    out = _outputs("wwm")
    ids, starts, _ = _corpus()
    counts, eligible = _check_common(out, MAX_PREDICTIONS["mlm"])
    assert np.all(counts <= _budget(eligible, MAX_PREDICTIONS["mlm"]))
    assert abs(counts.sum() / eligible.sum() - 0.15) < 0.01
    for n, positions, _, _ in _selected(out):
        word = np.cumsum(starts[n]) - 1
        chosen = np.zeros(T, bool)
        chosen[positions] = True
        for w in np.unique(word[positions]):
            assert chosen[word == w].all(), f"sequence {n}: word {w} partly masked"
    masked, random, kept = _treatment_shares(out)
    assert abs(masked - 0.8) < 0.02 and abs(random - 0.1) < 0.02 and abs(kept - 0.1) < 0.02


def _chi_square_ok(samples, probabilities):
    """Pearson chi-square over bins with expected count ≥ 5 (rest pooled)."""
    observed = np.bincount(samples, minlength=len(probabilities)).astype(float)
    expected = probabilities * len(samples)
    big = expected >= 5
    observed = np.append(observed[big], observed[~big].sum())
    expected = np.append(expected[big], expected[~big].sum())
    keep = expected > 0
    statistic = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    dof = keep.sum() - 1
    return statistic < dof + 6 * np.sqrt(2 * dof), (statistic, dof)


def test_random_replacements_follow_the_unigram_distribution():
    _, _, unigram = _corpus()
    # Every selected token replaced at random: the new ids are the raw draws.
    out = _run("mlm", seed=3, mask_rate=0.5, mask_token_rate=0.0, random_token_rate=1.0)
    draws = np.concatenate([new for _, _, _, new in _selected(out)])
    assert len(draws) > 40_000
    assert np.all(unigram[draws] > 0)  # never a special or an unseen id
    ok, detail = _chi_square_ok(draws, unigram)
    assert ok, detail
    # A uniform sampler would fail: the most frequent id is ~100x likelier.
    assert not _chi_square_ok(draws, (unigram > 0) / (unigram > 0).sum())[0]

    # Default: uniform over the non-special ids.
    out = _run("mlm", seed=4, mask_rate=0.5, mask_token_rate=0.0, random_token_rate=1.0,
               unigram_probabilities=None)
    draws = np.concatenate([new for _, _, _, new in _selected(out)])
    assert draws.min() > MASK_ID
    uniform = np.r_[np.zeros(5), np.ones(V - 5)] / (V - 5)
    ok, detail = _chi_square_ok(draws, uniform)
    assert ok, detail


# --- SpanBERT span masking ---


def _spans(out, n):
    """Maximal runs of selected positions in sequence n: [(start, end)]."""
    count = int(out["mask_weights"][n].sum())
    positions = out["mask_positions"][n, :count]
    breaks = np.flatnonzero(np.diff(positions) != 1)
    starts = np.r_[positions[:1], positions[breaks + 1]]
    ends = np.r_[positions[breaks], positions[-1:]]
    return list(zip(starts, ends))


def test_span_masking_spans_and_boundaries():
    out = _outputs("span")
    ids, word_starts, _ = _corpus()
    special = ids <= MASK_ID
    counts, eligible = _check_common(out, MAX_PREDICTIONS["span"])
    budget = _budget(eligible, MAX_PREDICTIONS["span"])
    lengths, treatments = [], []
    for n in range(N):
        spans = _spans(out, n)
        assert counts[n] >= budget[n]
        slot = 0
        for start, end in spans:
            assert word_starts[n, start], "spans start at word starts"
            assert end + 1 == T or word_starts[n, end + 1] or special[n, end + 1], (
                "spans end at word ends"
            )
            assert not special[n, start:end + 1].any()
            words = int(word_starts[n, start:end + 1].sum())
            lengths.append(words)
            # SBO targets: s - 1, e + 1, offset from s; weight 0 at the edges.
            width = end - start + 1
            block = slice(slot, slot + width)
            assert np.all(out["span_left"][n, block] == max(start - 1, 0))
            assert np.all(out["span_right"][n, block] == min(end + 1, T - 1))
            assert np.array_equal(out["span_offset"][n, block], np.arange(width))
            has_context = start > 0 and end + 1 < T and not (
                special[n, start - 1] or special[n, end + 1]
            )
            assert np.all(out["sbo_weights"][n, block] == float(has_context))
            # One 80/10/10 decision per span.
            new = out["masked_token_ids"][n, start:end + 1]
            is_mask = new == MASK_ID
            assert is_mask.all() or not is_mask.any(), "mixed treatment in a span"
            changed = new != ids[n, start:end + 1]
            treatments.append(
                "mask" if is_mask.all() else "random" if changed.any() else "keep"
            )
            slot += width
        # Never over the budget by a whole span.
        assert counts[n] - budget[n] < max(end - start + 1 for start, end in spans)
    assert np.all(out["sbo_weights"][out["mask_weights"] == 0] == 0)

    lengths = np.array(lengths)
    assert lengths.max() <= 10 and lengths.min() >= 1
    assert abs(lengths.mean() - 3.8) < 0.2, lengths.mean()
    assert abs((lengths == 1).mean() - pretraining.span_length_probabilities()[0]) < 0.02
    treatments = np.array(treatments)
    assert abs((treatments == "mask").mean() - 0.8) < 0.02
    assert abs((treatments == "random").mean() - 0.1) < 0.02
    assert abs((treatments == "keep").mean() - 0.1) < 0.02


def test_span_masking_exact_budget():
    out = _run("span", seed=5, exact_budget=True)
    counts, eligible = _check_common(out, MAX_PREDICTIONS["span"])
    budget = _budget(eligible, MAX_PREDICTIONS["span"])
    assert np.all(counts <= budget)
    assert 0.95 < counts.sum() / budget.sum() <= 1.0


def test_span_length_distribution_is_truncated_geometric():
    probabilities = pretraining.span_length_probabilities(0.2, 10)
    assert np.isclose(probabilities.sum(), 1.0)
    assert np.allclose(probabilities[1:] / probabilities[:-1], 0.8)
    assert abs(np.dot(np.arange(1, 11), probabilities) - 3.8) < 0.01


def test_edge_cases():
    options = dict(vocabulary_size=V, mask_id=MASK_ID, special_ids=SPECIAL_IDS, seed=1)
    only_specials = tf.constant([CLS, SEP, PAD, PAD])
    for out in (
        pretraining.mlm_mask(only_specials, max_predictions=4, **options),
        pretraining.span_mask(only_specials, max_predictions=4,
                              word_starts=tf.ones([4], tf.bool), **options),
    ):
        assert float(tf.reduce_sum(out["mask_weights"])) == 0
        assert np.array_equal(out["masked_token_ids"], only_specials)
    # One eligible token: at least one prediction; P caps the budget.
    out = pretraining.mlm_mask(tf.constant([CLS, 9, SEP]), max_predictions=2, **options)
    assert out["mask_positions"].numpy().tolist() == [1, 0]
    ids = tf.constant([CLS] + list(range(10, 60)) + [SEP])
    out = pretraining.span_mask(ids, max_predictions=3, word_starts=tf.ones([52], tf.bool),
                                **options)
    assert float(tf.reduce_sum(out["mask_weights"])) == 3
    with pytest.raises(ValueError, match="word_starts"):
        pretraining.mlm_mask(ids, max_predictions=3, whole_word=True, **options)
    with pytest.raises(ValueError, match="special"):
        pretraining.mlm_mask(ids, max_predictions=3, seed=1, vocabulary_size=V, mask_id=MASK_ID)


# --- tf.data: new masks every epoch, reproducible from the seed ---


def test_dataset_map_new_masks_each_epoch_and_deterministic():
    ids, starts, unigram = _corpus()

    def pipeline(seed):
        dataset = tf.data.Dataset.from_tensor_slices((ids[:64], starts[:64]))
        dataset = pretraining.zip_with_seeds(dataset, seed).map(
            lambda x, s: pretraining.span_mask(
                x[0], seed=s, word_starts=x[1], vocabulary_size=V, mask_id=MASK_ID,
                max_predictions=32, special_ids=SPECIAL_IDS,
                unigram_probabilities=unigram,
            ),
            num_parallel_calls=4,
        )
        return dataset.batch(64)

    def masks(dataset):
        return next(iter(dataset))["masked_token_ids"].numpy()

    dataset = pipeline(seed=11)
    epoch_1, epoch_2 = masks(dataset), masks(dataset)
    assert not np.array_equal(epoch_1, epoch_2)
    assert np.array_equal(masks(pipeline(seed=11)), epoch_1)
    assert not np.array_equal(masks(pipeline(seed=12)), epoch_1)

    # The same seed gives the same masks, eagerly and in a graph.
    options = dict(vocabulary_size=V, mask_id=MASK_ID, max_predictions=24,
                   special_ids=SPECIAL_IDS)
    eager = pretraining.mlm_mask(ids[0], seed=[3, 4], **options)["masked_token_ids"].numpy()
    graph = tf.function(lambda x: pretraining.mlm_mask(x, seed=[3, 4], **options))(ids[0])
    assert np.array_equal(eager, graph["masked_token_ids"].numpy())


# --- Offline helpers ---


def test_unigram_distribution():
    probabilities = pretraining.unigram_distribution(
        tf.ragged.constant([[CLS, 7, 7, 8, SEP], [CLS, 8, SEP]]), 10, SPECIAL_IDS
    )
    assert probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities, [0] * 7 + [0.5, 0.5, 0], atol=1e-7)
    with pytest.raises(ValueError, match="lie in"):
        pretraining.unigram_distribution([[1, 10]], 10)


def test_nsp_pairs():
    rng = np.random.default_rng(0)
    documents = [
        [[1000 * d + s, 1000 * d + s] for s in range(rng.integers(1, 9))]
        for d in range(1500)
    ]
    pairs = pretraining.make_nsp_pairs(documents, np.random.default_rng(1))
    assert len(pairs) == sum(len(doc) - 1 for doc in documents)
    labels = np.array([is_next for _, _, is_next in pairs])
    assert abs(labels.mean() - 0.5) < 0.03
    for a, b, is_next in pairs:
        if is_next:
            assert b[0] == a[0] + 1  # the true next segment of the same document
        else:
            assert b[0] // 1000 != a[0] // 1000  # a segment of another document
    with pytest.raises(ValueError, match="two"):
        pretraining.make_nsp_pairs([[[1], [2]]], rng)


def test_word_start_flags_align_with_the_tokenizer():
    tokenizer = WordPieceTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "is", "open", "##s"]
    )
    words = tokenizer.tokenize(["Café opens", "opens is"])
    flags = pretraining.word_start_flags(words)
    assert flags.to_list() == [[True, True, False], [True, False, True]]
    assert flags.row_lengths().numpy().tolist() == (
        tokenizer.tokenize_flat(["Café opens", "opens is"]).row_lengths().numpy().tolist()
    )
