"""Questions, their contexts and gold answers: SQuAD JSON (v1.1 and v2.0), JSONL and TSV.

Every reader returns a list of `QAExample`. Errors name the file and where in
it: the 1-based line of a JSONL record or TSV line, the field path of a SQuAD
JSON file (`data[3].paragraphs[0].qas[5].answers[0].answer_start`), which is
one long line.

A gold answer's `answer_start` must point at its text in the context. Real
data has answers whose offset is off by a few characters (whitespace
normalised by the annotation tool): such an answer is placed at the
occurrence of its text nearest the given offset (`locate_answer`). An
answer whose text is not in the context at all keeps its text (exact match
and F1 read only the text) but no offset (`start=None`): it trains nothing,
and the readers' caller says how many there were (`unlocated_answers`).
"""

import dataclasses
import os

from nlpzoo.tasks.io.errors import DataFormatError, MissingDataFileError
from nlpzoo.tasks.io.json_text import parse_json, read_json_file
from nlpzoo.tasks.text.line_reader import cleaned, read_lines

DATA_FORMATS = ("squad", "jsonl")
# A SQuAD JSON file is read whole (it is one JSON value): the largest taken. SQuAD v2.0's
# training file is 40 MB; this leaves room and refuses a file that would fill the memory.
MAX_JSON_BYTES = 1 << 30


@dataclasses.dataclass(frozen=True)
class Answer:
    """A gold answer: its `text` and its character offset `start` in the context (None
    when the text could not be found there)."""

    text: str
    start: int = None

    @property
    def end(self):
        """The character offset just after the answer (None without `start`)."""
        return None if self.start is None else self.start + len(self.text)


@dataclasses.dataclass(frozen=True)
class QAExample:
    """One question about one context, with its gold answers (none to predict).

    `is_impossible`: SQuAD v2.0's unanswerable question (its gold answer is
    the empty string). `id` is the question's id, when the data has one.

    Examples:
    >>> example = QAExample("Who?", "Ann met Bo.", (Answer("Bo", 8),))
    >>> example.context[example.answers[0].start:example.answers[0].end]
    'Bo'
    """

    question: str
    context: str
    answers: tuple = ()
    is_impossible: bool = False
    id: str = None
    source: str = ""
    line: int = 0
    where: str = ""  # the field path in a JSON file ("" for line-based files)

    @property
    def location(self):
        """`file:line` or `file: field path`, for messages."""
        return f"{self.source}: {self.where}" if self.where else f"{self.source}:{self.line}"

    @property
    def answer_texts(self):
        """The gold answer texts (`[""]` for an unanswerable question)."""
        return [""] if self.is_impossible else [answer.text for answer in self.answers]

    def located_answer(self):
        """The first gold answer with an offset, or None."""
        return next((answer for answer in self.answers if answer.start is not None), None)


def locate_answer(context, text, start):
    """The character offset of `text` in `context`: `start` when it is there, else the
    occurrence nearest `start` (None when `text` does not occur).

    Examples:
    >>> locate_answer("the cat and the cat", "cat", 16), locate_answer("a cat", "cat", 0)
    (16, 2)
    >>> locate_answer("a cat", "dog", 0) is None
    True
    """
    if context.startswith(text, start):
        return start
    best, index = None, context.find(text)
    while index != -1:
        if best is None or abs(index - start) < abs(best - start):
            best = index
        index = context.find(text, index + 1)
    return best


def unlocated_answers(examples):
    """`(count, first example)` of the examples with gold answers none of which was found
    in the context (answerable questions only); `(0, None)` when every one was.

    >>> unlocated_answers([QAExample("q", "a b", (Answer("c"),))])[0]
    1
    """
    missing = [e for e in examples
               if not e.is_impossible and e.answers and e.located_answer() is None]
    return len(missing), (missing[0] if missing else None)


def _is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_text(value, where, what):
    if not isinstance(value, str):
        raise DataFormatError(f"{where}: {what} must be a string, got {type(value).__name__}")
    if not cleaned(value).strip():
        raise DataFormatError(f"{where}: {what} is empty")
    return value


