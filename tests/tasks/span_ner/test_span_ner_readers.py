import dataclasses
import json
import re

import pytest

from nlpzoo.tasks import span_ner
from nlpzoo.tasks.words.conll import TaggedSentence, read_column_file
from nlpzoo.tasks.words.tags import spans_to_tags
from tests.helpers.data_samples import CONLL_FOUR_COLUMNS
from tests.helpers.paths import shared_data_path


def _write(tmp_path, text, name="data.jsonl"):
    """Writes `text` byte for byte (no newline translation) and returns the path."""
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def _line(tokens, *spans, **extra):
    spans = [{"start": s, "end": e, "label": label} for s, e, label in spans]
    return json.dumps({"tokens": tokens, "spans": spans, **extra}) + "\n"


NESTED = _line(
    ["United", "Airlines", "Holding", "said", "Tuesday"],
    (0, 2, "ORG"),
    (0, 1, "ORG"),
    (4, 4, "DATE"),
)


# ---------------------------------------------------------------------------------------------
# span_ner.SpanSentence
# ---------------------------------------------------------------------------------------------


def test_span_sentence_sorts_deduplicates_and_freezes():
    sentence = span_ner.SpanSentence(["a", "b", "c"],
                                     [[2, 2, "X"], (0, 1, "Y"), (0, 1, "Y"), (0, 2, "X")])
    assert sentence.words == ("a", "b", "c")
    assert sentence.spans == ((0, 1, "Y"), (0, 2, "X"), (2, 2, "X"))
    assert len(sentence) == 3
    assert hash(sentence) == hash(span_ner.SpanSentence(("a", "b", "c"), sentence.spans))
    with pytest.raises(dataclasses.FrozenInstanceError):
        sentence.words = ()


@pytest.mark.parametrize("span", [(1, 0, "X"), (-1, 0, "X"), (0, 3, "X")])
def test_span_sentence_rejects_spans_outside_the_sentence(span):
    with pytest.raises(ValueError, match="outside"):
        span_ner.SpanSentence(("a", "b", "c"), [span], "f.jsonl", 7)


# ---------------------------------------------------------------------------------------------
# JSONL
# ---------------------------------------------------------------------------------------------


def test_reads_nested_spans_with_inclusive_ends(tmp_path):
    path = _write(tmp_path, NESTED + _line(["Hello"]))
    first, second = span_ner.read_span_jsonl(path)
    assert first == span_ner.SpanSentence(
        ("United", "Airlines", "Holding", "said", "Tuesday"),
        ((0, 1, "ORG"), (0, 2, "ORG"), (4, 4, "DATE")),
        path,
        1,
    )
    assert [first.words[s : e + 1] for s, e, _ in first.spans] == [
        ("United", "Airlines"),
        ("United", "Airlines", "Holding"),
        ("Tuesday",),
    ]
    assert second == span_ner.SpanSentence(("Hello",), (), path, 2)


def test_overlapping_and_duplicate_spans(tmp_path):
    text = _line(["a", "b", "c"], (1, 2, "X"), (0, 1, "Y"), (0, 1, "Y"), (0, 1, "X"), id=3)
    [sentence] = span_ner.read_span_jsonl(_write(tmp_path, text))
    assert sentence.spans == ((0, 1, "X"), (0, 1, "Y"), (1, 2, "X"))


def test_blank_lines_crlf_and_bom(tmp_path):
    text = b"\xef\xbb\xbf\r\n" + NESTED.replace("\n", "\r\n").encode() + b"  \n\n"
    text += _line(["x"]).encode()
    sentences = span_ner.read_span_jsonl(_write(tmp_path, text))
    assert [s.line for s in sentences] == [2, 5]
    assert sentences[0].words[0] == "United"


def _error_cases():
    good = _line(["a", "b"], (0, 1, "X"))
    bad_lines = {
        "not valid JSON": '{"tokens": ["a"], "spans": [}',
        "expected a JSON object": '["a", "b"]',
        "missing key.*tokens": '{"spans": []}',
        "missing key.*spans": '{"tokens": ["a"]}',
        "'tokens' is empty": '{"tokens": [], "spans": []}',
        "'tokens' must be a list": '{"tokens": "a b", "spans": []}',
        "token 1 is 3, not a string": '{"tokens": ["a", 3], "spans": []}',
        "'spans' must be a list": '{"tokens": ["a"], "spans": {}}',
        "span 0 is not an object": '{"tokens": ["a"], "spans": [[0, 0, "X"]]}',
        "span 0 is missing key.*label": '{"tokens": ["a"], "spans": [{"start": 0, "end": 0}]}',
        "span 0 is missing key.*start": '{"tokens": ["a"], "spans": [{"end": 0, "label": "X"}]}',
        "start 1 > end 0": _line(["a", "b"], (1, 0, "X")),
        "end 2 is past the last token": _line(["a", "b"], (0, 2, "X")),
        "end 1 is past the last token": _line(["a"], (0, 0, "X"), (1, 1, "X")),
        "start -1 is negative": _line(["a", "b"], (-1, 0, "X")),
        "end -1 is negative": _line(["a", "b"], (0, -1, "X")),
        "start '0' is not an integer": _line(["a", "b"], ("0", 1, "X")),
        "end 1.0 is not an integer": _line(["a", "b"], (0, 1.0, "X")),
        "start True is not an integer": _line(["a", "b"], (True, 1, "X")),
        "label 5 is not a non-empty string": _line(["a", "b"], (0, 1, 5)),
        "label None is not": _line(["a", "b"], (0, 1, None)),
        "label '' is not": _line(["a", "b"], (0, 1, "")),
    }
    # The bad line is line 3, after a good line and a blank one.
    return [
        (message, good + "\n" + bad.rstrip("\n") + "\n" + good)
        for message, bad in bad_lines.items()
    ]


