"""Every reader against hostile files: one table, one test per (case, reader).

Each reader reads a small good file (`BASE`, two records, the word "rejects" on
line 2); each case changes it (`CASES`) and `EXPECTED[case][reader]` says what
must come out: the same records as the good file (`SAME`), other records
(`Records`), or one error line naming the file and line (`Fails`). What a
reader returns is compared as the model would see it (texts cleaned), through
`SUMMARIES`. docs/hostile.md shows the same table.
"""

import dataclasses
import json
import logging
import os
import re
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from nlpzoo.tasks.bi_encoder.readers import read_tab_separated_pairs
from nlpzoo.tasks.text.text_pipeline import encode_labels
from nlpzoo.tasks.text.text_readers import read_jsonl, read_mrpc, read_trec
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.line_reader import MAX_LINE_BYTES, read_lines
from nlpzoo.tasks.text.prediction_io import read_text_lines
from nlpzoo.tasks.text.corpus import iter_documents, read_corpus
from nlpzoo.tasks.text.sentences import read_sentences
from nlpzoo.tasks.span_ner.pipeline import span_label_grid
from nlpzoo.tasks.span_ner.readers import read_span_jsonl
from nlpzoo.tasks.tagging.pipeline import encode_tags
from nlpzoo.tasks.words.conll import iter_column_file, read_column_file
from nlpzoo.tasks.text.word_splitting import split_words
from tests.helpers.paths import ROOT, TREC

MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _span_line(tokens, spans):
    return json.dumps({"tokens": tokens, "spans": [
        {"start": s, "end": e, "label": label} for s, e, label in spans]}) + "\n"


# The good file of each reader: "rejects" is on line 2.
BASE = {
    "conll": "EU B-ORG\nrejects O\nGerman B-MISC\n\ncall O\n",
    "span_jsonl": _span_line(["EU"], [(0, 0, "ORG")])
    + _span_line(["rejects", "German"], [(1, 1, "MISC")]),
    "trec": "LOC:city What city ?\nHUM:ind Who rejects it ?\n",
    "mrpc": MRPC_HEADER + "1\t1\t2\tEU rejects it .\tEU says no .\n",
    "class_jsonl": '{"text": "EU agrees", "label": "pos"}\n'
    '{"text": "EU rejects it", "label": "neg"}\n',
    "sentences": "EU agrees .\nEU rejects it .\n",
    "text_lines": "EU agrees .\nEU rejects it .\n",
    "tsv_pairs": "EU agrees .\tEU says yes .\nEU rejects it .\tEU says no .\n",
    "corpus": "EU agrees .\nEU rejects it .\n\nGerman call .\n",
}
READERS = tuple(BASE)


def _texts(*texts):
    """The words the model sees in each text."""
    return tuple(" ".join(word for word, _, _ in split_words(text)) for text in texts)


READ = {
    "conll": read_column_file,
    "span_jsonl": read_span_jsonl,
    "trec": read_trec,
    "mrpc": read_mrpc,
    "class_jsonl": read_jsonl,
    "sentences": lambda path: read_sentences(path, "text"),
    "text_lines": read_text_lines,
    "tsv_pairs": read_tab_separated_pairs,
    "corpus": read_corpus,
}
# What a reader returned, as the model sees it (texts cleaned by the tokenizer).
SUMMARIES = {
    "conll": lambda result: [(s.words, s.tags) for s in result],
    "span_jsonl": lambda result: [(s.words, s.spans) for s in result],
    "trec": lambda result: [(e.label, *_texts(e.text)) for e in result],
    "mrpc": lambda result: [(e.label, *_texts(e.text, e.text_pair)) for e in result],
    "class_jsonl": lambda result: [(e.label, *_texts(e.text)) for e in result],
    "sentences": lambda result: [_texts(s.text) for s in result],
    "text_lines": lambda result: [_texts(text) for _, text in result],
    "tsv_pairs": lambda result: [_texts(e.text, e.text_pair) for e in result],
    "corpus": lambda result: [tuple(document) for document in result],
}
# The label set a trained model fixes, and how each family checks labels against it.
MODEL_LABELS = {
    "conll": lambda result: encode_tags(result, ["O", "B-ORG", "B-MISC"]),
    "span_jsonl": lambda result: [span_label_grid(s, ["NONE", "ORG", "MISC"], 2)
                                  for s in result],
    "trec": lambda result: encode_labels(result, ["HUM", "LOC"]),
    "mrpc": lambda result: encode_labels(result, ["0", "1"]),
    "class_jsonl": lambda result: encode_labels(result, ["neg", "pos"]),
}


