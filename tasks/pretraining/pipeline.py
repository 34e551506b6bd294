"""The pretraining `tf.data` pipeline: packed sequences in, masked batches out.

Masks are drawn in `Dataset.map` from stateless seeds, so every pass over the
data sees a new order and new masks while a run stays reproducible: the seed
of the example at position i of pass p is [seed, p * count + i], and the
order of pass p is fixed by (seed, p), so the stream restarted with `skip(n)`
replays its batches exactly; the evaluation pipeline keys its seeds by example index, so its masks never
change and validation losses are comparable from one epoch to the next.

Each element is `(inputs, labels)`:

- inputs: `token_ids` (masked), `segment_ids`, `padding_mask` int32 [B, T],
  `mask_positions` int32 [B, P]; for `span_sbo` also `span_left`,
  `span_right`, `span_offset` int32 [B, P];
- labels: `mlm_labels` int32 [B, P] (the original ids, -1 in unused slots);
  `next_sentence` int32 [B] for `mlm_nsp`, `sentence_order` int32 [B] for
  `mlm_sop` (1 = the two segments in their order; `pair_objectives`); `sbo_labels` int32 [B, P] for
  `span_sbo` (-1 where a span touches an edge or in unused slots).
"""

import functools

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.pretraining.pair_objectives import pair_objective
from nlpzoo.tasks.text.autotuning import without_autotuning
from nlpzoo.tasks.text.masking import mlm_mask, span_mask

OBJECTIVES = ("mlm", "mlm_nsp", "mlm_sop", "span_sbo")


def _mask_function(objective, *, vocabulary_size, mask_id, special_ids, max_predictions,
                   unigram_probabilities, whole_word, exact_budget):
    common = dict(vocabulary_size=vocabulary_size, mask_id=mask_id, special_ids=special_ids,
                  max_predictions=max_predictions, unigram_probabilities=unigram_probabilities)
    if objective == "span_sbo":
        return functools.partial(span_mask, exact_budget=exact_budget, **common)
    return functools.partial(mlm_mask, whole_word=whole_word, **common)


def make_pretraining_dataset(
    arrays,
    *,
    objective,
    continuation,
    special_ids,
    mask_id,
    batch_size,
    max_predictions,
    unigram_probabilities=None,
    whole_word=False,
    exact_budget=True,
    seed=0,
    training=True,
):
    """Batches of masked sequences for `objective` (one of `OBJECTIVES`).

    Args:
        arrays: from `pack_single_segments` or `pack_sentence_pairs` (the
            latter, with `next_sentence` for "mlm_nsp" or `sentence_order`
            for "mlm_sop").
        continuation: bool [V], True for `##` pieces: word starts are the
            other pieces (`continuation_flags`).
        special_ids: ids never selected ([PAD], [CLS], [SEP], [MASK], [UNK]).
        mask_id: the [MASK] id.
        batch_size: sequences per batch; the last partial batch is dropped
            when training so shapes stay static.
        max_predictions: P.
        unigram_probabilities: float [V] for random replacements; None draws
            them uniformly.
        whole_word: whole-word MLM.
        exact_budget: span masking stops at exactly 15% of the tokens, the
            last span cut short if need be (SpanBERT's rule).
        seed: the masking and shuffling seed.
        training: shuffle, repeat forever and draw new masks on every pass;
            otherwise one pass with fixed masks.

    Examples:
    >>> arrays = {"token_ids": np.array([[2, 5, 6, 7, 8, 9, 3, 0]] * 4, np.int32),
    ...           "segment_ids": np.zeros((4, 8), np.int32)}
    >>> ds = make_pretraining_dataset(arrays, objective="mlm",
    ...     continuation=np.zeros(10, bool), special_ids=(0, 1, 2, 3, 4), mask_id=4,
    ...     batch_size=2, max_predictions=2, training=False)
    >>> x, y = next(iter(ds))
    >>> tuple(x["mask_positions"].shape), tuple(y["mlm_labels"].shape)
    ((2, 2), (2, 2))
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    pair = pair_objective(objective)
    if pair is not None and pair.label not in arrays:
        raise ValueError(f"{objective} needs sentence pairs with {pair.label} labels "
                         f"(pack_sentence_pairs(..., objective={objective!r}))")
    vocabulary_size = len(continuation)
    mask = _mask_function(
        objective, vocabulary_size=vocabulary_size, mask_id=mask_id,
        special_ids=tuple(special_ids), max_predictions=max_predictions,
        unigram_probabilities=unigram_probabilities, whole_word=whole_word,
        exact_budget=exact_budget,
    )
    continuation = tf.constant(continuation, tf.bool)
    pad_id = special_ids[0] if special_ids else 0

    def transform(example, example_seed):
        token_ids = example["token_ids"]
        word_starts = ~tf.gather(continuation, token_ids)
        masked = mask(token_ids, seed=example_seed, word_starts=word_starts)
        inputs = {
            "token_ids": masked["masked_token_ids"],
            "segment_ids": example["segment_ids"],
            "padding_mask": tf.cast(token_ids != pad_id, tf.int32),
            "mask_positions": masked["mask_positions"],
        }
        labels = {"mlm_labels": tf.where(masked["mask_weights"] > 0, masked["target_ids"], -1)}
        if pair is not None:
            labels[pair.label] = example[pair.label]
        if objective == "span_sbo":
            for name in ("span_left", "span_right", "span_offset"):
                inputs[name] = masked[name]
            labels["sbo_labels"] = tf.where(masked["sbo_weights"] > 0, masked["target_ids"], -1)
        return inputs, labels

    keys = ("token_ids", "segment_ids") + ((pair.label,) if pair is not None else ())
    dataset = tf.data.Dataset.from_tensor_slices({key: arrays[key] for key in keys})
    if training:
        # Pass p has its own order and masks, pure functions of (seed, p): no seed
        # generator that discarded iterators advance, so a stream restarted with
        # `skip(n)` replays exactly (how a resumed tools/pretrain.py run goes on).
        count = len(arrays["token_ids"])
        base_seed = tf.constant(seed or 0, tf.int64)
        columns = {key: tf.constant(arrays[key]) for key in keys}

        def one_pass(index):
            order = tf.random.experimental.stateless_shuffle(
                tf.range(count, dtype=tf.int64), seed=tf.stack([base_seed, index]))
            return tf.data.Dataset.from_tensor_slices(order).enumerate().map(
                lambda position, row: (
                    {key: tf.gather(column, row) for key, column in columns.items()},
                    tf.stack([base_seed, index * count + position])))

        dataset = tf.data.Dataset.counter().flat_map(one_pass)
    else:
        # Fixed masks: the seed of example i is [seed, i].
        dataset = dataset.enumerate().map(
            lambda index, example: (example, tf.stack([tf.cast(seed, tf.int64), index])))
    dataset = dataset.map(transform, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=training)
    return without_autotuning(dataset.prefetch(tf.data.AUTOTUNE))