@pytest.mark.parametrize("message, text", _error_cases())
def test_errors_name_file_and_line(tmp_path, message, text):
    path = _write(tmp_path, text)
    with pytest.raises(span_ner.DataFormatError, match=re.escape(f"{path}:3: ") + ".*" + message):
        span_ner.read_span_jsonl(path)


@pytest.mark.parametrize("text", ["", "\n  \n\r\n"])
def test_empty_file_names_the_file(tmp_path, text):
    path = _write(tmp_path, text)
    with pytest.raises(span_ner.DataFormatError, match=re.escape(path) + ": no sentences"):
        span_ner.read_span_jsonl(path)


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = _write(tmp_path, NESTED.encode() + b'{"tokens": ["caf\xe9"], "spans": []}\n')
    with pytest.raises(span_ner.DataFormatError, match=re.escape(f"{path}:2: not valid UTF-8")):
        span_ner.read_span_jsonl(path)


def test_missing_file_names_the_path(tmp_path):
    path = str(tmp_path / "nowhere.jsonl")
    with pytest.raises(FileNotFoundError, match=re.escape(path)):
        span_ner.read_span_jsonl(path)
    with pytest.raises(FileNotFoundError, match=re.escape(path)):
        span_ner.read_span_file(path)


# ---------------------------------------------------------------------------------------------
# Tags, file formats, labels
# ---------------------------------------------------------------------------------------------

CONLL = CONLL_FOUR_COLUMNS


def test_from_tagged_sentences_keeps_words_source_and_line():
    tagged = [
        TaggedSentence(("a", "b", "c", "d"), ("B-X", "I-X", "O", "I-Y"), "f.txt", 4),
        TaggedSentence(("e",), ("O",)),
    ]
    assert span_ner.from_tagged_sentences(tagged) == [
        span_ner.SpanSentence(("a", "b", "c", "d"), ((0, 1, "X"), (3, 3, "Y")), "f.txt", 4),
        span_ner.SpanSentence(("e",), ()),
    ]


def test_from_tagged_sentences_names_the_line_of_a_bad_tag():
    tagged = TaggedSentence(("a", "b", "c"), ("O", "O", "X-PER"), "f.txt", 10)
    with pytest.raises(span_ner.DataFormatError, match=r"f\.txt:12: tag 'X-PER'"):
        span_ner.from_tagged_sentences([tagged])
    with pytest.raises(TypeError, match="TaggedSentence"):
        span_ner.from_tagged_sentences([("a",)])


def test_read_span_file_picks_the_format(tmp_path):
    conll = _write(tmp_path, CONLL, "eng.conll")
    first, second = span_ner.read_span_file(conll)
    assert first == span_ner.SpanSentence(
        ("EU", "rejects", "German"), ((0, 0, "ORG"), (2, 2, "MISC")), conll, 1
    )
    assert second.spans == ((0, 1, "PER"),) and second.line == 5
    for name in ("data.jsonl", "data.JSON"):
        path = _write(tmp_path, NESTED, name)
        assert span_ner.read_span_file(path) == span_ner.read_span_jsonl(path)
    # An explicit format wins over the extension.
    odd = _write(tmp_path, NESTED, "data.txt")
    assert span_ner.read_span_file(odd, data_format="jsonl") == span_ner.read_span_jsonl(odd)
    odd_conll = _write(tmp_path, CONLL, "data.jsonl")
    assert span_ner.read_span_file(odd_conll, data_format="conll")[1].spans == ((0, 1, "PER"),)


def test_read_span_file_passes_column_options(tmp_path):
    path = _write(tmp_path, "a I-PER\nb I-PER\nc B-PER\n", "iob1.txt")
    spans = span_ner.read_span_file(path, convert_iob1=True)[0].spans
    assert spans == ((0, 1, "PER"), (2, 2, "PER"))
    with pytest.raises(span_ner.DataFormatError, match=re.escape(f"{path}:1:")):
        span_ner.read_span_file(path, scheme="IOB2")


def test_read_span_file_rejects_bad_arguments(tmp_path):
    path = _write(tmp_path, NESTED)
    with pytest.raises(ValueError, match="data_format"):
        span_ner.read_span_file(path, data_format="xml")
    with pytest.raises(ValueError, match="do not apply to JSONL"):
        span_ner.read_span_file(path, scheme="IOB2")


def test_span_label_names():
    sentences = [span_ner.SpanSentence(("a", "b"), [(0, 1, "ORG"), (0, 0, "LOC")]),
                 [(5, 6, "DATE")], []]
    assert span_ner.span_label_names(sentences) == ["NONE", "DATE", "LOC", "ORG"]
    assert span_ner.span_label_names([]) == ["NONE"]
    with pytest.raises(ValueError, match="NONE"):
        span_ner.span_label_names([[(0, 0, "NONE")]])


# ---------------------------------------------------------------------------------------------
# Real CoNLL-2003 (skipped where ../shared/data is absent)
# ---------------------------------------------------------------------------------------------


def test_conll2003_train_round_trips_bio_spans_bio():
    path = shared_data_path("conll2003", "eng.train")
    tagged = read_column_file(path, scheme="IOB2")
    sentences = span_ner.from_tagged_sentences(tagged)
    assert len(sentences) == 14041
    assert span_ner.span_label_names(sentences) == ["NONE", "LOC", "MISC", "ORG", "PER"]
    for tagged_sentence, sentence in zip(tagged, sentences):
        assert sentence.words == tagged_sentence.words and sentence.line == tagged_sentence.line
        assert tuple(spans_to_tags(sentence.spans, len(sentence))) == tagged_sentence.tags, (
            sentence.line
        )
    assert span_ner.read_span_file(path) == sentences