def _answers(records, context, where, required):
    """`Answer`s of a list of `{"text", "answer_start"}` records."""
    if records is None:
        records = []
    if not isinstance(records, list):
        raise DataFormatError(f"{where}: answers must be a list of "
                              '{"text": ..., "answer_start": ...} objects')
    if required and not records:
        raise DataFormatError(f"{where}: no answers (an answerable question needs at least "
                              "one; SQuAD v2.0 marks the others is_impossible)")
    answers = []
    for index, record in enumerate(records):
        at = f"{where}[{index}]"
        if not isinstance(record, dict) or "text" not in record:
            raise DataFormatError(f'{at}: expected {{"text": ..., "answer_start": ...}}')
        text = _check_text(record["text"], f"{at}.text", "an answer")
        start = record.get("answer_start")
        if start is not None and (not _is_integer(start) or start < 0):
            raise DataFormatError(f"{at}.answer_start: expected a character offset (an "
                                  f"integer >= 0), got {start!r}")
        located = locate_answer(context, text, 0 if start is None else start)
        answers.append(Answer(text, located))
    return tuple(answers)


def _example(record, context, source, line, where, require_answers):
    """A `QAExample` of a question record (SQuAD `qas` entry or JSONL object)."""
    at = f"{source}: {where}" if where else f"{source}:{line}:"  # JSON: a field; JSONL: a line
    sep = "." if where else " "
    question = _check_text(record.get("question"), f"{at}{sep}question", "the question")
    impossible = record.get("is_impossible", False)
    if not isinstance(impossible, bool):
        raise DataFormatError(f"{at}{sep}is_impossible: must be true or false, got "
                              f"{impossible!r}")
    answers = () if impossible else _answers(record.get("answers"), context,
                                             f"{at}{sep}answers", required=require_answers)
    identifier = record.get("id")
    if identifier is not None and not isinstance(identifier, (str, int)):
        raise DataFormatError(f"{at}{sep}id: must be a string, got {identifier!r}")
    return QAExample(question, context, answers, impossible,
                     None if identifier is None else str(identifier), source, line, where)


def read_squad_json(path, require_answers=True):
    """The questions of a SQuAD v1.1 or v2.0 JSON file.

    `{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
    "answers": [{"text", "answer_start"}], "is_impossible"}]}]}]}`; several
    gold answers per question are kept (all count for exact match and F1).
    With `require_answers=False` (prediction input) answers may be missing.

    Examples:
    >>> import json, tempfile
    >>> path = tempfile.mktemp(suffix=".json")
    >>> _ = open(path, "w").write(json.dumps({"data": [{"paragraphs": [{
    ...     "context": "Ann met  Bo.", "qas": [{"id": "q1", "question": "Who?",
    ...     "answers": [{"text": "Bo", "answer_start": 8}]}]}]}]}))
    >>> [(e.id, e.answers) for e in read_squad_json(path)]  # offset 8 is off by one: found at 9
    [('q1', (Answer(text='Bo', start=9),))]
    """
    document = _load_json(path)
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise DataFormatError(f'{path}: expected SQuAD JSON, {{"data": [{{"paragraphs": '
                              '[...]}, ...]}')
    examples = []
    for article_index, article in enumerate(data):
        at = f"data[{article_index}]"
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise DataFormatError(f"{path}: {at}: expected an object with a list of paragraphs")
        for paragraph_index, paragraph in enumerate(paragraphs):
            where = f"{at}.paragraphs[{paragraph_index}]"
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("qas"), list):
                raise DataFormatError(f"{path}: {where}: expected an object with a context and "
                                      "a list of qas")
            context = _check_text(paragraph.get("context"), f"{path}: {where}.context",
                                  "the context")
            for question_index, record in enumerate(paragraph["qas"]):
                question_at = f"{where}.qas[{question_index}]"
                if not isinstance(record, dict):
                    raise DataFormatError(f"{path}: {question_at}: expected an object")
                examples.append(_example(record, context, path, 1, question_at,
                                         require_answers))
    return _found(examples, path)


