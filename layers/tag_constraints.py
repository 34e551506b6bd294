"""Which tag transitions a BIO-style tagging scheme allows, for constrained CRFs."""

# Prefixes each scheme knows, besides the bare "O" tag.
_SCHEME_PREFIXES = {
    "IOB2": ("B", "I"),
    "IOB1": ("B", "I"),
    "BIOES": ("B", "I", "E", "S"),
}
_SCHEME_ALIASES = {"BIO": "IOB2"}


def _parse_tag(tag, prefixes):
    """Splits "B-PER" into ("B", "PER"); "O" into ("O", None)."""
    if tag == "O":
        return "O", None
    prefix, dash, entity_type = str(tag).partition("-")
    if not dash or prefix not in prefixes or not entity_type:
        raise ValueError(
            f"Tag {tag!r} is not 'O' or one of "
            f"{', '.join(p + '-<type>' for p in prefixes)}"
        )
    return prefix, entity_type


def _iob2_allowed(previous, current):
    prefix, entity_type = current
    if prefix == "I":
        return previous[0] in ("B", "I") and previous[1] == entity_type
    return True  # O and B-x may follow anything.


def _iob1_allowed(previous, current):
    prefix, entity_type = current
    if prefix == "B":
        # B-x only separates two adjacent entities of the same type.
        return previous[0] in ("B", "I") and previous[1] == entity_type
    return True  # O and I-x (which starts an entity) may follow anything.


def _bioes_allowed(previous, current):
    if previous[0] in ("B", "I"):
        # Inside an entity: continue it or end it, with the same type.
        return current[0] in ("I", "E") and current[1] == previous[1]
    # After O, E-x or S-x: outside any entity.
    return current[0] in ("O", "B", "S")


_RULES = {
    # scheme: (transition rule, prefixes allowed first, prefixes allowed last)
    "IOB2": (_iob2_allowed, ("O", "B"), ("O", "B", "I")),
    "IOB1": (_iob1_allowed, ("O", "I"), ("O", "B", "I")),
    "BIOES": (_bioes_allowed, ("O", "B", "S"), ("O", "E", "S")),
}


def allowed_transitions(scheme, tags):
    """Masks of the tag transitions that `scheme` allows, for `CRF(allowed=...)`.

    Rules, where x is an entity type:

    - "IOB2" (alias "BIO"): a sequence starts with O or B-x; I-x only follows
      B-x or I-x; any tag may end a sequence.
    - "IOB1": I-x may follow anything (it starts an entity); B-x only follows
      B-x or I-x, and marks a new entity right after one of the same type, so
      it cannot start a sequence; any tag may end a sequence.
    - "BIOES": a sequence starts with O, B-x or S-x; B-x and I-x are followed
      by I-x or E-x; E-x, S-x and O by O, B-y or S-y; a sequence ends with O,
      E-x or S-x.

    Args:
        scheme: "IOB2", "BIO", "IOB1" or "BIOES" (case-insensitive).
        tags: the tag names in id order, e.g. `["O", "B-PER", "I-PER"]`.

    Returns:
        `(allowed, allowed_start, allowed_end)`: `allowed[i][j]` is 1 when tag
        j may follow tag i, `allowed_start[j]` when tag j may come first,
        `allowed_end[i]` when tag i may come last; nested lists of 0/1 ints.

    Raises:
        ValueError: for an unknown scheme, or a tag the scheme does not know
            (such as "X-PER", or "E-PER" under IOB2); the message names it.

    Examples:
    >>> allowed, start, end = allowed_transitions("IOB2", ["O", "B-PER", "I-PER"])
    >>> allowed
    [[1, 1, 0], [1, 1, 1], [1, 1, 1]]
    >>> start, end
    ([1, 1, 0], [1, 1, 1])
    """
    name = str(scheme).upper()
    name = _SCHEME_ALIASES.get(name, name)
    if name not in _RULES:
        raise ValueError(
            f"Unknown tagging scheme {scheme!r}; expected one of "
            f"{sorted(list(_RULES) + list(_SCHEME_ALIASES))}"
        )
    rule, first_prefixes, last_prefixes = _RULES[name]
    parsed = [_parse_tag(tag, _SCHEME_PREFIXES[name]) for tag in tags]
    allowed = [
        [int(rule(previous, current)) for current in parsed] for previous in parsed
    ]
    allowed_start = [int(prefix in first_prefixes) for prefix, _ in parsed]
    allowed_end = [int(prefix in last_prefixes) for prefix, _ in parsed]
    return allowed, allowed_start, allowed_end