@dataclasses.dataclass(frozen=True)
class Records:
    """The reader returns these (summaries); `warning`: a logged warning must match."""

    records: object
    warning: str = ""


@dataclasses.dataclass(frozen=True)
class Fails:
    """DataFormatError (or ValueError from a label check) matching `pattern`, in which
    `{path}` stands for the file's name."""

    pattern: str


SAME = "same records as the good file"
NOT_APPLICABLE = "not applicable"


def _replace_line_2(reader, line):
    lines = BASE[reader].splitlines(keepends=True)
    lines[1] = line
    return "".join(lines)


def _long(reader):
    words = [f"w{i}" for i in range(2000)]
    if reader == "conll":
        return "EU B-ORG\n" + "".join(f"{word} O\n" for word in words)
    if reader == "span_jsonl":
        return _span_line(["EU"], [(0, 0, "ORG")]) + _span_line(words, [(1999, 1999, "MISC")])
    return BASE[reader].replace("rejects", " ".join(words))


def _long_records(reader):
    """Records of `_long(reader)`: every one of the 2,000 words read."""
    words = tuple(f"w{i}" for i in range(2000))
    if reader == "conll":
        return [(("EU",) + words, ("B-ORG",) + ("O",) * 2000)]
    if reader == "span_jsonl":
        return [(("EU",), ((0, 0, "ORG"),)), (words, ((1999, 1999, "MISC"),))]
    return _replaced(reader, "rejects", " ".join(words))


def _replaced(reader, old, new):
    """The good file's records with `old` replaced by `new` in every text."""
    def replace(value):
        if isinstance(value, str):
            return value.replace(old, new)
        if isinstance(value, (tuple, list)):
            return type(value)(replace(item) for item in value)
        return value
    return replace(SUMMARIES[reader](READ[reader](_write_base(reader))))


_BASE_DIRECTORY = None


def _write_base(reader):
    path = os.path.join(_BASE_DIRECTORY, f"{reader}.base")
    with open(path, "w", encoding="utf-8") as f:
        f.write(BASE[reader])
    return path