def _load_json(path):
    if not os.path.isfile(path):
        raise MissingDataFileError(f"{path}: no such file")
    size = os.path.getsize(path)
    if size > MAX_JSON_BYTES:
        raise DataFormatError(f"{path}: {size:,} bytes is more than the {MAX_JSON_BYTES:,} a "
                              "SQuAD JSON file may have here; split it, or use JSONL (one "
                              "question a line, streamed)")
    return read_json_file(path)


def read_qa_jsonl(path, require_answers=True):
    """Questions as JSON lines: `{"id", "question", "context", "answers": [{"text",
    "answer_start"}], "is_impossible"}` (`id` and `is_impossible` optional).

    Examples:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".jsonl")
    >>> _ = open(path, "w").write('{"question": "Who?", "context": "Ann met Bo.", '
    ...                           '"answers": [{"text": "Bo", "answer_start": 8}]}\\n{"x": 1}\\n')
    >>> read_qa_jsonl(path)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.errors.DataFormatError: ...:2: expected an object with 'question' and 'context' (found 'x')
    """
    examples = []
    for number, line in _lines(path):
        record = parse_json(line, path, number, strict=False)
        if not isinstance(record, dict) or "question" not in record or "context" not in record:
            found = (f" (found {', '.join(map(repr, record))})"
                     if isinstance(record, dict) else "")
            raise DataFormatError(f"{path}:{number}: expected an object with 'question' and "
                                  f"'context'{found}")
        context = _check_text(record["context"], f"{path}:{number}: context", "the context")
        examples.append(_example(record, context, path, number, "", require_answers))
    return _found(examples, path)


def read_qa_tsv(path):
    """Questions to answer, one a line: `question<TAB>context` (no answers).

    >>> import tempfile
    >>> path = tempfile.mktemp(suffix=".tsv")
    >>> _ = open(path, "w").write("Who?\\tAnn met Bo.\\n")
    >>> [(e.question, e.context) for e in read_qa_tsv(path)]
    [('Who?', 'Ann met Bo.')]
    """
    examples = []
    for number, line in _lines(path):
        question, tab, context = line.partition("\t")
        if not tab:
            raise DataFormatError(f"{path}:{number}: expected question<TAB>context")
        where = f"{path}:{number}"
        examples.append(QAExample(_check_text(question, where + ": question", "the question"),
                                  _check_text(context, where + ": context", "the context"),
                                  source=path, line=number))
    return _found(examples, path)


def _lines(path):
    """`(number, line)` of the lines of a UTF-8 file that hold more than whitespace and
    characters the clean-up removes; a byte-order mark is dropped."""
    if not os.path.isfile(path):
        raise MissingDataFileError(f"{path}: no such file")
    for number, line in read_lines(path):
        if number == 1:
            line = line.removeprefix("\ufeff")
        if cleaned(line).strip():
            yield number, line


def _found(examples, path):
    """`examples`, unless there are none (an error naming the file)."""
    if not examples:
        raise DataFormatError(f"{path}: no questions found")
    return examples


def infer_format(path):
    """`squad` for a `.json` file, `jsonl` for JSON lines (what `read_qa_file` reads).

    >>> infer_format("dev-v1.1.json"), infer_format("train.jsonl")
    ('squad', 'jsonl')
    """
    return "squad" if path.lower().endswith(".json") else "jsonl"


def read_qa_file(path, data_format=None, require_answers=True):
    """The questions of a SQuAD JSON (`squad`) or JSONL (`jsonl`) file; the format from the
    file name when not given (`infer_format`)."""
    data_format = data_format or infer_format(path)
    if data_format == "squad":
        return read_squad_json(path, require_answers)
    if data_format == "jsonl":
        return read_qa_jsonl(path, require_answers)
    raise DataFormatError(f"{path}: question answering reads {', '.join(DATA_FORMATS)}, "
                          f"not {data_format!r}")
