"""`LabelSet`: label names ↔ ids, with errors that say where an unknown label was met."""


class LabelSet:
    """The labels of a task in id order.

    Args:
        names: the label names, in id order (no duplicates).
        kind: what a label is called in error messages ("label", "tag",
            "entity type").

    Examples:
    >>> tags = LabelSet(["O", "B-PER", "I-PER"], kind="tag")
    >>> tags.id("B-PER", where="train.txt:3"), len(tags)
    (1, 3)
    >>> tags.id("B-LOC", where="dev.txt:12")
    Traceback (most recent call last):
    ...
    ValueError: dev.txt:12: tag 'B-LOC' was not seen in training (known tags: O, B-PER, I-PER)
    """

    def __init__(self, names, kind="label"):
        self.names = [str(name) for name in names]
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"duplicate {kind} names in {self.names}")
        self.kind = kind
        self._ids = {name: i for i, name in enumerate(self.names)}

    def __len__(self):
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __contains__(self, name):
        return name in self._ids

    def id(self, name, where):
        """The id of `name`; an unknown name is a `ValueError` that starts with `where`."""
        if name not in self._ids:
            raise ValueError(f"{where}: {self.kind} {name!r} was not seen in training "
                             f"(known {self.kind}s: {', '.join(self.names)})")
        return self._ids[name]


def sorted_label_names(names):
    """Distinct label names in a stable order: sorted, numerically when all are integers.

    Examples:
    >>> sorted_label_names(["1", "0", "10", "1"]), sorted_label_names(["NUM", "HUM"])
    (['0', '1', '10'], ['HUM', 'NUM'])
    """
    names = {str(name) for name in names}
    if all(name.lstrip("-").isdigit() for name in names):
        return sorted(names, key=int)
    return sorted(names)
