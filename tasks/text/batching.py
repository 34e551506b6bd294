"""Padding to a small fixed set of lengths, so XLA compiles a few shapes only."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.autotuning import without_autotuning

DEFAULT_BUCKETS = (16, 32, 64, 128, 256, 512)
# The features whose length picks an example's bucket: the tokens, by default. Two-tower
# models (a bi-encoder's text and text pair) name both, and both pad to the longer one's.
LENGTH_FEATURES = ("token_ids",)
GROUPING_STEP = 8


def bucket_lengths(max_length, buckets=DEFAULT_BUCKETS):
    """The bucket lengths up to `max_length`, always ending with `max_length`.

    Examples:
    >>> bucket_lengths(100)
    (16, 32, 64, 100)
    """
    return tuple(b for b in buckets if b < max_length) + (int(max_length),)


def bucket_length(length, max_length, buckets=DEFAULT_BUCKETS):
    """The smallest of `bucket_lengths(max_length)` that is >= `length` (int32 tensors).

    Examples:
    >>> int(bucket_length(17, 100)), int(bucket_length(64, 100)), int(bucket_length(90, 100))
    (32, 64, 100)
    """
    lengths = tf.constant(bucket_lengths(max_length, buckets), tf.int32)
    return tf.gather(lengths, tf.reduce_sum(tf.cast(lengths < length, tf.int32)))


def pad_batch_to_bucket(features, labels, max_length, padding_values,
                        length_features=LENGTH_FEATURES):
    """Right-pads each [batch, time, ...] feature and label to the bucket of the longest
    `length_features`; tensors without a variable-length second axis stay as they are.

    Examples:
    >>> features = {"token_ids": tf.ones([2, 5], tf.int32)}
    >>> labels = {"tags": tf.ones([2, 3], tf.int32), "class": tf.ones([2], tf.int32)}
    >>> def shapes(features, labels):  # as batched by tf.data: time of unknown length
    ...     return ({name: value.shape.as_list() for name, value in features.items()},
    ...             {name: value.shape.as_list() for name, value in labels.items()})
    >>> spec = ({"token_ids": tf.TensorSpec([None, None], tf.int32)},
    ...         {"tags": tf.TensorSpec([None, None], tf.int32),
    ...          "class": tf.TensorSpec([None], tf.int32)})
    >>> padded = tf.function(lambda f, l: pad_batch_to_bucket(f, l, 64, {}),
    ...                      input_signature=spec)(features, labels)
    >>> shapes(*padded)
    ({'token_ids': [2, 16]}, {'tags': [2, 16], 'class': [2]})
    """
    time = tf.reduce_max(tf.stack([tf.shape(features[name])[1] for name in length_features]))
    target = bucket_length(time, max_length)

    def pad(name, tensor):
        if tensor.shape.rank < 2 or tensor.shape[1] is not None:
            # Not along time: a per-example value ([B]) or a fixed-size row (a
            # distillation student's [B, classes] soft targets).
            return tensor
        # Word-level features may be shorter than the tokens: pad each to the target.
        missing = target - tf.shape(tensor)[1]
        paddings = [[0, 0], [0, missing]] + [[0, 0]] * (tensor.shape.rank - 2)
        padded = tf.pad(tensor, paddings, constant_values=padding_values.get(name, 0))
        return tf.ensure_shape(padded, [None, None] + tensor.shape[2:])

    features = {name: pad(name, value) for name, value in features.items()}
    if isinstance(labels, dict):
        labels = {name: pad(name, value) for name, value in labels.items()}
    elif labels is not None:
        labels = pad("labels", labels)
    return features, labels


def batch_to_buckets(dataset, batch_size, max_length, padding_values, group_by_length,
                     length_features=LENGTH_FEATURES, group_sizes=None):
    """Batches (features, labels) examples whose features are [time, ...] tensors.

    `group_by_length=True` (training) puts examples of similar length together,
    in groups `GROUPING_STEP` tokens wide (`group_by_length_batches`; it needs
    `group_sizes`, the examples per group); otherwise (evaluation,
    prediction) the order is kept. Either way each batch is padded to the
    bucket of its longest example, so the shapes are the few of
    `bucket_lengths` (what XLA compiles); a packing encoder computes only up
    to the longest (`TransformerEncoder.pack_length`). An example's length is
    that of the longest of its `length_features`.
    """
    spec = dataset.element_spec
    padded_shapes = tf.nest.map_structure(lambda s: s.shape, spec)
    values = _padding_value_structure(spec, padding_values)
    if group_by_length:
        if group_sizes is None:
            raise ValueError("group_by_length needs group_sizes (length_group_sizes)")
        dataset = group_by_length_batches(dataset, batch_size, max_length, group_sizes,
                                          padded_shapes, values, length_features)
    else:
        dataset = dataset.padded_batch(batch_size, padded_shapes, values)
    return dataset.map(
        lambda features, labels: pad_batch_to_bucket(features, labels, max_length, padding_values,
                                                     length_features),
        num_parallel_calls=tf.data.AUTOTUNE,
    )


def length_group_sizes(lengths, max_length):
    """How many of the examples of these `lengths` fall in each length group
    (`grouping_boundaries`), one count per group.

    >>> length_group_sizes([3, 5, 8, 12, 40], max_length=64).tolist()
    [3, 1, 0, 0, 1, 0, 0, 0]
    """
    boundaries = grouping_boundaries(max_length)
    groups = np.searchsorted(boundaries, np.asarray(lengths, np.int64), side="right")
    return np.bincount(groups, minlength=len(boundaries) + 1).astype(np.int64)


def group_by_length_batches(dataset, batch_size, max_length, group_sizes, padded_shapes,
                            padding_values, length_features=LENGTH_FEATURES):
    """Batches of examples of similar length, in stream order, with no more batches than needed.

    Each length group (`GROUPING_STEP` tokens wide) fills whole batches of
    its own examples, emitted as they fill. A group's last
    `size % batch_size` examples (in stream order) would make a partial batch
    of their own; instead they go to one shared pool, which makes whole
    batches of mixed lengths too, so an epoch has
    `training_batch_count(...)` batches: at most one partial one, against
    up to one per group. Fewer, fuller steps: each optimizer step updates
    every weight whatever the batch holds (the embedding table included),
    and packing (`TransformerEncoder.pack_length`) computes no padding in a
    mixed batch. The whole batches of the groups are those that grouping
    without the pool makes.

    Args:
        dataset: (features, labels) examples, each feature [time, ...].
        batch_size: examples per batch.
        max_length: the longest example; sets the groups (`grouping_boundaries`).
        group_sizes: examples per group (`length_group_sizes` of all the
            examples the stream holds, in any order).
        padded_shapes, padding_values: as `padded_batch` takes them.
        length_features: the features whose longest is an example's length.

    Returns:
        The batched dataset (each batch padded to its longest example).
    """
    boundaries = tf.constant(grouping_boundaries(max_length), tf.int64)
    sizes = np.asarray(group_sizes, np.int64)
    pool = len(sizes)  # the key of the shared pool of the groups' remainders
    in_whole_batches = tf.constant(sizes - sizes % batch_size, tf.int64)

    def assign(seen, example):
        features, labels = example
        length = tf.cast(tf.reduce_max(tf.stack(
            [tf.shape(features[name])[0] for name in length_features])), tf.int64)
        group = tf.reduce_sum(tf.cast(boundaries <= length, tf.int64))
        rank = seen[group]  # this example's place among its group's, in stream order
        key = tf.where(rank < in_whole_batches[group], group, pool)
        return seen + tf.one_hot(group, pool, dtype=tf.int64), (features, labels, key)

    def batch(key, window):
        return window.map(lambda features, labels, _: (features, labels)).padded_batch(
            batch_size, padded_shapes, padding_values)

    return (dataset.scan(tf.zeros([pool], tf.int64), assign)
            .group_by_window(key_func=lambda features, labels, key: key,
                             reduce_func=batch, window_size=batch_size))


def _padding_value_structure(spec, padding_values):
    features_spec, labels_spec = spec
    features = {
        name: tf.constant(padding_values.get(name, 0), s.dtype)
        for name, s in features_spec.items()
    }
    if isinstance(labels_spec, dict):
        labels = {
            name: tf.constant(padding_values.get(name, 0), s.dtype)
            for name, s in labels_spec.items()
        }
    else:
        labels = tf.constant(padding_values.get("labels", 0), labels_spec.dtype)
    return features, labels


def shuffle_batch_and_count(dataset, count, batch_size, max_length, padding_values, training,
                            seed=None, length_features=LENGTH_FEATURES, group_by_length=None):
    """The common tail of every input pipeline: cache the encoded examples, then batch.

    Training: shuffle every epoch, group examples of similar length into
    batches (`group_by_length_batches`). Otherwise: keep the order. Either way the dataset declares its
    number of batches (`assert_cardinality`): Keras sizes progress bars with
    it, and `EncoderTaskModel.fit` resolves a learning-rate schedule from it.
    The cache is filled here, in one pass that checks there are `count`
    examples (and, for training, reads each example's length: see
    `training_batch_count`). `length_features` name the features whose
    longest decides the bucket. `group_by_length=False` keeps the shuffled
    order in training too (a loss that reads the other examples of a batch,
    such as in-batch negatives, wants random batch-mates); None: `training`.

    `seed`: an int (or None) reshuffles at every iteration; `(seed, pass)`
    fixes this pass's order, the same at every iteration. TensorFlow draws
    the seeds of reshuffled iterations from a generator that every iterator
    of the dataset advances, including ones Keras or `tf.distribute` make
    and drop; a fixed order per pass is what makes a stream replayable.

    Examples:
    >>> lengths = [3, 3, 3, 12, 20]  # groups of GROUPING_STEP tokens: {3, 3, 3}, {12}, {20}
    >>> examples = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(
    ...     [[1] * n for n in lengths])).map(lambda row: ({"token_ids": row}, 0))
    >>> batches = shuffle_batch_and_count(examples, 5, 2, 32, {}, training=True)
    >>> int(batches.cardinality()), len(list(batches))  # one whole batch of 3s; the rest: 2
    (3, 3)
    """
    dataset = without_autotuning(dataset).cache()  # before the pass that fills the cache
    # Evaluation data is read by several iterators (Keras's distributed one for
    # validation, the evaluation callback's, the final evaluation), and two of them
    # meeting a half-written in-memory cache can see it cut short (a CI run lost
    # the last of 33 windows). Filled now, the cache is only ever read. Training
    # data fills it in the same pass that counts its batches.
    lengths = _fill_cache(dataset, count, length_features if training else None)
    if training and isinstance(seed, tuple):
        base, index = seed
        pass_seed = ((base or 0) * 1_000_003 + index) % (2**31 - 1)
        dataset = dataset.shuffle(count, seed=pass_seed, reshuffle_each_iteration=False)
    elif training:
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    group_by_length = training if group_by_length is None else group_by_length and training
    group_sizes = length_group_sizes(lengths, max_length) if group_by_length else None
    dataset = batch_to_buckets(dataset, batch_size, max_length, padding_values,
                               group_by_length=group_by_length, length_features=length_features,
                               group_sizes=group_sizes)
    if training:
        batches = training_batch_count(lengths, batch_size, max_length)
    else:
        batches = -(-count // batch_size)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
    return dataset.prefetch(tf.data.AUTOTUNE)


def grouping_boundaries(max_length):
    """The length boundaries that `batch_to_buckets` groups training examples by.

    >>> grouping_boundaries(32)
    [9, 17, 25]
    """
    return list(range(GROUPING_STEP + 1, bucket_lengths(max_length)[-1] + 1, GROUPING_STEP))


def training_batch_count(lengths, batch_size, max_length):
    """The number of batches `batch_to_buckets(group_by_length=True)` makes of examples of
    these `lengths`, whatever their order.

    Each length group (`grouping_boundaries`) fills floor(n / batch_size)
    whole batches; the groups' remainders share batches of their own
    (`group_by_length_batches`): ceil(sum of n % batch_size / batch_size).
    All in all ceil(examples / batch_size), as without grouping; a test
    checks it on shuffled streams.

    >>> training_batch_count([3, 5, 8, 12, 40], batch_size=2, max_length=64)  # 1 + ceil(3 / 2)
    3
    """
    del max_length  # the groups do not change the count
    return -(-len(lengths) // batch_size)


def _fill_cache(cached, count, length_features=None):
    """Reads `cached` (a `.cache()`d dataset) once to its end: the cache is then complete.

    With `length_features`, returns each example's length (that of the
    longest of those features), read in the same pass; else None.
    """
    if length_features is None:
        seen = int(cached.reduce(tf.constant(0, tf.int64), lambda total, _: total + 1))
        lengths = None
    else:
        lengths = np.concatenate([np.zeros(0, np.int64)] + [
            batch.numpy() for batch in cached.map(
                lambda features, labels: tf.cast(tf.reduce_max(tf.stack(
                    [tf.shape(features[name])[0] for name in length_features])), tf.int64))
            .batch(4096)])
        seen = len(lengths)
    if seen != count:
        raise RuntimeError(f"the input pipeline made {seen} examples of {count}")
    return lengths