# case -> how the good file's bytes change.
CASES = {
    "empty file": lambda reader, data: b"",
    "only blank or whitespace lines": lambda reader, data: b"\n \n\t\n\xc2\xa0\x0c\n\x1a\n",
    "Windows line endings": lambda reader, data: data.replace(b"\n", b"\r\n"),
    "old-Mac line endings": lambda reader, data: data.replace(b"\n", b"\r"),
    "byte-order mark": lambda reader, data: b"\xef\xbb\xbf" + data,
    "no final newline": lambda reader, data: data.rstrip(b"\n"),
    "invalid UTF-8": lambda reader, data: data.replace(b"rejects", b"rej\xffects", 1),
    "control and zero-width characters": lambda reader, data: data.replace(
        b"rejects", "rej\x07ec\u200bts\ufeff".encode(), 1),
    "emoji": lambda reader, data: data.replace(b"rejects", "rejects🙂".encode(), 1),
    "a line over MAX_LINE_BYTES (1 MiB)": lambda reader, data: data.replace(
        b"rejects", b"rejects " + b"x" * MAX_LINE_BYTES, 1),
    "2,000-word sentence": lambda reader, data: _long(reader).encode(),
    "too many columns": lambda reader, data: {
        "conll": _replace_line_2(reader, "rejects VBZ O\n"),
        "span_jsonl": BASE[reader].replace('"spans"', '"id": 7, "spans"'),
        "mrpc": _replace_line_2(reader, "1\t1\t2\tEU rejects it .\tEU says no .\textra\n"),
        "class_jsonl": BASE[reader].replace('"label": "neg"', '"label": "neg", "id": 7'),
        "tsv_pairs": _replace_line_2(reader, "EU rejects it .\tEU says no .\textra\n"),
    }.get(reader, BASE[reader]).encode(),
    "too few columns": lambda reader, data: {
        "conll": _replace_line_2(reader, "rejects\n"),
        "span_jsonl": _replace_line_2(reader, '{"tokens": ["rejects"]}\n'),
        "trec": _replace_line_2(reader, "HUM:ind\n"),
        "mrpc": _replace_line_2(reader, "1\t1\t2\tEU rejects it .\n"),
        "class_jsonl": _replace_line_2(reader, '{"text": "EU rejects it"}\n'),
        "tsv_pairs": _replace_line_2(reader, "EU rejects it .\n"),
    }.get(reader, BASE[reader]).encode(),
    "label the model does not know": lambda reader, data: {
        "conll": BASE[reader].replace("rejects O", "rejects B-PER"),
        "span_jsonl": BASE[reader].replace('"MISC"', '"PER"'),
        "trec": BASE[reader].replace("HUM:ind", "NUM:date"),
        "mrpc": BASE[reader],  # Quality is read as 0 or 1: see "invalid label"
        "class_jsonl": BASE[reader].replace('"neg"', '"neutral"'),
    }.get(reader, BASE[reader]).encode(),
    "invalid label": lambda reader, data: {
        "conll": BASE[reader].replace("rejects O", "rejects X-ORG"),
        "span_jsonl": BASE[reader].replace('"MISC"', '""'),
        "trec": BASE[reader].replace("HUM:ind", "HUM"),
        "mrpc": BASE[reader].replace("1\t1\t2", "2\t1\t2"),
    }.get(reader, BASE[reader]).encode(),
    "a word of only control characters": lambda reader, data: {
        "conll": BASE[reader].replace("rejects O", "rejects O\n\u200b\x07 O"),
        "span_jsonl": BASE[reader].replace('["rejects", "German"]',
                                           '["rejects", "\\u200b", "German"]').replace(
            '"start": 1, "end": 1', '"start": 2, "end": 2'),
    }.get(reader, BASE[reader].replace("rejects", "rejects \u200b\x07")).encode(),
    "a labelled word of only control characters": lambda reader, data: {
        "conll": BASE[reader].replace("rejects O", "rejects O\n\u200b\x07 B-MISC"),
        "span_jsonl": BASE[reader].replace('["rejects", "German"]', '["rejects", "\\u200b"]'),
    }.get(reader, BASE[reader]).encode(),
}


