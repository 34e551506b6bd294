"""Reading SQuAD JSON, JSONL and TSV questions: answers placed, errors that say where."""

import json

import pytest

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.question_answering import readers
from nlpzoo.tasks.question_answering.readers import Answer


def _squad(tmp_path, paragraphs, name="data.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"version": "x", "data": [{"title": "T",
                                                          "paragraphs": paragraphs}]}))
    return str(path)


CONTEXT = "Super Bowl 50 was won by the Denver Broncos in 2016."


def test_squad_v1_questions_keep_every_gold_answer(tmp_path):
    path = _squad(tmp_path, [{"context": CONTEXT, "qas": [
        {"id": "a1", "question": "Who won?", "answers": [
            {"text": "Denver Broncos", "answer_start": 29},
            {"text": "the Denver Broncos", "answer_start": 25}]}]}])
    [example] = readers.read_qa_file(path)
    assert (example.id, example.question, example.is_impossible) == ("a1", "Who won?", False)
    assert example.answers == (Answer("Denver Broncos", 29), Answer("the Denver Broncos", 25))
    assert example.answer_texts == ["Denver Broncos", "the Denver Broncos"]
    assert CONTEXT[29:example.answers[0].end] == "Denver Broncos"


def test_squad_v2_unanswerable_questions(tmp_path):
    path = _squad(tmp_path, [{"context": CONTEXT, "qas": [
        {"id": "b", "question": "Who lost?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "Denver", "answer_start": 29}]}]}])
    [example] = readers.read_squad_json(path)
    assert example.is_impossible and example.answers == () and example.answer_texts == [""]


def test_a_misplaced_answer_is_found_nearest_its_offset(tmp_path):
    context = "red fish, blue fish, red fish"
    path = _squad(tmp_path, [{"context": context, "qas": [
        {"id": "c", "question": "q?", "answers": [{"text": "red fish", "answer_start": 19}]}]}])
    [example] = readers.read_squad_json(path)
    assert example.answers[0].start == 21  # 21 is 2 away; 0 is 19 away


def test_an_answer_not_in_the_context_is_kept_for_scoring_and_reported(tmp_path, capsys):
    from nlpzoo.tasks.registry import get_task

    path = _squad(tmp_path, [{"context": CONTEXT, "qas": [
        {"id": "d", "question": "q?", "answers": [{"text": "Panthers", "answer_start": 3}]}]}])
    [example] = get_task("question_answering").read(path)
    assert example.answers == (Answer("Panthers", None),)
    assert example.located_answer() is None
    error = capsys.readouterr().err
    assert "1 question(s) have no gold answer found" in error and "data[0].paragraphs[0].qas[0]" in error


@pytest.mark.parametrize("paragraph, where", [
    ({"context": CONTEXT, "qas": [{"question": "q?", "answers": [{"text": "x", "answer_start": "5"}]}]},
     "data[0].paragraphs[0].qas[0].answers[0].answer_start"),
    ({"context": CONTEXT, "qas": [{"question": 7, "answers": []}]},
     "data[0].paragraphs[0].qas[0].question"),
    ({"context": "", "qas": []}, "data[0].paragraphs[0].context"),
    ({"context": CONTEXT}, "data[0].paragraphs[0]"),
    ({"context": CONTEXT, "qas": [{"question": "q?", "answers": []}]},
     "data[0].paragraphs[0].qas[0].answers: no answers"),
    ({"context": CONTEXT, "qas": [{"question": "q?", "answers": [{"answer_start": 0}]}]},
     "data[0].paragraphs[0].qas[0].answers[0]"),
])
def test_squad_errors_name_the_file_and_field(tmp_path, paragraph, where):
    path = _squad(tmp_path, [paragraph])
    with pytest.raises(DataFormatError) as error:
        readers.read_squad_json(path)
    assert str(error.value).startswith(path) and where in str(error.value)


def test_prediction_input_may_lack_answers(tmp_path):
    path = _squad(tmp_path, [{"context": CONTEXT, "qas": [{"id": "e", "question": "Who?"}]}])
    assert readers.read_squad_json(path, require_answers=False)[0].answers == ()


@pytest.mark.parametrize("content, message", [
    (b"{not json", ":1: not valid JSON"),
    (b'{"data": 3}', "expected SQuAD JSON"),
    (b'\xff\xfe{}', "not UTF-8"),
])
def test_a_file_that_is_not_squad_json(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match=message):
        readers.read_squad_json(str(path))


def test_a_json_file_too_large_to_hold_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = _squad(tmp_path, [{"context": CONTEXT, "qas": []}])
    monkeypatch.setattr(readers, "MAX_JSON_BYTES", 10)
    with pytest.raises(DataFormatError, match="use JSONL"):
        readers.read_squad_json(path)


def test_jsonl_questions_and_their_errors_name_the_line(tmp_path):
    path = tmp_path / "qa.jsonl"
    records = [{"id": 1, "question": "Who won?", "context": CONTEXT,
                "answers": [{"text": "Denver Broncos", "answer_start": 29}]},
               {"question": "Who?", "context": CONTEXT, "is_impossible": True}]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    first, second = readers.read_qa_file(str(path))
    assert (first.id, first.line, first.answers[0].start) == ("1", 1, 29)
    assert second.is_impossible and second.location == f"{path}:2"
    path.write_text(json.dumps(records[0]) + "\n" + json.dumps({"question": "q"}) + "\n")
    with pytest.raises(DataFormatError, match=r"qa.jsonl:2: expected an object with 'question' "
                                              r"and 'context' \(found 'question'\)"):
        readers.read_qa_file(str(path))
    path.write_text(json.dumps({**records[0], "answers": [{"text": "x", "answer_start": -1}]}))
    with pytest.raises(DataFormatError, match=r"qa.jsonl:1: answers\[0\].answer_start"):
        readers.read_qa_file(str(path))


def test_tsv_questions_for_prediction(tmp_path):
    path = tmp_path / "questions.tsv"
    path.write_text("Who won?\t" + CONTEXT + "\n\nno tab here\n")
    with pytest.raises(DataFormatError, match=r"questions.tsv:3: expected question<TAB>context"):
        readers.read_qa_tsv(str(path))
    path.write_text("Who won?\t" + CONTEXT + "\n")
    [example] = readers.read_qa_tsv(str(path))
    assert (example.question, example.context, example.id) == ("Who won?", CONTEXT, None)


def test_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        readers.read_qa_file(str(tmp_path / "nothing.json"))
