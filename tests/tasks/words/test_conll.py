import dataclasses

import pytest

from nlpzoo.tasks.words.conll import DataFormatError, TaggedSentence, label_list, read_column_file
from nlpzoo.tasks.words.tags import detect_scheme, spans_to_tags, tags_to_spans
from tests.helpers.data_samples import CONLL_FOUR_COLUMNS
from tests.helpers.paths import shared_data_path

CONLL_LABELS = ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]


def _write(tmp_path, text, name="data.txt"):
    """Writes `text` byte for byte (no newline translation) and returns the path."""
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

FOUR_COLUMNS = CONLL_FOUR_COLUMNS


def test_four_columns_tag_last(tmp_path):
    path = _write(tmp_path, FOUR_COLUMNS)
    first, second = read_column_file(path)
    assert first == TaggedSentence(
        ("EU", "rejects", "German"), ("B-ORG", "O", "B-MISC"), path, 1
    )
    assert second == TaggedSentence(("Peter", "Blackburn"), ("B-PER", "I-PER"), path, 5)


def test_other_tag_column(tmp_path):
    path = _write(tmp_path, FOUR_COLUMNS)
    sentences = read_column_file(path, tag_column=2, num_columns=4)
    assert sentences[0].tags == ("B-NP", "B-VP", "B-NP")


def test_two_columns_tab(tmp_path):
    path = _write(tmp_path, "Paris\tB-LOC\nis\tO\n\nBob\tB-PER\n")
    sentences = read_column_file(path)
    assert [s.words for s in sentences] == [("Paris", "is"), ("Bob",)]
    assert [s.tags for s in sentences] == [("B-LOC", "O"), ("B-PER",)]


def test_two_columns_space_and_runs_of_whitespace(tmp_path):
    path = _write(tmp_path, "Paris  B-LOC\n  is \t O  \n")
    [sentence] = read_column_file(path)
    assert sentence.words == ("Paris", "is") and sentence.tags == ("B-LOC", "O")


def test_non_breaking_space_stays_inside_a_word(tmp_path):
    path = _write(tmp_path, "10\u00a0000 O\n")
    assert read_column_file(path)[0].words == ("10\u00a0000",)


def test_docstart_lines_are_skipped_and_line_numbers_kept(tmp_path):
    text = "-DOCSTART- -X- -X- O\n\n" + FOUR_COLUMNS + "\n-DOCSTART- -X- -X- O\n\nA DT B-NP O\n"
    path = _write(tmp_path, text)
    sentences = read_column_file(path)
    assert [len(s) for s in sentences] == [3, 2, 1]
    assert [s.line for s in sentences] == [3, 7, 12]


def test_docstart_without_blank_line_still_ends_the_sentence(tmp_path):
    path = _write(tmp_path, "a O\n-DOCSTART- O\nb O\n")
    assert [s.words for s in read_column_file(path)] == [("a",), ("b",)]


def test_blank_lines_leading_repeated_and_trailing(tmp_path):
    path = _write(tmp_path, "\n\n \na O\n\n\n\t\nb O\n\n\n\n")
    sentences = read_column_file(path)
    assert [(s.words, s.line) for s in sentences] == [(("a",), 4), (("b",), 8)]


def test_no_final_newline(tmp_path):
    path = _write(tmp_path, "a O\nb B-PER")
    assert read_column_file(path)[0].tags == ("O", "B-PER")


def test_crlf_line_endings(tmp_path):
    path = _write(tmp_path, FOUR_COLUMNS.replace("\n", "\r\n") + "\r\n")
    crlf_sentences = read_column_file(path)
    lf_sentences = read_column_file(_write(tmp_path, FOUR_COLUMNS, "lf.txt"))
    assert [(s.words, s.tags, s.line) for s in crlf_sentences] == [
        (s.words, s.tags, s.line) for s in lf_sentences
    ]


def test_utf8_byte_order_mark_and_accents(tmp_path):
    path = _write(tmp_path, "\ufeffCafé B-LOC\nnaïve O\n")
    assert read_column_file(path)[0].words == ("Café", "naïve")