def _expected_table():
    """EXPECTED[case][reader]; omitted readers: the case does not apply to them."""
    no_records = {
        "conll": Fails(r"{path}: no sentences found"),
        "span_jsonl": Fails(r"{path}: no sentences found"),
        "trec": Fails(r"{path}: no examples found"),
        "mrpc": Fails(r"{path}:1: expected the MRPC header"),
        "class_jsonl": Fails(r"{path}: no examples found"),
        "sentences": Fails(r"{path}: no texts found"),
        "text_lines": Records([]),
        "tsv_pairs": Fails(r"{path}: no text pairs found"),
        "corpus": Fails(r"{path}: the corpus holds no text"),
    }
    same = {reader: SAME for reader in READERS}

    def invalid_utf8(reader):
        offset = BASE[reader].splitlines()[1].index("rejects") + 3
        where = rf"{{path}}:2: not valid UTF-8: found byte\(s\) ff at byte {offset} of the line"
        # Prediction input, and the TREC release (it holds a Latin-1 byte): the line is
        # decoded as Latin-1, with a warning; no letter is lost.
        if reader in ("sentences", "text_lines", "tsv_pairs", "trec"):
            return Records(_replaced(reader, "rejects", "rej\u00ffects"), warning=where)
        return Fails(where)

    return {
        "empty file": no_records,
        "only blank or whitespace lines": no_records,
        "Windows line endings": same,
        "old-Mac line endings": same,
        "byte-order mark": same,
        "no final newline": same,
        "invalid UTF-8": {reader: invalid_utf8(reader) for reader in READERS},
        "control and zero-width characters": same,
        "emoji": {reader: Records(_replaced(reader, "rejects", "rejects🙂"))
                  for reader in READERS},
        "2,000-word sentence": {reader: Records(_long_records(reader)) for reader in READERS},
        "a line over MAX_LINE_BYTES (1 MiB)": {reader: Fails(
            rf"{{path}}:2: a line longer than {MAX_LINE_BYTES:,} bytes .*; split it$")
            for reader in READERS},
        "too many columns": {
            "conll": Fails(r"{path}:2: expected 2 columns \(word tag\), found 3"),
            "span_jsonl": SAME,  # other keys are ignored
            "mrpc": Fails(r"{path}:2: expected 5 tab-separated fields, found 6"),
            "class_jsonl": SAME,
            "tsv_pairs": Fails(r"{path}:2: expected 'text<TAB>text_pair', found 3"),
        },
        "too few columns": {
            "conll": Fails(r"{path}:2: expected 2 columns \(word tag\), found 1"),
            "span_jsonl": Fails(r"{path}:2: missing key\(s\) spans"),
            "trec": Fails(r"{path}:2: expected 'COARSE:fine question text'"),
            "mrpc": Fails(r"{path}:2: expected 5 tab-separated fields, found 4"),
            "class_jsonl": Fails(r"{path}:2: expected an object with 'text' and 'label'"),
            "tsv_pairs": Fails(r"{path}:2: expected 'text<TAB>text_pair', found 1"),
        },
        "label the model does not know": {
            "conll": Fails(r"{path}:2: tag 'B-PER' was not seen in training"),
            "span_jsonl": Fails(r"{path}:2: entity type 'PER' was not seen in training"),
            "trec": Fails(r"{path}:2: label 'NUM' was not seen in training"),
            "class_jsonl": Fails(r"{path}:2: label 'neutral' was not seen in training"),
        },
        "invalid label": {
            "conll": Fails(r"{path}:2: .*'X-ORG'"),
            "span_jsonl": Fails(r"{path}:2: span 0: label '' is not a non-empty string"),
            "trec": Fails(r"{path}:2: expected 'COARSE:fine question text'"),
            "mrpc": Fails(r"{path}:2: expected Quality 0 or 1, found '2'"),
        },
        "a word of only control characters": {
            **same,  # dropped (tagged O / outside every span) or cleaned away with the text
            "span_jsonl": SAME,
        },
        "a labelled word of only control characters": {
            "conll": Fails(r"{path}:3: expected a word, found only control or format "
                           r"characters '\\u200b\\x07' tagged 'B-MISC'"),
            "span_jsonl": Fails(r"{path}:2: expected a word, found only control or format "
                                r"characters '\\u200b' \(token 1\) inside span 0 \(MISC\)"),
        },
    }


@pytest.fixture(scope="module", autouse=True)
def _base_directory(tmp_path_factory):
    global _BASE_DIRECTORY
    _BASE_DIRECTORY = str(tmp_path_factory.mktemp("base"))


PAIRS = [(case, reader) for case in CASES for reader in READERS]


@pytest.mark.parametrize("case, reader", PAIRS)
def test_reader_survives_hostile_input(case, reader, tmp_path, caplog):
    expected = _expected_table()[case].get(reader, NOT_APPLICABLE)
    if expected == NOT_APPLICABLE:
        pytest.skip(f"{case!r} does not apply to {reader}")
    path = str(tmp_path / f"data.{reader}")
    with open(path, "wb") as f:
        f.write(CASES[case](reader, BASE[reader].encode()))

    def read():
        result = READ[reader](path)
        if case == "label the model does not know":
            MODEL_LABELS[reader](result)
        return result

    if isinstance(expected, Fails):
        with pytest.raises((DataFormatError, ValueError)) as error:
            read()
        message = str(error.value)
        assert "\n" not in message  # one line
        assert re.match(expected.pattern.replace("{path}", re.escape(path)), message), message
        return
    caplog.set_level(logging.WARNING)
    summary = SUMMARIES[reader](read())
    if expected == SAME:
        expected = Records(SUMMARIES[reader](READ[reader](_write_base(reader))))
    records = expected.records
    if records == SAME:
        records = SUMMARIES[reader](READ[reader](_write_base(reader)))
    assert summary == records
    if expected.warning:
        assert re.search(expected.warning.replace("{path}", re.escape(path)), caplog.text)


