"""Tag schemes (IOB2, IOB1, BIOES): tags, entity spans, and which tag may follow which.

The one home of BIO knowledge: readers, metrics, the tagging model's CRF constraints and the
serving signature all ask this module. Pure Python and NumPy, no TensorFlow.

Schemes:

- IOB2 (also called BIO): every entity starts with `B-TYPE`, continues with `I-TYPE`.
- IOB1: an entity starts with `I-TYPE`; `B-TYPE` only marks the first word of an entity that
  directly follows another entity of the same type.
- BIOES (IOBES): `B-` begin, `I-` inside, `E-` end, `S-` single-word entity.

Spans are `(start, end, type)` over word positions with an inclusive `end`.
"""

import typing

import numpy as np

SCHEMES = ("IOB2", "IOB1", "BIOES")
# Every tag prefix; `tag_parts` numbers them in this order (label lists sort B, I, E, S too).
PREFIXES = ("O", "B", "I", "E", "S")

_ALIASES = {"BIO": "IOB2"}
# The prefix letters each scheme allows besides the bare "O"; None (no scheme) allows all.
_PREFIXES_OF_SCHEME = {"IOB2": "BI", "IOB1": "BI", "BIOES": "BIES", None: "BIES"}
# What a sentence boundary looks like to the transition rules (see `_may_follow`).
_OUTSIDE = ("O", None)


def canonical_scheme(scheme):
    """The scheme's canonical name: upper case, and "BIO" read as "IOB2".

    Args:
        scheme: "IOB2", "BIO", "IOB1" or "BIOES", in any case.

    Returns:
        One of `SCHEMES`.

    Raises:
        ValueError: an unknown scheme (the message names it).

    Examples:
    >>> canonical_scheme("bio"), canonical_scheme("BIOES")
    ('IOB2', 'BIOES')
    """
    name = str(scheme).upper()
    name = _ALIASES.get(name, name)
    if name not in SCHEMES:
        raise ValueError(
            f"scheme={scheme!r}: expected one of {SCHEMES} (or 'BIO', another name for IOB2)"
        )
    return name


def scheme_prefixes(scheme):
    """The prefix letters `scheme` allows besides "O"; all of them when `scheme` is None.

    Examples:
    >>> scheme_prefixes("IOB2"), scheme_prefixes("BIOES"), scheme_prefixes(None)
    ('BI', 'BIES', 'BIES')
    """
    return _PREFIXES_OF_SCHEME[None if scheme is None else canonical_scheme(scheme)]


def split_tag(tag, allowed_prefixes="BIES"):
    """Splits a tag into its prefix and entity type.

    Args:
        tag: a tag such as `"B-PER"` or `"O"`. The type is everything after the first `-`,
            so `"B-SOME-TYPE"` has type `"SOME-TYPE"`.
        allowed_prefixes: the prefix letters accepted besides the bare `"O"`.

    Returns:
        `(prefix, type)`; `("O", None)` for `"O"`.

    Raises:
        ValueError: the tag is not `"O"` nor an allowed prefix, a `-` and a non-empty type.

    Examples:
    >>> split_tag("B-PER"), split_tag("O")
    (('B', 'PER'), ('O', None))
    """
    if tag == "O":
        return "O", None
    prefix, dash, entity_type = str(tag).partition("-")
    if len(prefix) != 1 or prefix not in allowed_prefixes or not dash or not entity_type:
        choices = "/".join(f"{p}-" for p in allowed_prefixes)
        raise ValueError(f"tag {tag!r} is not O nor {choices} followed by an entity type")
    return prefix, entity_type


class TagParts(typing.NamedTuple):
    """Per tag id, its prefix and entity type as integers (see `tag_parts`)."""

    prefix_ids: np.ndarray  # [K] int32, an index into PREFIXES ("O" is 0)
    type_ids: np.ndarray  # [K] int32, an index into type_names, -1 for "O"
    type_names: list  # the entity types, sorted


def tag_parts(tags):
    """Prefix and entity type of every tag as integer arrays, for vectorised decoding.

    Gather with predicted tag ids to get per-word prefixes and types without a Python loop.

    Args:
        tags: the tag names in id order, e.g. `["O", "B-PER", "I-PER"]`.

    Returns:
        `TagParts(prefix_ids, type_ids, type_names)`: `prefix_ids[k]` indexes `PREFIXES`,
        `type_ids[k]` indexes `type_names` (-1 for "O"), `type_names` are sorted.

    Raises:
        ValueError: a tag is not `O` nor `B-`/`I-`/`E-`/`S-` followed by a type.

    Examples:
    >>> parts = tag_parts(["O", "B-PER", "I-PER", "B-LOC"])
    >>> parts.prefix_ids.tolist(), parts.type_ids.tolist(), parts.type_names
    ([0, 1, 2, 1], [-1, 1, 1, 0], ['LOC', 'PER'])
    """
    split = [split_tag(tag) for tag in tags]
    type_names = sorted({entity_type for _, entity_type in split if entity_type is not None})
    prefix_ids = [PREFIXES.index(prefix) for prefix, _ in split]
    type_ids = [-1 if t is None else type_names.index(t) for _, t in split]
    return TagParts(np.asarray(prefix_ids, np.int32), np.asarray(type_ids, np.int32), type_names)


