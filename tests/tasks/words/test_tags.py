import itertools
import random

import numpy as np
import pytest

from nlpzoo.tasks.words.conll import TaggedSentence
from nlpzoo.tasks.words.tags import (
    PREFIXES,
    SCHEMES,
    allowed_transitions,
    canonical_scheme,
    detect_scheme,
    iob1_to_iob2,
    spans_to_tags,
    split_tag,
    tag_parts,
    tags_to_spans,
    transition_error,
)

TAGS = {
    "IOB2": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "IOB1": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "BIOES": ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"],
}

# ---------------------------------------------------------------------------------------------
# Tags and schemes
# ---------------------------------------------------------------------------------------------


def test_split_tag():
    assert split_tag("B-SOME-TYPE") == ("B", "SOME-TYPE")
    assert split_tag("O", allowed_prefixes="") == ("O", None)
    with pytest.raises(ValueError, match="tag 'E-PER' is not O nor B-/I- followed by"):
        split_tag("E-PER", allowed_prefixes="BI")


def test_canonical_scheme():
    assert [canonical_scheme(s.lower()) for s in SCHEMES] == list(SCHEMES)
    assert canonical_scheme("BIO") == "IOB2"
    with pytest.raises(ValueError, match="scheme='IOBX'"):
        canonical_scheme("IOBX")


def test_tag_parts_gathers_prefix_and_type_per_tag_id():
    tags = TAGS["BIOES"] + ["B-SOME-TYPE"]
    parts = tag_parts(tags)
    assert parts.type_names == ["LOC", "PER", "SOME-TYPE"]
    assert parts.prefix_ids.dtype == parts.type_ids.dtype == np.int32
    for tag, prefix_id, type_id in zip(tags, parts.prefix_ids, parts.type_ids):
        prefix, entity_type = split_tag(tag)
        assert PREFIXES[prefix_id] == prefix
        assert (parts.type_names[type_id] if type_id >= 0 else None) == entity_type
    with pytest.raises(ValueError, match="'X-PER'"):
        tag_parts(["O", "X-PER"])


# ---------------------------------------------------------------------------------------------
# Tags <-> spans
# ---------------------------------------------------------------------------------------------


def test_iob1_to_iob2_by_hand():
    assert iob1_to_iob2([]) == []
    assert iob1_to_iob2(["I-PER", "I-LOC", "B-LOC", "I-LOC", "O"]) == [
        "B-PER", "B-LOC", "B-LOC", "I-LOC", "O"
    ]
    with pytest.raises(ValueError, match="'E-PER'"):
        iob1_to_iob2(["E-PER"])


def _random_tags(rng, length, prefixes="BI", types=("PER", "LOC", "ORG")):
    choices = ["O"] + [f"{p}-{t}" for p in prefixes for t in types]
    return [rng.choice(choices) for _ in range(length)]


def test_iob1_to_iob2_keeps_the_entities_and_is_idempotent():
    rng = random.Random(0)
    for _ in range(500):
        tags = _random_tags(rng, rng.randint(0, 12))
        converted = iob1_to_iob2(tags)
        assert tags_to_spans(converted) == tags_to_spans(tags)
        assert iob1_to_iob2(converted) == converted
        assert spans_to_tags(tags_to_spans(tags), len(tags)) == converted


def test_detect_scheme():
    assert detect_scheme([["B-PER", "I-PER", "O", "B-LOC"], ["B-PER", "B-PER"]]) == "IOB2"
    assert detect_scheme([["I-PER", "I-PER", "B-PER", "O", "I-LOC"]]) == "IOB1"
    assert detect_scheme([["B-PER", "E-PER"], ["O", "I-LOC"]]) == "BIOES"
    assert detect_scheme([["O", "O"], []]) == "IOB2"  # nothing to tell them apart
    # One slip does not flip the vote.
    assert detect_scheme([["B-PER", "O", "B-LOC", "I-LOC", "O", "I-ORG"]]) == "IOB2"
    sentence = TaggedSentence(("Bonn",), ("I-LOC",))
    assert detect_scheme([sentence]) == "IOB1"


def test_tags_to_spans_follows_conlleval():
    assert tags_to_spans([]) == []
    assert tags_to_spans(["O", "I-PER", "I-PER"]) == [(1, 2, "PER")]
    assert tags_to_spans(["B-PER", "I-LOC"]) == [(0, 0, "PER"), (1, 1, "LOC")]
    assert tags_to_spans(["B-PER", "B-PER"]) == [(0, 0, "PER"), (1, 1, "PER")]
    assert tags_to_spans(["B-X", "I-X", "E-X", "I-X"]) == [(0, 2, "X"), (3, 3, "X")]
    assert tags_to_spans(["S-X", "E-X", "E-X"]) == [(0, 0, "X"), (1, 1, "X"), (2, 2, "X")]
    assert tags_to_spans(["B-SOME-TYPE"]) == [(0, 0, "SOME-TYPE")]
    with pytest.raises(ValueError, match="'X-PER'"):
        tags_to_spans(["X-PER"])