def test_every_case_has_an_expectation_for_every_reader_that_applies():
    table = _expected_table()
    assert set(table) == set(CASES)
    applied = sum(len(row) for row in table.values())
    assert applied >= 100  # most of the 16 x 9 pairs apply


# --- CoNLL specifics --------------------------------------------------------------------------


def _write(tmp_path, data, name="data.txt"):
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_conll_docstart_only_tabs_and_spaces_and_dropped_word_lines(tmp_path):
    docstart = _write(tmp_path, b"-DOCSTART- -X- -X- O\n\n-DOCSTART- -X- -X- O\n")
    with pytest.raises(DataFormatError, match="no sentences found"):
        read_column_file(docstart)
    mixed = _write(tmp_path, b"EU\tNNP  B-NP \t B-ORG\nrejects VBZ\tB-VP\tO\n\x07\t:\tO\tO\n"
                             b"German JJ B-NP XB-MISC")
    with pytest.raises(DataFormatError, match=r"data.txt:4: .*'XB-MISC'"):
        read_column_file(mixed)
    _write(tmp_path, b"EU B-ORG\n\x07 O\nrejects O\nGerman B-PER\n")
    [sentence] = read_column_file(str(tmp_path / "data.txt"))
    assert sentence.words == ("EU", "rejects", "German")
    assert [sentence.line_of(k) for k in range(3)] == [1, 3, 4]
    with pytest.raises(ValueError, match=r"data.txt:4: tag 'B-PER' was not seen"):
        encode_tags([sentence], ["O", "B-ORG"])  # the line of the word, after the dropped one


def test_control_character_line_alone_is_blank_not_a_sentence(tmp_path):
    # A DOS end-of-file mark (Ctrl-Z) or a stray byte-order mark on a line of its own.
    path = _write(tmp_path, "EU B-ORG\n\x1a\n\ufeff\nrejects O\n".encode())
    assert [s.words for s in read_column_file(path)] == [("EU",), ("rejects",)]


# --- streaming and memory ---------------------------------------------------------------------


def test_readers_are_lazy_and_stop_at_the_first_bad_line(tmp_path, monkeypatch):
    """The streaming readers yield the first record before reading the file's end."""
    monkeypatch.setattr("nlpzoo.tasks.text.line_reader.BLOCK_BYTES", 64)
    good = "".join(f"w{i} O\n\n" for i in range(200))
    path = _write(tmp_path, good.encode() + b"bad\xff O\n")
    sentences = iter_column_file(path)
    assert next(sentences).words == ("w0",)  # the invalid byte 1,800 bytes on is not read yet
    with pytest.raises(DataFormatError, match=r"data.txt:401: not valid UTF-8"):
        list(sentences)
    corpus = _write(tmp_path, ("".join(f"line {i} .\n\n" for i in range(200)) + "\xff").encode(
        "latin-1"), "corpus.txt")
    documents = iter_documents(corpus)
    assert next(documents) == ["line 0 ."]
    with pytest.raises(DataFormatError, match=r"corpus.txt:401: not valid UTF-8"):
        list(documents)
    # Line breaks cut across blocks: \r\n split over two reads is one line break.
    data = b"".join(b"a" * (n % 7) + b"\r\n" for n in range(300))
    path = _write(tmp_path, data, "crlf.txt")
    assert [text for _, text in read_lines(path)] == ["a" * (n % 7) for n in range(300)]