# ---------------------------------------------------------------------------------------------
# Tags <-> spans
# ---------------------------------------------------------------------------------------------


def _continues_entity(previous, current):
    """Whether tag `current` extends the entity that `previous` belongs to (conlleval rules):
    only `I-x` or `E-x` right after `B-x` or `I-x` of the same type does."""
    previous_prefix, previous_type = previous
    current_prefix, current_type = current
    return previous_prefix in "BI" and current_prefix in "IE" and previous_type == current_type


def tags_to_spans(tags):
    """Entity spans of a tag sequence, read as `seqeval`'s default mode (= conlleval) reads it.

    Any non-`O` tag starts a new entity unless it is `I-x`/`E-x` right after `B-x`/`I-x` of the
    same type. So an `I-x` after `O`, at the start, or after another type starts an entity (the
    lenient reading that makes IOB1 and slightly invalid IOB2 usable), and `E-x`/`S-x` of
    BIOES behave as `seqeval` treats them.

    Args:
        tags: a sequence of tags (`O`, or `B-`/`I-`/`E-`/`S-` followed by a type).

    Returns:
        A list of `(start, end, type)` with an inclusive `end`, sorted by `start`.

    Raises:
        ValueError: a tag is not of that form.

    Examples:
    >>> tags_to_spans(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [(0, 1, 'PER'), (3, 3, 'LOC'), (4, 4, 'LOC'), (5, 5, 'ORG')]
    """
    spans = []
    previous = _OUTSIDE
    for position, tag in enumerate(tags):
        current = split_tag(tag)
        if _continues_entity(previous, current):
            start, _, entity_type = spans[-1]
            spans[-1] = (start, position, entity_type)
        elif current[0] != "O":
            spans.append((position, position, current[1]))
        # conlleval closes an entity after E-x and S-x even when I-x/E-x of the same type follow.
        previous = current if current[0] in "BI" else _OUTSIDE
    return spans


def spans_to_tags(spans, length):
    """IOB2 tags for non-overlapping entity spans; the inverse of `tags_to_spans` on valid IOB2.

    Args:
        spans: `(start, end, type)` triples with an inclusive `end`, in any order.
        length: number of words in the sentence.

    Returns:
        A list of `length` IOB2 tags.

    Raises:
        ValueError: a span is empty, out of range, or overlaps another.

    Examples:
    >>> spans_to_tags([(0, 1, "PER"), (3, 3, "LOC")], 5)
    ['B-PER', 'I-PER', 'O', 'B-LOC', 'O']
    """
    tags = ["O"] * length
    for start, end, entity_type in sorted(spans):
        if not 0 <= start <= end < length:
            raise ValueError(f"span {(start, end, entity_type)} is outside 0..{length - 1}")
        if any(tag != "O" for tag in tags[start : end + 1]):
            raise ValueError(f"span {(start, end, entity_type)} overlaps another span")
        tags[start] = f"B-{entity_type}"
        tags[start + 1 : end + 1] = [f"I-{entity_type}"] * (end - start)
    return tags


def iob1_to_iob2(tags):
    """Converts IOB1 tags to IOB2: an `I-x` that does not continue an `x` entity becomes `B-x`.

    Valid IOB2 input comes back unchanged, and the result reads as the same entities under
    `tags_to_spans`.

    Args:
        tags: a sequence of `O`, `B-x` and `I-x` tags.

    Returns:
        A list of IOB2 tags.

    Raises:
        ValueError: a tag is not `O`, `B-x` or `I-x`.

    Examples:
    >>> iob1_to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC']
    """
    converted = []
    previous = _OUTSIDE
    for tag in tags:
        prefix, entity_type = split_tag(tag, allowed_prefixes="BI")
        if prefix == "I" and not _continues_entity(previous, (prefix, entity_type)):
            tag = f"B-{entity_type}"
        converted.append(tag)
        previous = (prefix, entity_type)
    return converted



