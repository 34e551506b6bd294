"""Raw text through the word tasks: predict.py's plain-text input and the exported graph split
it as BERT does, so "He flew to Paris, France, on Monday." gives the entity `Paris` at
characters 11-16 (not `Paris,`); a one-line text file is text, never CoNLL columns."""

import json

import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.span_ner.task import SpanNERTask
from nlpzoo.tasks.tagging.task import TaggingTask
from nlpzoo.tasks.text.prediction_io import looks_like_columns
from nlpzoo.tasks.words.preprocessor import WordPreprocessor

SENTENCE = "He flew to Paris, France, on Monday."
LABELS = ["O", "B-LOC", "I-LOC"]
PLACES = ["paris", "france", "rome"]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", ".", "he", "flew", "to",
              "on", "monday"] + PLACES


class _PlaceTagger:
    """Tags each word whose first subword is a place B-LOC, every other word O (the same
    in NumPy for predict.py and in TensorFlow for the serving graph)."""

    def predict_on_batch(self, features):
        token_ids = np.asarray(features["token_ids"])
        first = np.take_along_axis(token_ids, np.asarray(features["word_starts"]), axis=1)
        places = [VOCABULARY.index(place) for place in PLACES]
        return np.isin(first, places).astype(np.int32) * np.asarray(features["word_mask"])

    def decode(self, features):
        tags = tf.numpy_function(lambda *args: self.predict_on_batch(
            dict(zip(("token_ids", "word_starts", "word_mask"), args))).astype(np.int32),
            [features["token_ids"], features["word_starts"], features["word_mask"]], tf.int32)
        return tf.ensure_shape(tags, [None, None])


def _predict(tmp_path, text, input_format="auto", output="out.jsonl"):
    path = tmp_path / "input.txt"
    path.write_text(text, encoding="utf-8")
    task = TaggingTask()
    sentences = task.read_prediction_input(str(path), input_format)
    destination = tmp_path / output
    task.write_predictions(_PlaceTagger(), WordPreprocessor(VOCABULARY, max_seq_length=32),
                           sentences, LABELS, str(destination), batch_size=8)
    if output.endswith(".jsonl"):
        return [json.loads(line) for line in destination.read_text("utf-8").splitlines()]
    return destination.read_text("utf-8")


def test_predict_gives_paris_without_the_comma(tmp_path):
    [record] = _predict(tmp_path, SENTENCE + "\n")
    assert record["words"] == ["He", "flew", "to", "Paris", ",", "France", ",", "on", "Monday",
                               "."]
    assert record["tags"] == ["O", "O", "O", "B-LOC", "O", "B-LOC", "O", "O", "O", "O"]
    assert [(e["text"], e["start_char"], e["end_char"], e["start"], e["end"])
            for e in record["entities"]] == [("Paris", 11, 16, 3, 3), ("France", 18, 24, 5, 5)]
    assert "Paris B-LOC\n, O\nFrance B-LOC\n" in _predict(tmp_path, SENTENCE, output="o.conll")


def test_offsets_index_the_line_as_given(tmp_path):
    line = "\tRome\u00a0(Italy),\u3000Paris\u2026 \u6771\u4eac\ufeff «Rome».  "
    [record] = _predict(tmp_path, line + "\n")
    assert record["text"] == line
    assert record["words"] == ["Rome", "(", "Italy", ")", ",", "Paris", "\u2026", "\u6771",
                               "\u4eac", "«", "Rome", "»", "."]
    assert [e["text"] for e in record["entities"]] == ["Rome", "Paris", "Rome"]
    for entity in record["entities"]:
        assert line[entity["start_char"]:entity["end_char"]] == entity["text"]


def test_the_serving_graph_gives_the_same_words_offsets_and_entities(tmp_path):
    texts = [SENTENCE, "", "Rome,Paris;France.", " \u00a0 "]
    task = TaggingTask()
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=32)
    serve = tf.function(lambda text: task.serving_outputs(_PlaceTagger(), preprocessor, LABELS,
                                                          text), autograph=False)
    served = {name: value.numpy().tolist() for name, value in serve(tf.constant(texts)).items()}
    assert served["num_words"] == [10, 0, 6, 0]
    assert [w.decode() for w in served["words"][0]] == _predict(
        tmp_path, SENTENCE + "\n")[0]["words"]
    assert served["num_entities"] == [2, 0, 3, 0]
    assert (served["entity_start_char"][0], served["entity_end_char"][0]) == ([11, 18, -1],
                                                                              [16, 24, -1])
    assert (served["entity_start"][0], served["entity_end"][0]) == ([3, 5, -1], [3, 5, -1])
    assert [texts[2][s:e] for s, e in zip(served["entity_start_char"][2],
                                         served["entity_end_char"][2])] == ["Rome", "Paris",
                                                                            "France"]