def _lines_by_regex(data):
    """What `read_lines` yields, from the whole file at once (no byte-order mark)."""
    lines = re.split(r"\r\n|\r|\n", data.decode())
    return list(enumerate(lines[:-1] if lines[-1] == "" else lines, 1))


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_lines_up_to_the_limit_are_read_and_the_first_longer_one_is_refused(
        tmp_path, monkeypatch, block):
    monkeypatch.setattr("nlpzoo.tasks.text.line_reader.BLOCK_BYTES", block)
    monkeypatch.setattr("nlpzoo.tasks.text.line_reader.MAX_LINE_BYTES", 5)
    pieces = [b"", b"a", b"abcd", b"abcde", b"\r", b"\n", b"\r\n", b"\r\r", b"\n\r"]
    rng = np.random.default_rng(block)
    for _ in range(300):
        data = b"".join(pieces[k] for k in rng.integers(0, len(pieces), 8))
        path = _write(tmp_path, data)
        too_long = [n for n, line in _lines_by_regex(data) if len(line) > 5]
        if not too_long:
            assert list(read_lines(path)) == _lines_by_regex(data), data
            continue
        with pytest.raises(DataFormatError, match=rf"data.txt:{too_long[0]}: a line longer "
                                                  r"than 5 bytes"):
            list(read_lines(path))


def test_a_5_mb_line_is_refused_having_held_about_the_limit(tmp_path):
    path = _write(tmp_path, b"EU rejects\n" + b"x" * 5_000_000 + b"\nGerman\n")

    def read():
        with pytest.raises(DataFormatError, match=r"data.txt:2: a line longer than 1,048,576 "):
            list(read_lines(path))

    assert _peak_traced_bytes(read) < 3 * MAX_LINE_BYTES  # the line so far, and one read
    at_limit = b"\xc3\xa9" * (MAX_LINE_BYTES // 2)  # bytes, not characters, count
    path = _write(tmp_path, at_limit + b"\r\n" + at_limit + b"\r" + at_limit, "at_limit.txt")
    assert [len(text) for _, text in read_lines(path)] == [MAX_LINE_BYTES // 2] * 3


def _peak_traced_bytes(function):
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_a_50_mb_file_is_streamed_in_bounded_memory(tmp_path):
    """Streaming readers stay within ~15 MB (a block's worth) on a 50 MB file (minutes:
    tracemalloc is slow); materialising readers
    (they return every record, as training needs) hold the records, not the raw text too."""
    path = str(tmp_path / "big.conll")
    line = "Peter B-PER\nBlackburn I-PER\nvisited O\nLondon B-LOC\n\n"
    with open(path, "w") as f:
        for _ in range(50_000_000 // len(line)):
            f.write(line)
    size = os.path.getsize(path)
    streamed = _peak_traced_bytes(lambda: sum(1 for _ in read_lines(path)))
    assert streamed < 24_000_000, streamed  # a 1 MiB block, its text and its lines
    sentences = _peak_traced_bytes(lambda: sum(1 for _ in iter_column_file(path)))
    assert sentences < 24_000_000, sentences
    # A list of every sentence is bigger than the file (Python objects), but the file's
    # text is never held on top of it: the peak exceeds what the sentences keep by less
    # than half the file's size.
    tracemalloc.start()
    try:
        sentences = read_column_file(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(len(s.words) for s in sentences) == size // len(line) * 4
    assert peak - kept < size / 2, (peak, kept, size)


@pytest.mark.slow
def test_train_binary_exits_non_zero_and_writes_nothing_on_a_bad_file(tmp_path):
    bad = _write(tmp_path, b"LOC:city What city ?\n", "train.jsonl")
    model_dir = str(tmp_path / "run")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "train.py"), f"--train_data={bad}",
         f"--eval_data={os.path.join(TREC, 'test.label')}", f"--model_dir={model_dir}",
         "--preset=bert_tiny"], capture_output=True, text=True, cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 1
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert f"{bad}:1: not valid JSON" in line
    assert not os.path.exists(model_dir)