def close_cut_entities(tags, scheme, cut_before, cut_after):
    """The tags of a piece cut out of a sentence, as a sequence valid on its own under `scheme`.

    A window of a long sentence may start or end inside an entity. Its tags
    are then not a valid sentence (an IOB2 sentence cannot start with `I-x`,
    a BIOES one cannot end with `B-x`), and a CRF scores them as impossible.
    This rewrites only the tags at a cut edge so that the piece reads as the
    part of each entity that lies inside it: a leading `I-x` becomes `B-x`
    (BIOES: `E-x` becomes `S-x`; IOB1: a leading `B-x` becomes `I-x`), and
    under BIOES a trailing `B-x` becomes `S-x` and `I-x` becomes `E-x`.

    Args:
        tags: the piece's tags.
        scheme: "IOB2", "BIO", "IOB1" or "BIOES".
        cut_before: whether the sentence goes on before the piece.
        cut_after: whether the sentence goes on after it.

    Returns:
        A list of tags, the same entities as `tags` within the piece.

    Examples:
    >>> close_cut_entities(["I-PER", "O"], "IOB2", cut_before=True, cut_after=False)
    ['B-PER', 'O']
    >>> close_cut_entities(["O", "B-LOC", "I-LOC"], "BIOES", cut_before=False, cut_after=True)
    ['O', 'B-LOC', 'E-LOC']
    >>> close_cut_entities(["I-ORG"], "BIOES", cut_before=True, cut_after=True)
    ['S-ORG']
    """
    scheme = canonical_scheme(scheme)
    closed = list(tags)
    if not closed:
        return closed
    if cut_before:
        prefix, entity_type = split_tag(closed[0], scheme_prefixes(scheme))
        first = {"IOB2": {"I": "B"}, "IOB1": {"B": "I"}, "BIOES": {"I": "B", "E": "S"}}
        if prefix in first[scheme]:
            closed[0] = f"{first[scheme][prefix]}-{entity_type}"
    if cut_after and scheme == "BIOES":
        prefix, entity_type = split_tag(closed[-1], scheme_prefixes(scheme))
        if prefix in "BI":
            closed[-1] = f"{'S' if prefix == 'B' else 'E'}-{entity_type}"
    return closed

# ---------------------------------------------------------------------------------------------
# Which scheme, and which transitions it allows
# ---------------------------------------------------------------------------------------------


def _entity_start_counts(tag_sequences):
    """Counts entities that begin with `I-` and entities that begin with `B-`.

    "Begin" means at the sentence start, after `O`, or after a tag of another type; a `B-x`
    right after `B-x`/`I-x` is the IOB1 separator of adjacent same-type entities and is not
    counted.
    """
    starts_with_i = starts_with_b = 0
    for tags in tag_sequences:
        previous_type = None
        for tag in tags:
            prefix, entity_type = split_tag(tag)
            if entity_type is not None and entity_type != previous_type:
                starts_with_i += prefix == "I"
                starts_with_b += prefix == "B"
            previous_type = entity_type if prefix in "BI" else None
    return starts_with_i, starts_with_b


def detect_scheme(sentences):
    """Guesses the tag scheme of a data set.

    The rule:

    1. `"BIOES"` if any tag starts with `E-` or `S-`.
    2. Otherwise count entity beginnings (a `B-x`/`I-x` at the sentence start, after `O` or
       after another type). `"IOB1"` if more of them use `I-` than `B-`: in clean IOB1 every
       beginning is `I-` (`B-` only separates adjacent entities of one type), in clean IOB2
       every one is `B-`, and a majority vote survives a few annotation slips.
    3. `"IOB2"` otherwise, including ties and data without entities (both read the same).

    Args:
        sentences: objects with a `tags` attribute (such as `TaggedSentence`) or plain tag
            sequences.

    Returns:
        `"IOB2"`, `"IOB1"` or `"BIOES"`.

    Raises:
        ValueError: a tag is not `O` nor `B-`/`I-`/`E-`/`S-` followed by a type.

    Examples:
    >>> detect_scheme([["B-PER", "I-PER", "O"]]), detect_scheme([["I-PER", "O", "I-LOC"]])
    ('IOB2', 'IOB1')
    >>> detect_scheme([["S-PER", "O", "B-LOC", "E-LOC"]])
    'BIOES'
    """
    tag_sequences = [getattr(sentence, "tags", sentence) for sentence in sentences]
    if any(split_tag(tag)[0] in "ES" for tags in tag_sequences for tag in tags):
        return "BIOES"
    starts_with_i, starts_with_b = _entity_start_counts(tag_sequences)
    return "IOB1" if starts_with_i > starts_with_b else "IOB2"


def _iob2_may_follow(previous, current):
    prefix, entity_type = current
    if prefix == "I":
        return previous[0] in "BI" and previous[1] == entity_type
    return True  # O and B-x may follow anything.


