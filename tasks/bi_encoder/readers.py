"""Text pairs for the bi-encoder: the MRPC TSV, CSV/TSV with columns and JSONL, read by
`tasks.text.text_readers`.

Every example is a `ClassificationExample` with a `text_pair`; its `label` is
kept as text. The softmax objective reads a class: MRPC's Quality, or a JSONL
record's "label". The cosine objective reads a graded similarity, a number
in [-1, 1] (the range of a cosine): MRPC's Quality (0 or 1), or a JSONL
record's "score" (a CSV/TSV file's `score` column, or --label_column); STS-B's 0–5
scores are divided by 5 first, as Sentence-BERT does. The multiple_negatives
objective reads (anchor, positive) pairs and no target (a label is ignored),
each a `RankingPair`; a JSONL record may add a "hard_negative" text.

    {"text": "A man is playing a flute.", "text_pair": "A man plays the flute.", "label": "1"}
    {"text": "A man is playing a flute.", "text_pair": "A man plays the flute.", "score": 0.95}
    {"text": "Who wrote Hamlet?", "text_pair": "Hamlet is a tragedy by Shakespeare.",
     "hard_negative": "Macbeth is a tragedy by Shakespeare."}

Errors name the file and the 1-based line.
"""

import dataclasses
import math

from nlpzoo.tasks.text.text_readers import (
    ClassificationExample,
    infer_format,
    read_delimited,
    read_jsonl,
    read_mrpc,
)
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.io.json_text import parse_json
from nlpzoo.tasks.text.line_reader import cleaned
from nlpzoo.tasks.text.prediction_io import read_text_lines

FORMATS = ("mrpc", "csv", "tsv", "jsonl")
# The JSONL field of each objective's target (multiple_negatives has none: a label is ignored).
LABEL_KEYS = {"softmax": "label", "cosine": "score", "multiple_negatives": "label"}
# The JSONL field of a pair's hard negative (multiple_negatives).
HARD_NEGATIVE_KEY = "hard_negative"


@dataclasses.dataclass(frozen=True)
class RankingPair(ClassificationExample):
    """An (anchor, positive) pair for the multiple_negatives objective, with an optional
    hard negative: a text close to the anchor that is not its positive.

    Examples:
    >>> RankingPair("Who wrote Hamlet?", "", "Hamlet is a play by Shakespeare.",
    ...             hard_negative="Macbeth is a play by Shakespeare.").hard_negative
    'Macbeth is a play by Shakespeare.'
    """

    hard_negative: str = None


def read_pairs(path, data_format=None, objective="softmax", labeled=True, columns=None):
    """The text pairs of an MRPC, CSV/TSV or JSONL file (format inferred when None).

    Args:
        path: the data file.
        data_format: "mrpc", "csv", "tsv" or "jsonl"; guessed from the file when None.
        objective: "softmax" (a class label), "cosine" (a score in [-1, 1]) or
            "multiple_negatives" (no target: `RankingPair`s, with the
            JSONL field "hard_negative" when present).
        labeled: whether every pair must carry its target (False: prediction
            input, whose JSONL may leave it out; the label is then "").
        columns: a CSV/TSV/JSONL file's columns (`tasks.text.columns.Columns`).

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".jsonl")
    >>> _ = open(path, "w").write('{"text": "a b", "text_pair": "a c", "score": 0.5}\\n')
    >>> [(e.text, e.text_pair, score_of(e)) for e in read_pairs(path, objective="cosine")]
    [('a b', 'a c', 0.5)]
    """
    label_key = LABEL_KEYS[objective]
    if objective == "multiple_negatives":
        labeled = False  # the pairing is the target; a label column is read and ignored
    data_format = data_format or infer_format(path, columns, FORMATS, "bi-encoder", label_key)
    if data_format == "mrpc":
        examples = read_mrpc(path)
    elif data_format in ("csv", "tsv"):
        examples = read_delimited(path, data_format, columns, label_key, require_label=labeled)
    elif data_format == "jsonl":
        examples = read_jsonl(path, label_key, require_label=labeled, columns=columns)
    else:
        raise DataFormatError(f"{path}: the bi-encoder reads text pairs in the formats "
                              f"{', '.join(FORMATS)}, not {data_format!r}")
    for example in examples:
        if example.text_pair is None:
            raise DataFormatError(f"{example.source}:{example.line}: a bi-encoder reads text "
                                  "pairs: this example has no 'text_pair'")
        if objective == "cosine" and labeled:
            score_of(example)
    if objective == "multiple_negatives":
        return ranking_pairs(examples, path if data_format == "jsonl" else None)
    return examples


def ranking_pairs(examples, jsonl_path=None):
    """`examples` as `RankingPair`s; with `jsonl_path`, each takes the "hard_negative" field
    of its line (a non-empty string, or absent; only JSON lines carry hard negatives)."""
    negatives = {}
    if jsonl_path is not None:
        for number, line in read_text_lines(jsonl_path):
            record = parse_json(line, jsonl_path, number, strict=False)  # read once: valid
            value = record.get(HARD_NEGATIVE_KEY)
            if value is not None and (not isinstance(value, str) or not cleaned(value).strip()):
                raise DataFormatError(f"{jsonl_path}:{number}: {HARD_NEGATIVE_KEY!r} must be a "
                                      f"non-empty string, found {value!r}"[:200])
            negatives[number] = value
    return [RankingPair(**{field.name: getattr(example, field.name)
                           for field in dataclasses.fields(example)},
                        hard_negative=negatives.get(example.line))
            for example in examples]


def score_of(example):
    """The graded target of an example for the cosine objective: its label as a number
    in [-1, 1]; anything else is an error naming the file and line."""
    try:
        score = float(example.label)
    except ValueError:
        score = math.nan
    if not -1.0 <= score <= 1.0:  # NaN fails too
        raise DataFormatError(
            f"{example.source}:{example.line}: the cosine objective needs a similarity score "
            f"in [-1, 1], found {example.label!r} (scale graded scores into it first: "
            "STS-B's 0-5 divided by 5)")
    return score


def read_tab_separated_pairs(path):
    """`text<TAB>text_pair` lines (blank lines skipped), as unlabelled examples."""
    examples = []
    for number, line in read_text_lines(path):
        fields = line.split("\t")
        if len(fields) != 2 or not all(cleaned(field).strip() for field in fields):
            raise DataFormatError(f"{path}:{number}: expected 'text<TAB>text_pair', found "
                                  f"{len(fields)} tab-separated field(s): {line[:60]!r}")
        text, text_pair = fields
        examples.append(ClassificationExample(text=text.strip(), label="",
                                              text_pair=text_pair.strip(), source=path,
                                              line=number))
    if not examples:
        raise DataFormatError(f"{path}: no text pairs found")
    return examples
