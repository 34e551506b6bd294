"""A validation set held out of the training examples: seeded, stratified by label when
the examples have one (`tools/train.py --validation_split` without `--eval_data`).

The same examples, fraction and seed always give the same split (a resumed run
holds out the same examples). Stratified, each label keeps its share on both sides:
the held-out count, `round(fraction * n)` kept within 1 … n-1, is spread over the
labels by largest remainder (ties to the larger label, then the label's name; a label
rounded up keeps one example for training when another label can give one), then
each label's examples are drawn by a seeded shuffle. Both sides keep the file's order.
"""

import collections
import random

from nlpzoo.tasks.io.errors import DataFormatError


def example_labels(examples, label_names):
    """Each example's label when every example has one and it is among the task's class
    names (classification, the bi-encoder's softmax); None otherwise (tagged words,
    graded scores), which means a plain seeded split.

    Args:
        examples: the training examples.
        label_names: the task's `label_names` (called only when every example has a
            `label`), or their list.

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> examples = [ClassificationExample("a", "X"), ClassificationExample("b", "Y")]
    >>> example_labels(examples, ["X", "Y"]), example_labels(examples, lambda _: [])
    (['X', 'Y'], None)
    """
    labels = [getattr(example, "label", None) for example in examples]
    if any(not isinstance(label, str) for label in labels):
        return None
    names = set((label_names(examples) if callable(label_names) else label_names) or ())
    return labels if names and all(label in names for label in labels) else None


def _held_out_counts(labels, total):
    """{label: how many of it to hold out}, summing to `total`, by largest remainder; a
    rounded-up label keeps at least one example for training while another can give one."""
    sizes = collections.Counter(labels)
    shares = {label: total * size / len(labels) for label, size in sizes.items()}
    counts = {label: int(share) for label, share in shares.items()}
    by_remainder = sorted(sizes, key=lambda label: (-(shares[label] - counts[label]),
                                                    -sizes[label], str(label)))
    for keep_one in (True, False):
        for label in by_remainder:
            if sum(counts.values()) < total and counts[label] < sizes[label] - keep_one:
                counts[label] += 1
    return counts


def split_for_validation(examples, fraction, seed=0, labels=None, source="the training data"):
    """(training examples, held-out examples): `fraction` of `examples` held out.

    Args:
        examples: the training examples (a list).
        fraction: the share held out, in (0, 1).
        seed: the shuffle's seed.
        labels: each example's label to stratify by (`example_labels`), or None for
            a plain seeded split.
        source: the file's name, for the error of data too small to split.

    Raises:
        DataFormatError: fewer than two examples (neither side may be empty).

    Examples:
    >>> from nlpzoo.tasks.text.text_readers import ClassificationExample
    >>> examples = [ClassificationExample(f"q{i}", "AB"[i % 2]) for i in range(10)]
    >>> train, held_out = split_for_validation(examples, 0.2, seed=0,
    ...                                        labels=[e.label for e in examples])
    >>> len(train), sorted(e.label for e in held_out)
    (8, ['A', 'B'])
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"the validation fraction must be in (0, 1), got {fraction}")
    count = len(examples)
    if count < 2:
        raise DataFormatError(f"{source}: {count} example{'' if count == 1 else 's'}, too few "
                              "to hold out a validation split (pass --eval_data)")
    total = min(max(round(fraction * count), 1), count - 1)
    rng = random.Random(seed)
    if labels is None:
        held = set(rng.sample(range(count), total))
    else:
        by_label = collections.defaultdict(list)
        for index, label in enumerate(labels):
            by_label[label].append(index)
        held = set()
        for label, size in sorted(_held_out_counts(labels, total).items(), key=lambda item:
                                  str(item[0])):
            held.update(rng.sample(by_label[label], size))
    return ([example for index, example in enumerate(examples) if index not in held],
            [example for index, example in enumerate(examples) if index in held])


def describe_split(held_out, total, source, stratified, seed):
    """The one line a run prints about its split.

    Examples:
    >>> describe_split(20, 200, "train.csv", True, 0)
    'validation: 20 of 200 examples held out of train.csv, stratified by label, seed 0'
    """
    how = "stratified by label" if stratified else "not stratified"
    return f"validation: {held_out} of {total} examples held out of {source}, {how}, seed {seed}"
