"""Patterns (`--pattern`) and verbalizers (`--verbalizer`) of prompt-based classification.

A pattern is text with slots: `{text}` (the example's text), `{text_pair}` (its
second text, for pairs) and the tokenizer's mask token, `[MASK]`, written once:
"{text} It was about [MASK] ." or, for pairs, "{text} ? [MASK] , {text_pair}".
`{{` and `}}` stand for literal braces. A verbalizer maps every label to one
word: "ABBR:abbreviation,DESC:description" (`parse_verbalizer`).
"""

import re

from nlpzoo.tasks.text.tokenizer import MASK

# The mask slot may be written as any family's mask token: "[MASK]" (BERT) or "<mask>"
# (RoBERTa, XLM-R); the model puts its own tokenizer's mask token there.
MASK_SLOTS = (MASK, "<mask>")
TEXT, TEXT_PAIR = "text", "text_pair"
SLOTS = (TEXT, TEXT_PAIR)
_MASK_PART = "mask"
# A slot "{name}", a literal brace "{{" or "}}", or the mask token.
_PIECE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|" + "|".join(map(re.escape, MASK_SLOTS)))


def parse_pattern(pattern):
    """The parts of `pattern` in order: `("literal", text)`, `("text",)`,
    `("text_pair",)` or `("mask",)`.

    Raises:
        ValueError: one line: no mask slot, more than one, an unknown slot,
            a lone brace, or no `{text}` slot.

    Examples:
    >>> parse_pattern("{text} It was about [MASK] .")
    [('text',), ('literal', ' It was about '), ('mask',), ('literal', ' .')]
    >>> parse_pattern("{text} [MASK] {{x}}")[-1]
    ('literal', ' {x}')
    >>> parse_pattern("{text} It was {label} [MASK] .")
    Traceback (most recent call last):
    ...
    ValueError: pattern '{text} It was {label} [MASK] .': unknown slot {label}; the slots are {text}, {text_pair} and [MASK]
    """
    parts, literal, position = [], "", 0
    for match in _PIECE.finditer(pattern):
        between = pattern[position:match.start()]
        if "{" in between or "}" in between:
            raise ValueError(f"pattern {pattern!r}: a lone brace; write {{{{ and }}}} for "
                             "literal braces")
        literal += between
        position = match.end()
        piece = match.group(0)
        if piece in ("{{", "}}"):
            literal += piece[0]
            continue
        if literal:
            parts.append(("literal", literal))
            literal = ""
        if piece in MASK_SLOTS:
            parts.append((_MASK_PART,))
        elif match.group(1) in SLOTS:
            parts.append((match.group(1),))
        else:
            raise ValueError(f"pattern {pattern!r}: unknown slot {piece}; the slots are "
                             f"{{text}}, {{text_pair}} and {MASK}")
    rest = pattern[position:]
    if "{" in rest or "}" in rest:
        raise ValueError(f"pattern {pattern!r}: a lone brace; write {{{{ and }}}} for "
                         "literal braces")
    if literal + rest:
        parts.append(("literal", literal + rest))
    masks = sum(part == (_MASK_PART,) for part in parts)
    if masks != 1:
        raise ValueError(f"pattern {pattern!r}: {masks} {MASK} slots; a pattern has exactly "
                         "one, where the label word goes")
    for slot in SLOTS:
        if sum(part == (slot,) for part in parts) > 1:
            raise ValueError(f"pattern {pattern!r}: {{{slot}}} appears more than once")
    if (TEXT,) not in parts:
        raise ValueError(f"pattern {pattern!r}: no {{text}} slot, where the example's text goes")
    return parts


def pattern_reads_pairs(pattern):
    """Whether `pattern` has a `{text_pair}` slot.

    >>> pattern_reads_pairs("{text} ? [MASK] , {text_pair}"), pattern_reads_pairs("{text} [MASK]")
    (True, False)
    """
    return (TEXT_PAIR,) in parse_pattern(pattern)


def check_patterns(patterns):
    """Checks every pattern (`parse_pattern`) and that all read pairs or all single texts;
    returns whether they read pairs.

    >>> check_patterns(["{text} [MASK] .", "[MASK] : {text}"])
    False
    """
    if not patterns:
        raise ValueError("no pattern: give one or more, e.g. --pattern='{text} It was about "
                         f"{MASK} .'")
    pairs = {pattern_reads_pairs(pattern) for pattern in patterns}
    if len(pairs) > 1:
        raise ValueError("some patterns have a {text_pair} slot and others not: all read "
                         "pairs or all single texts")
    return pairs.pop()


def parse_verbalizer(value):
    """`--verbalizer`: comma-separated `label:word` pairs → {label: word}, in order.

    The label is what comes before the last colon (labels may hold colons);
    spaces around labels and words are dropped.

    Examples:
    >>> parse_verbalizer("ABBR:abbreviation, DESC:description")
    {'ABBR': 'abbreviation', 'DESC': 'description'}
    >>> parse_verbalizer("ABBR:abbreviation,DESC")
    Traceback (most recent call last):
    ...
    ValueError: --verbalizer: 'DESC' is not label:word
    """
    verbalizer = {}
    for item in value.split(","):
        label, colon, word = item.strip().rpartition(":")
        if not colon or not label.strip() or not word.strip():
            raise ValueError(f"--verbalizer: {item.strip()!r} is not label:word")
        if label.strip() in verbalizer:
            raise ValueError(f"--verbalizer: the label {label.strip()!r} has two words")
        verbalizer[label.strip()] = word.strip()
    return verbalizer


def check_verbalizer(verbalizer):
    """Checks a {label: word} verbalizer: at least two labels, one word each, no word
    (with spaces) empty.

    >>> check_verbalizer({"0": "no"})
    Traceback (most recent call last):
    ...
    ValueError: the verbalizer has 1 label; a classifier needs at least 2 (--verbalizer=label:word,...)
    """
    if len(verbalizer) < 2:
        raise ValueError(f"the verbalizer has {len(verbalizer)} label; a classifier needs at "
                         "least 2 (--verbalizer=label:word,...)")
    for label, word in verbalizer.items():
        if not isinstance(word, str) or not word.strip():
            raise ValueError(f"the verbalizer's word for {label!r} is empty")


def missing_words(verbalizer, labels):
    """The labels among `labels` that the verbalizer gives no word, in order, once each.

    >>> missing_words({"A": "a", "B": "b"}, ["A", "C", "B", "C", "D"])
    ['C', 'D']
    """
    missing = []
    for label in labels:
        if label not in verbalizer and label not in missing:
            missing.append(label)
    return missing
