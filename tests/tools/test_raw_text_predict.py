"""tools/predict.py on raw text with the session's trained tagger: a one-line file of 1,000
words (ending like a tag column) is read as text, split as BERT splits it, every word tagged,
and every entity's character offsets give its text in the line."""

import json

import numpy as np

from nlpzoo.tasks.text.word_splitting import split_words
from tests.helpers.binaries import run_tool

SENTENCE = "He flew to Paris, France, on Monday."


def test_a_one_line_1000_word_file_is_text_split_as_bert_and_every_word_tagged(
        trained_tagger_dir, tmp_path):
    rng = np.random.default_rng(0)
    filler = ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb.",
              "Peter", "Blackburn,", "(BRUSSELS)", "1996-08-22"]
    line = SENTENCE + " " + " ".join(rng.choice(filler, 992)) + " O"
    assert len(line.split()) == 1000
    path, output = tmp_path / "long.txt", tmp_path / "long.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    result = run_tool("predict.py", "--model_dir", trained_tagger_dir, "--input", str(path),
                      "--output", str(output))
    assert result.returncode == 0, result.stderr[-2000:]
    [record] = [json.loads(text) for text in output.read_text("utf-8").splitlines()]
    words = split_words(line)
    assert record["words"] == [word for word, _, _ in words] and len(words) > 1000
    assert record["words"][:10] == ["He", "flew", "to", "Paris", ",", "France", ",", "on",
                                    "Monday", "."]
    assert len(record["tags"]) == len(words) and "" not in record["tags"]
    assert record["text"] == line
    for entity in record["entities"]:  # whatever the tiny model finds
        start_char, end_char = words[entity["start"]][1], words[entity["end"]][2]
        assert (entity["start_char"], entity["end_char"]) == (start_char, end_char)
        assert line[start_char:end_char] == entity["text"]