def test_the_word_preprocessor_splits_raw_strings_as_predict():
    preprocessor = WordPreprocessor(VOCABULARY, max_seq_length=32)
    features = preprocessor(tf.constant([SENTENCE]))
    # [CLS] he flew to paris , france , on monday . [SEP]: one subword per word.
    expected = [2] + [VOCABULARY.index(w) for w in
                      ["he", "flew", "to", "paris", ",", "france", ",", "on", "monday", "."]] + [3]
    assert features["token_ids"].numpy()[0].tolist()[:12] == expected
    assert features["word_starts"].numpy()[0].tolist()[:10] == list(range(1, 11))
    assert features["word_mask"].numpy()[0].sum() == 10


def _long_line(words):
    rng = np.random.default_rng(0)
    pieces = ["Paris,", "he", "flew", "to", "Rome.", "on", "Monday", "France;"]
    return " ".join(rng.choice(pieces, words - 1)) + " O"  # ends like a tag column


def test_a_one_line_text_of_1000_words_is_text_and_every_word_is_tagged(tmp_path):
    line = _long_line(1000)
    path = tmp_path / "input.txt"
    path.write_text(line + "\n", encoding="utf-8")
    assert not looks_like_columns(str(path))
    [record] = _predict(tmp_path, line + "\n")
    assert len(record["words"]) == len(record["tags"]) > 1000  # punctuation split off
    assert record["tags"] == ["B-LOC" if w.lower() in PLACES else "O" for w in record["words"]]
    for entity in record["entities"]:
        assert line[entity["start_char"]:entity["end_char"]] == entity["text"]
    for task in (TaggingTask(), SpanNERTask()):
        [sentence] = task.read_prediction_input(str(path))
        assert sentence.text == line and len(sentence.words) == len(record["words"])


def test_few_line_texts_are_text_and_columns_stay_columns(tmp_path):
    texts = {"one.txt": "He flew to Paris, France, on Monday.\n",
             "few.txt": "Paris O\n\nis nice .\nRome is nicer, she said in Rome on Monday O\n",
             "equal.txt": "He flew to Paris .\nShe went to Rome .\n"}
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert not looks_like_columns(str(tmp_path / name)), name
    columns = tmp_path / "dev.txt"
    columns.write_text("EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nGerman JJ B-NP B-MISC\n",
                       encoding="utf-8")
    assert looks_like_columns(str(columns))
    wide = tmp_path / "wide.txt"  # CoNLL-U-like: 10 columns, the last a tag
    wide.write_text("".join(f"{w} a b c d e f g h {t}\n" for w, t in (("EU", "B-ORG"),
                                                                        ("rejects", "O"))))
    assert looks_like_columns(str(wide))


def test_input_format_overrides_the_guess(tmp_path):
    line = _long_line(30)
    path = tmp_path / "input.txt"
    path.write_text(line + "\n", encoding="utf-8")
    # Asked for data, the line is one token's 30 columns: its first is the word.
    [as_columns] = TaggingTask().read_prediction_input(str(path), "data")
    assert as_columns.words == (line.split()[0],) and as_columns.text == ""
    path.write_text("EU B-ORG\nrejects\n", encoding="utf-8")  # bad columns: named
    with pytest.raises(DataFormatError, match="input.txt:2"):
        TaggingTask().read_prediction_input(str(path), "data")
    columns = tmp_path / "dev.txt"
    columns.write_text("EU B-ORG\nrejects, O\n", encoding="utf-8")
    [as_data] = TaggingTask().read_prediction_input(str(columns))
    assert as_data.words == ("EU", "rejects,") and as_data.text == ""
    as_text = TaggingTask().read_prediction_input(str(columns), "text")
    assert [s.words for s in as_text] == [("EU", "B", "-", "ORG"), ("rejects", ",", "O")]