def test_tags_to_spans_matches_seqeval_get_entities():
    get_entities = pytest.importorskip("seqeval.metrics.sequence_labeling").get_entities
    rng = random.Random(1)
    for _ in range(1000):
        tags = _random_tags(rng, rng.randint(0, 12), prefixes="BIES", types=("A", "B"))
        expected = [(start, end, kind) for kind, start, end in get_entities(tags)]
        assert tags_to_spans(tags) == expected, tags


def test_spans_to_tags_rejects_bad_spans():
    assert spans_to_tags([(2, 2, "LOC"), (0, 1, "PER")], 3) == ["B-PER", "I-PER", "B-LOC"]
    with pytest.raises(ValueError, match="outside"):
        spans_to_tags([(1, 3, "PER")], 3)
    with pytest.raises(ValueError, match="outside"):
        spans_to_tags([(2, 1, "PER")], 3)
    with pytest.raises(ValueError, match="overlaps"):
        spans_to_tags([(0, 1, "PER"), (1, 2, "LOC")], 3)


# ---------------------------------------------------------------------------------------------
# Allowed transitions
# ---------------------------------------------------------------------------------------------


def test_allowed_transitions_small_tables():
    allowed, start, end = allowed_transitions("BIO", ["O", "B-PER", "I-PER"])
    assert allowed.dtype == start.dtype == end.dtype == bool
    np.testing.assert_array_equal(allowed, [[1, 1, 0], [1, 1, 1], [1, 1, 1]])
    np.testing.assert_array_equal(start, [1, 1, 0])
    np.testing.assert_array_equal(end, [1, 1, 1])

    allowed, start, end = allowed_transitions("IOB1", ["O", "B-PER", "I-PER"])
    np.testing.assert_array_equal(allowed, [[1, 0, 1], [1, 1, 1], [1, 1, 1]])
    np.testing.assert_array_equal(start, [1, 0, 1])
    np.testing.assert_array_equal(end, [1, 1, 1])

    allowed, start, end = allowed_transitions(
        "BIOES", ["O", "B-PER", "I-PER", "E-PER", "S-PER"]
    )
    np.testing.assert_array_equal(
        allowed,
        [
            [1, 1, 0, 0, 1],
            [0, 0, 1, 1, 0],
            [0, 0, 1, 1, 0],
            [1, 1, 0, 0, 1],
            [1, 1, 0, 0, 1],
        ],
    )
    np.testing.assert_array_equal(start, [1, 1, 0, 0, 1])
    np.testing.assert_array_equal(end, [1, 0, 0, 1, 1])

    # Types must match: I-LOC may not follow B-PER.
    allowed, _, _ = allowed_transitions("IOB2", TAGS["IOB2"])
    assert allowed[1][4] == 0 and allowed[3][4] == 1

    # Named fields, in the order of the CRF's arguments.
    masks = allowed_transitions("IOB2", ["O"])
    assert masks._fields == ("transitions", "start", "end")
    assert allowed_transitions("IOB2", []).transitions.shape == (0, 0)


def test_allowed_transitions_rejects_unknown_tags_and_schemes():
    with pytest.raises(ValueError, match="X-PER"):
        allowed_transitions("IOB2", ["O", "B-PER", "X-PER"])
    with pytest.raises(ValueError, match="E-PER"):
        allowed_transitions("IOB2", ["O", "E-PER"])
    with pytest.raises(ValueError, match="PER"):
        allowed_transitions("BIOES", ["O", "PER"])
    with pytest.raises(ValueError, match="scheme"):
        allowed_transitions("IOBX", ["O"])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_transition_error_says_no_exactly_where_the_masks_do(scheme):
    """The reader's check and the CRF's masks are one rule."""
    tags = TAGS[scheme]
    allowed, start, end = allowed_transitions(scheme, tags)
    for (i, previous), (j, tag) in itertools.product(enumerate(tags), repeat=2):
        problem = transition_error(scheme, previous, tag)
        assert (problem is None) == allowed[i, j], (previous, tag, problem)
        if problem:
            assert problem.startswith(f"{tag!r} after {previous!r} is not valid {scheme}")
    for j, tag in enumerate(tags):
        problem = transition_error(scheme, None, tag)
        assert (problem is None) == start[j], tag
        if problem:
            assert problem.startswith(f"{tag!r} at the start of a sentence")
        assert (transition_error(scheme, tag, None) is None) == end[j], tag


def test_transition_error_messages():
    assert transition_error("IOB1", "O", "B-PER") == (
        "'B-PER' after 'O' is not valid IOB1 (B- only separates adjacent same-type entities)"
    )
    assert transition_error("BIOES", "B-PER", "I-LOC") == "'I-LOC' after 'B-PER' is not valid BIOES"
    assert transition_error("BIOES", "I-PER", "S-PER") == (
        "'S-PER' after 'I-PER' is not valid BIOES (an entity must end with E-)"
    )
    assert transition_error("BIOES", "I-PER", None) == (
        "the sentence ends inside entity 'I-PER' (BIOES entities end with E-)"
    )
