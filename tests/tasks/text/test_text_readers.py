import pytest

from nlpzoo.tasks.classification import infer_format, read_examples
from nlpzoo.tasks.io.errors import DataFormatError
from tests.helpers.paths import shared_data_path


def test_trec_coarse_and_fine(tmp_path):
    path = tmp_path / "q.label"
    path.write_bytes(b"LOC:city What city is this ?\nHUM:ind Who was Galileo ?\n")
    coarse = read_examples(str(path))
    assert [(e.label, e.text, e.line) for e in coarse] == [
        ("LOC", "What city is this ?", 1), ("HUM", "Who was Galileo ?", 2)]
    fine = read_examples(str(path), "trec_fine")
    assert [e.label for e in fine] == ["LOC:city", "HUM:ind"]


def test_trec_invalid_utf8_line_is_decoded_as_latin1(tmp_path, caplog):
    path = tmp_path / "q.label"
    path.write_bytes(b"LOC:city Which sister\xf0city ?\n")
    [example] = read_examples(str(path))
    assert example.text == "Which sister\u00f0city ?"
    assert "q.label:1: not valid UTF-8: found byte(s) f0 at byte 21 of the line" in caplog.text
    assert "decoded as Latin-1" in caplog.text


def test_trec_bad_line_names_file_and_line(tmp_path):
    path = tmp_path / "q.label"
    path.write_text("LOC:city Fine ?\nno label here\n")
    with pytest.raises(DataFormatError, match=r"q.label:2: expected 'COARSE:fine"):
        read_examples(str(path), "trec")


def test_mrpc_header_bom_and_pairs(tmp_path):
    path = tmp_path / "mrpc.txt"
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    path.write_text(header + '1\t1\t2\tHe said "hi .\tHe said hi .\n0\t3\t4\tA b\tC d\n',
                    encoding="utf-8")
    examples = read_examples(str(path))
    assert infer_format(str(path)) == "mrpc"
    assert [(e.label, e.text, e.text_pair) for e in examples] == [
        ("1", 'He said "hi .', "He said hi ."), ("0", "A b", "C d")]


def test_mrpc_wrong_field_count(tmp_path):
    path = tmp_path / "mrpc.tsv"
    path.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t2\tonly three\n")
    with pytest.raises(DataFormatError, match=r"mrpc.tsv:2: expected 5 tab-separated fields, found 3"):
        read_examples(str(path), "mrpc")


def test_jsonl(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n\n{"text": "b", "text_pair": "c", "label": 1}\n')
    examples = read_examples(str(path))
    assert [(e.text, e.text_pair, e.label, e.line) for e in examples] == [
        ("a", None, "x", 1), ("b", "c", "1", 3)]
    path.write_text('{"text": "a", "label": "x"}\n{"text": "a"\n')
    with pytest.raises(DataFormatError, match=r"d.jsonl:2: not valid JSON"):
        read_examples(str(path))
    path.write_text('{"text": "a"}\n')
    with pytest.raises(DataFormatError, match=r"d.jsonl:1: expected an object with 'text' and 'label'"):
        read_examples(str(path))


def test_empty_and_missing_files(tmp_path):
    path = tmp_path / "empty.label"
    path.write_text("")
    with pytest.raises(DataFormatError, match="empty.label: no examples"):
        read_examples(str(path))
    with pytest.raises(DataFormatError, match="nope.label: no such file"):
        read_examples(str(tmp_path / "nope.label"))


def test_real_trec_and_mrpc_files():
    train = read_examples(shared_data_path("trec", "train_5500.label"))
    test = read_examples(shared_data_path("trec", "TREC_10.label"))
    assert (len(train), len(test)) == (5452, 500)
    assert {e.label for e in train} == {"ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"}
    assert len({e.label for e in read_examples(shared_data_path("trec", "train_5500.label"),
                                                "trec_fine")}) == 50
    mrpc_train = read_examples(shared_data_path("mrpc", "msr_paraphrase_train.txt"))
    mrpc_test = read_examples(shared_data_path("mrpc", "msr_paraphrase_test.txt"))
    assert (len(mrpc_train), len(mrpc_test)) == (4076, 1725)
    assert all(e.text_pair for e in mrpc_train)