def _iob1_may_follow(previous, current):
    prefix, entity_type = current
    if prefix == "B":
        # B-x only separates two adjacent entities of the same type.
        return previous[0] in "BI" and previous[1] == entity_type
    return True  # O and I-x (which starts an entity) may follow anything.


def _bioes_may_follow(previous, current):
    if previous[0] in "BI":
        # Inside an entity: continue it or end it, with the same type.
        return current[0] in "IE" and current[1] == previous[1]
    # After O, E-x or S-x: outside any entity.
    return current[0] in "OBS"


_MAY_FOLLOW = {"IOB2": _iob2_may_follow, "IOB1": _iob1_may_follow, "BIOES": _bioes_may_follow}


def _may_follow(scheme, previous, current):
    """Whether split tag `current` may follow split tag `previous` under `scheme`.

    A sentence boundary counts as "O" on both sides: in all three schemes a tag may start a
    sentence exactly when it may follow O, and end one exactly when O may follow it.
    """
    return _MAY_FOLLOW[scheme](previous or _OUTSIDE, current or _OUTSIDE)


class AllowedTransitions(typing.NamedTuple):
    """Boolean masks of the tag sequences a scheme allows (see `allowed_transitions`).

    The field order is the argument order of `layers.CRF(num_tags, allowed, allowed_start,
    allowed_end)`, so `CRF(num_tags, *allowed_transitions(scheme, tags))` works.
    """

    transitions: np.ndarray  # [K, K]: transitions[i, j] allows tag i -> tag j
    start: np.ndarray  # [K]: start[j] allows tag j first
    end: np.ndarray  # [K]: end[i] allows tag i last


def allowed_transitions(scheme, tags):
    """Which tag may follow which, come first and come last under `scheme`, for a CRF.

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
        `AllowedTransitions(transitions, start, end)` of boolean NumPy arrays:
        `transitions[i, j]` when tag j may follow tag i, `start[j]` when tag j
        may come first, `end[i]` when tag i may come last.

    Raises:
        ValueError: for an unknown scheme, or a tag the scheme does not know
            (such as "X-PER", or "E-PER" under IOB2); the message names it.

    Examples:
    >>> allowed = allowed_transitions("IOB2", ["O", "B-PER", "I-PER"])
    >>> allowed.transitions.astype(int)
    array([[1, 1, 0],
           [1, 1, 1],
           [1, 1, 1]])
    >>> allowed.start, allowed.end
    (array([ True,  True, False]), array([ True,  True,  True]))
    """
    scheme = canonical_scheme(scheme)
    split = [split_tag(tag, scheme_prefixes(scheme)) for tag in tags]
    transitions = [[_may_follow(scheme, previous, current) for current in split]
                   for previous in split]
    start = [_may_follow(scheme, None, current) for current in split]
    end = [_may_follow(scheme, previous, None) for previous in split]
    return AllowedTransitions(
        np.array(transitions, bool).reshape(len(split), len(split)),
        np.array(start, bool),
        np.array(end, bool),
    )


def transition_error(scheme, previous_tag, tag):
    """Why `tag` may not follow `previous_tag` under `scheme`, or None when it may.

    The same rules as `allowed_transitions`, phrased for a person reading a data file.

    Args:
        scheme: "IOB2", "BIO", "IOB1" or "BIOES" (case-insensitive).
        previous_tag: the tag before, or None at the start of a sentence.
        tag: the tag, or None at the end of a sentence.

    Returns:
        A message, or None.

    Raises:
        ValueError: an unknown scheme, or a tag that is not `O` nor `B-`/`I-`/`E-`/`S-`
            followed by a type.

    Examples:
    >>> transition_error("IOB2", "O", "I-PER")
    "'I-PER' after 'O' is not valid IOB2"
    >>> transition_error("BIOES", "B-PER", None)
    "the sentence ends inside entity 'B-PER' (BIOES entities end with E-)"
    >>> transition_error("IOB2", "B-PER", "I-PER") is None
    True
    """
    scheme = canonical_scheme(scheme)
    previous = None if previous_tag is None else split_tag(previous_tag)
    current = None if tag is None else split_tag(tag)
    if _may_follow(scheme, previous, current):
        return None
    if current is None:  # only BIOES constrains the end
        return f"the sentence ends inside entity {previous_tag!r} (BIOES entities end with E-)"
    after = f"after {previous_tag!r}" if previous_tag else "at the start of a sentence"
    why = {
        "IOB1": " (B- only separates adjacent same-type entities)",
        # O, B-y and S-y are only refused inside an entity, which must be closed first.
        "BIOES": " (an entity must end with E-)" if current[0] in "OBS" else "",
    }.get(scheme, "")
    return f"{tag!r} {after} is not valid {scheme}{why}"
