"""tasks.probing.data: the column to probe for, counted from 1, and its label ids."""

import os

import numpy as np
import pytest

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.probing import label_ids, probing_labels, read_probing_column, take_sentences
from tests.helpers.paths import CONLL

TRAIN = os.path.join(CONLL, "train.txt")


def test_columns_count_from_one_with_the_word_first():
    pos, chunk, ner = (read_probing_column(TRAIN, column) for column in (2, 3, 4))
    assert pos[0].words == ner[0].words == ("EU", "rejects", "German", "call", "to", "boycott",
                                            "British", "lamb", ".")
    assert pos[0].tags == ("NNP", "VBZ", "JJ", "NN", "TO", "VB", "JJ", "NN", ".")
    assert chunk[0].tags[:4] == ("B-NP", "B-VP", "B-NP", "I-NP")
    assert ner[0].tags[:3] == ("B-ORG", "O", "B-MISC")
    assert [s.line for s in pos] == [s.line for s in ner]


@pytest.mark.parametrize("column", [0, 1, -1, 2.0, "2", True])
def test_the_word_column_and_non_integers_are_refused(column):
    with pytest.raises(ValueError, match="column must be an integer >= 2"):
        read_probing_column(TRAIN, column)


def test_a_column_beyond_the_file_names_file_and_line(tmp_path):
    path = tmp_path / "two.txt"
    path.write_text("\n\nEU B-ORG\nrejects O\n")
    with pytest.raises(DataFormatError, match=r"two.txt:3: tag_column=2 is out of range for "
                       r"2 columns \(column 3, counting from 1\)"):
        read_probing_column(str(path), 3)
    with pytest.raises(DataFormatError, match=r"train.txt:1: .* \(column 5, counting from 1\)"):
        read_probing_column(TRAIN, 5)


def test_bounds_keep_whole_sentences_from_the_start():
    every = read_probing_column(TRAIN, 2)
    lengths = [len(s) for s in every]
    bounded = read_probing_column(TRAIN, 2, max_words=lengths[0] + lengths[1] + 1)
    assert [s.words for s in bounded] == [s.words for s in every[:2]]
    assert len(read_probing_column(TRAIN, 2, max_sentences=3)) == 3
    assert take_sentences(every, max_words=lengths[0] - 1) == []
    assert take_sentences(every) == every


def test_label_ids_give_unseen_labels_an_id_no_probe_predicts():
    train = read_probing_column(TRAIN, 2)
    labels = probing_labels(train)
    assert labels == sorted(set(labels)) and "NNP" in labels
    ids = label_ids(train, labels)
    assert [labels[i] for i in ids[0]] == list(train[0].tags)
    assert all(ids_row.dtype == np.int32 for ids_row in ids)
    evaluation = read_probing_column(os.path.join(CONLL, "dev.txt"), 2)
    unseen = {tag for s in evaluation for tag in s.tags} - set(labels)
    assert unseen  # the sample's dev words have a POS tag its train words lack
    flat = np.concatenate(label_ids(evaluation, labels))
    assert (flat == len(labels)).sum() == sum(tag in unseen for s in evaluation for tag in s.tags)