def test_tagged_sentence_is_frozen_and_checks_lengths():
    sentence = TaggedSentence(["a"], ["O"])
    assert sentence.words == ("a",) and isinstance(sentence.tags, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sentence.words = ("b",)
    with pytest.raises(ValueError, match="1 words but 2 tags"):
        TaggedSentence(("a",), ("O", "O"))


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def test_wrong_column_count_names_file_and_line(tmp_path):
    path = _write(tmp_path, "EU NNP B-NP B-ORG\nrejects VBZ O\n")
    with pytest.raises(DataFormatError) as error:
        read_column_file(path)
    assert str(error.value) == f"{path}:2: expected 4 columns (word ... tag), found 3"
    assert isinstance(error.value, ValueError)


def test_wrong_column_count_in_a_two_column_file(tmp_path):
    path = _write(tmp_path, "a O\n\nb c O\n")
    with pytest.raises(DataFormatError, match=r":3: expected 2 columns \(word tag\), found 3"):
        read_column_file(path)


def test_given_column_count_is_enforced_from_the_first_line(tmp_path):
    path = _write(tmp_path, "a O\n")
    with pytest.raises(DataFormatError, match=r":1: expected 4 columns"):
        read_column_file(path, num_columns=4)


def test_single_column_file(tmp_path):
    path = _write(tmp_path, "\nword\n")
    with pytest.raises(DataFormatError, match=r":2: expected at least 2 columns"):
        read_column_file(path)


@pytest.mark.parametrize("bad_tag", ["X-PER", "B-", "BPER", "b-PER", "-PER", "OO"])
def test_tag_outside_the_scheme_names_file_and_line(tmp_path, bad_tag):
    path = _write(tmp_path, f"a O\nb B-PER\n\nc {bad_tag}\n")
    with pytest.raises(DataFormatError) as error:
        read_column_file(path)
    assert str(error.value).startswith(f"{path}:4: tag {bad_tag!r}")


def test_bioes_prefix_rejected_under_iob2(tmp_path):
    path = _write(tmp_path, "a S-PER\n")
    with pytest.raises(DataFormatError, match=r":1: tag 'S-PER' is not O nor B-/I-"):
        read_column_file(path, scheme="IOB2")
    assert read_column_file(path)[0].tags == ("S-PER",)  # no scheme: any prefix


def test_invalid_iob2_transition_names_file_and_line(tmp_path):
    path = _write(tmp_path, "a B-PER\nb I-PER\nc O\nd I-LOC\n")
    with pytest.raises(DataFormatError) as error:
        read_column_file(path, scheme="IOB2")
    assert str(error.value).startswith(f"{path}:4: 'I-LOC' after 'O' is not valid IOB2")
    assert "convert_iob1=True" in str(error.value)


def test_invalid_iob1_and_bioes_transitions(tmp_path):
    iob2_path = _write(tmp_path, "a B-PER\nb I-PER\n", "iob2.txt")
    with pytest.raises(DataFormatError, match=r"iob2.txt:1: 'B-PER' at the start"):
        read_column_file(iob2_path, scheme="IOB1")
    unclosed_path = _write(tmp_path, "a B-PER\nb I-PER\n\n", "unclosed.txt")
    with pytest.raises(DataFormatError, match=r"unclosed.txt:2: the sentence ends inside"):
        read_column_file(unclosed_path, scheme="BIOES")
    bioes_path = _write(tmp_path, "a B-PER\nb E-PER\nc S-LOC\n", "bioes.txt")
    assert read_column_file(bioes_path, scheme="bioes")[0].tags == ("B-PER", "E-PER", "S-LOC")


def test_bioes_entity_left_open_and_the_bio_alias(tmp_path):
    path = _write(tmp_path, "a B-PER\nb O\n")
    with pytest.raises(DataFormatError) as error:
        read_column_file(path, scheme="BIOES")
    assert str(error.value) == (
        f"{path}:2: 'O' after 'B-PER' is not valid BIOES (an entity must end with E-)"
    )
    assert read_column_file(path, scheme="BIO")[0].tags == ("B-PER", "O")


def test_empty_file_names_the_file(tmp_path):
    cases = [("empty.txt", ""), ("blank.txt", "\n \n\n"), ("doc.txt", "-DOCSTART- O\n\n")]
    for name, text in cases:
        path = _write(tmp_path, text, name)
        with pytest.raises(DataFormatError, match="no sentences found") as error:
            read_column_file(path)
        assert str(error.value).startswith(path)


def test_missing_file_names_the_path(tmp_path):
    path = str(tmp_path / "no_such_file.conll")
    with pytest.raises(FileNotFoundError) as error:
        read_column_file(path)
    assert path in str(error.value)


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = _write(tmp_path, b"a O\nb\xe9 O\n")
    with pytest.raises(DataFormatError, match=r"data.txt:2: not valid UTF-8"):
        read_column_file(path)


def test_contradicting_arguments(tmp_path):
    path = _write(tmp_path, "a O\n")
    with pytest.raises(ValueError, match="scheme='IOB3'"):
        read_column_file(path, scheme="IOB3")
    with pytest.raises(ValueError, match="convert_iob1=True"):
        read_column_file(path, scheme="IOB2", convert_iob1=True)
    with pytest.raises(ValueError, match="any_tags=True"):
        read_column_file(path, any_tags=True, scheme="IOB2")
    with pytest.raises(ValueError, match="any_tags=True"):
        read_column_file(path, any_tags=True, convert_iob1=True)


def test_column_out_of_range_names_file_and_line(tmp_path):
    path = _write(tmp_path, "\n-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\n")
    with pytest.raises(DataFormatError, match=r"data.txt:4: tag_column=4 is out of range for "
                       r"4 columns \(column 5, counting from 1\)"):
        read_column_file(path, tag_column=4)
    with pytest.raises(DataFormatError, match=r"data.txt:4: word_column=-5 is out of range"):
        read_column_file(path, word_column=-5)


def test_any_tags_reads_another_column_unchecked(tmp_path):
    path = _write(tmp_path, "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n")
    pos = read_column_file(path, tag_column=1, any_tags=True)
    assert [s.tags for s in pos] == [("NNP", "VBZ"), ("NNP",)]
    assert [s.words for s in pos] == [("EU", "rejects"), ("Peter",)]
    assert read_column_file(path, tag_column=2, any_tags=True)[0].tags == ("B-NP", "B-VP")
    with pytest.raises(DataFormatError, match="data.txt:1: tag 'NNP'"):
        read_column_file(path, tag_column=1)  # checked as entity tags by default


# ---------------------------------------------------------------------------------------------
# Schemes, labels and spans
# ---------------------------------------------------------------------------------------------

IOB1_TEXT = "Peter I-PER\nBlackburn I-PER\nMary B-PER\nin O\nBonn I-LOC\nGmbH I-ORG\n"
IOB2_OF_IOB1_TEXT = ("B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG")


def test_convert_iob1_while_reading(tmp_path):
    path = _write(tmp_path, IOB1_TEXT)
    [sentence] = read_column_file(path, convert_iob1=True)
    assert sentence.tags == IOB2_OF_IOB1_TEXT
    assert read_column_file(path, scheme="IOB1", convert_iob1=True)[0].tags == IOB2_OF_IOB1_TEXT
    assert read_column_file(path, scheme="IOB1")[0].tags[0] == "I-PER"  # checked, not converted


def test_convert_iob1_rejects_bioes_tags(tmp_path):
    path = _write(tmp_path, "a O\nb S-PER\n")
    with pytest.raises(DataFormatError, match=r":2: tag 'S-PER'"):
        read_column_file(path, convert_iob1=True)


def test_label_list_order():
    sentences = [
        TaggedSentence(("a", "b", "c"), ("S-PER", "B-ORG", "E-ORG")),
        TaggedSentence(("d", "e", "f"), ("I-ORG", "B-PER", "O")),
    ]
    assert label_list(sentences) == ["O", "B-ORG", "I-ORG", "E-ORG", "B-PER", "S-PER"]
    assert label_list([["B-PER"]]) == ["O", "B-PER"]


# ---------------------------------------------------------------------------------------------
# Real CoNLL-2003 (skipped where ../shared/data is absent)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "file_name, sentence_count",
    [("eng.train", 14041), ("eng.testa", 3250), ("eng.testb", 3453)],
)
def test_conll2003_counts_labels_and_scheme(file_name, sentence_count):
    sentences = read_column_file(shared_data_path("conll2003", file_name), scheme="IOB2")
    assert len(sentences) == sentence_count
    assert label_list(sentences) == CONLL_LABELS
    assert detect_scheme(sentences) == "IOB2"


def test_conll2003_train_round_trips_through_spans():
    sentences = read_column_file(shared_data_path("conll2003", "eng.train"))
    assert sentences[0].words[:2] == ("EU", "rejects") and sentences[0].line == 1
    for sentence in sentences:
        spans = tags_to_spans(sentence.tags)
        assert tuple(spans_to_tags(spans, len(sentence))) == sentence.tags, sentence.line
