"""No input eats all memory: every binary that reads data, given a 5 MB line and 5 MB of
long lines, in a subprocess under an address-space limit.

A line longer than `tasks.text.line_reader.MAX_LINE_BYTES` (1 MiB) is refused by every reader:
the binary exits 1 with one `error: FILE:LINE: ...` line, having held about 1 MiB of it.
A file of long lines each within the limit is read and used: the binary succeeds. Its
first line (or CoNLL sentence) is 20,000 short words, which the word tasks predict and
evaluate in windows (when each window carried every word around it as context, such a
line did not fit in 8 GB: 8,000 words took 6 GB, 40,000 words 24 GB); then a word of 1 MiB
(lower-casing it beside many words once asked for 25 GB) and lines of 1 MiB.

`ADDRESS_SPACE_LIMIT` is set with `RLIMIT_AS` before Python starts. TensorFlow reserves
much more address space than it uses: a normal run of tools/predict.py needs about 3 GB
of it (2 GB is too little); 8 GB leaves room, and the old code did not fit in it.

The 16 runs share one pool of `AT_ONCE` processes (about 140 s of CPU: about 70 s on two
idle cores); each test checks its half.
"""

import json
import os
import re
import resource

import numpy as np
import pytest

from nlpzoo.tasks.text.line_reader import MAX_LINE_BYTES
from tests.helpers.binaries import run_tools

# Sixteen TensorFlow processes on 5 MB inputs: about three minutes of the default run.
pytestmark = pytest.mark.slow

ADDRESS_SPACE_LIMIT = 8 << 30
AT_ONCE = 4  # TensorFlow processes at a time: about 1 GB resident each
FILE_BYTES = 5_000_000
WORDS = ("EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", ".")
TAGS = {"EU": "B-ORG", "German": "B-MISC", "British": "B-MISC"}
NUM_WORDS = 20_000  # the first line of the file of long lines (the old windows: over 8 GB)
LONG_LINES = 4  # then a word, and this many lines, of exactly MAX_LINE_BYTES bytes each
TOKEN = "Blackburn" * 111  # 999 characters: one [UNK] each, so long lines stay cheap to tag


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def _words(count):
    """`count` words of `WORDS`, in an order that does not repeat every 9 words."""
    return [WORDS[(k * 7 + k // 9) % len(WORDS)] for k in range(count)]


def _filled(prefix, size, piece):
    """`prefix` then `piece`s separated by spaces, cut to exactly `size` bytes (ASCII), no
    space at either end."""
    count = (size - len(prefix)) // (len(piece) + 1) + 2
    line = (prefix + " ".join([piece] * count))[:size]
    return line[:-1] + "x" if line.endswith(" ") else line


def _one_line_files(folder, write=True):
    """{format: (path, the long line's number)}: one line of 5 MB in each format."""
    contents = {
        "text": (lambda: _filled("", FILE_BYTES, "lamb") + "\n", 1),
        # A word of 5 MB on the second line of a CoNLL file.
        "conll": (lambda: "EU B-ORG\n" + "x" * FILE_BYTES + " O\n", 2),
    }
    return {name: (_write(folder / f"one_line.{name}", data()) if write
                   else str(folder / f"one_line.{name}"), line)
            for name, (data, line) in contents.items()}


def _many_lines_files(folder):
    """{format: path}: 20,000 words, then a word and lines of exactly MAX_LINE_BYTES bytes
    (5 MB)."""
    words = _words(NUM_WORDS)
    long_lines = ["x" * MAX_LINE_BYTES] + [_filled("", MAX_LINE_BYTES, TOKEN)
                                           for _ in range(LONG_LINES)]
    text = "".join(line + "\n" for line in [" ".join(words), *long_lines, "EU rejects it ."])
    conll = "".join(f"{word} {TAGS.get(word, 'O')}\n" for word in words) + "\n" + "".join(
        f"{'x' * (MAX_LINE_BYTES - 2)} O\n\nEU B-ORG\nrejects O\n\n" for _ in long_lines)
    contents = {"text": text, "conll": conll}
    for data in contents.values():
        assert len(data) >= FILE_BYTES and max(map(len, data.splitlines())) == MAX_LINE_BYTES
    return {name: _write(folder / f"many_lines.{name}", data)
            for name, data in contents.items()}


def _small_conll(folder):
    """Validation data for train.py, with the long files' tags: its own cost stays small."""
    return _write(folder / "small.conll", "EU B-ORG\nrejects O\nGerman B-MISC\n\nBritish "
                  "B-MISC\nlamb O\n")


def _write(path, data):
    path.write_bytes(data.encode("ascii"))
    return str(path)


def _commands(files, models, output):
    """{binary: (tool, *flags)} reading `files` ({format: path}); outputs under `output`.

    The longest first: the runs share a pool of `AT_ONCE` processes.
    """
    classifier, tagger, span_ner = models
    vocab = os.path.join(tagger, "vocab.txt")  # no vocabulary to learn: quicker
    common = ("--max_seq_length=32", "--mixed_precision=float32", f"--vocab={vocab}")
    return {
        "train": ("train.py", "--task=tagging", "--preset=bert_tiny", "--head=softmax",
                  f"--train_data={files['conll']}", f"--eval_data={files['small_conll']}",
                  f"--model_dir={output / 'train'}", "--epochs=1", "--batch_size=8", *common),
        "evaluate span_ner": ("evaluate.py", f"--model_dir={span_ner}",
                              f"--data={files['conll']}"),
        "evaluate tagger": ("evaluate.py", f"--model_dir={tagger}", f"--data={files['conll']}"),
        "predict span_ner": ("predict.py", f"--model_dir={span_ner}",
                             f"--input={files['text']}", f"--output={output / 's.jsonl'}",
                             "--input_format=text"),
        "predict tagger": ("predict.py", f"--model_dir={tagger}", f"--input={files['text']}",
                           f"--output={output / 't.jsonl'}", "--input_format=text"),
        "pretrain": ("pretrain.py", "--preset=bert_tiny", f"--corpus={files['text']}",
                     f"--model_dir={output / 'pretrain'}", "--max_steps=1", "--batch_size=4",
                     *common),
        "embed": ("embed.py", f"--model_dir={classifier}", f"--input={files['text']}",
                  f"--output={output / 'e.npy'}"),
        "predict classifier": ("predict.py", f"--model_dir={classifier}",
                               f"--input={files['text']}", f"--output={output / 'c.jsonl'}",
                               "--input_format=text"),
        "build_vocab": ("build_vocab.py", f"--corpus={files['text']}",
                        f"--output={output / 'vocab.txt'}", "--vocab_size=300"),
    }


ONE_LINE, MANY_LINES = "one 5 MB line", "5 MB of long lines"
# The span model reads input as the tagger does: on the line over the limit, the tagger's
# runs suffice.
NOT_ON_ONE_LINE = ("predict span_ner", "evaluate span_ner")


@pytest.fixture(scope="module")
def runs(trained_classifier_dir, trained_tagger_dir, trained_span_ner_dir, tmp_path_factory):
    """{(file, binary): (CompletedProcess, the folder of its files)}: every run, in one
    pool under the address-space limit."""
    models = trained_classifier_dir, trained_tagger_dir, trained_span_ner_dir
    commands, folders = {}, {}
    for case in (MANY_LINES, ONE_LINE):
        folder = tmp_path_factory.mktemp(case.replace(" ", "_"))
        if case == ONE_LINE:
            files = {name: path for name, (path, _) in _one_line_files(folder).items()}
        else:
            files = _many_lines_files(folder)
        files["small_conll"] = _small_conll(folder)
        for name, command in _commands(files, models, folder).items():
            if not (case == ONE_LINE and name in NOT_ON_ONE_LINE):
                commands[case, name] = command
                folders[case, name] = folder
    results = run_tools(commands, at_once=AT_ONCE, preexec_fn=_limit_address_space)
    return {key: (result, folders[key]) for key, result in results.items()}


def _no_traceback(name, result):
    assert "Traceback" not in result.stderr + result.stdout, f"{name}: {result.stderr[-3000:]}"


def test_a_line_over_the_limit_is_one_error_line_in_every_binary(runs):
    format_of = {"evaluate tagger": "conll", "train": "conll"}
    checked = 0
    for (case, name), (result, folder) in runs.items():
        if case != ONE_LINE:
            continue
        _no_traceback(name, result)
        path, line = _one_line_files(folder, write=False)[format_of.get(name, "text")]
        errors = [row for row in result.stderr.splitlines() if row.startswith("error: ")]
        assert result.returncode == 1 and len(errors) == 1, f"{name}: {result.stderr[-3000:]}"
        assert re.search(rf"{re.escape(path)}:{line}: a line longer than "
                         rf"{MAX_LINE_BYTES:,} bytes .*; split it$", errors[0]), (name, errors)
        checked += 1
    assert checked == 7


def test_long_lines_within_the_limit_work_in_every_binary(runs):
    results = {name: result for (case, name), (result, _) in runs.items() if case == MANY_LINES}
    assert len(results) == 9
    for name, result in results.items():
        _no_traceback(name, result)
        assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"
    folder = runs[MANY_LINES, "embed"][1]
    texts = 1 + (1 + LONG_LINES) + 1  # the words, the long word and lines, a short line
    for output in ("c.jsonl", "t.jsonl", "s.jsonl"):
        records = [json.loads(line) for line in open(folder / output, encoding="utf-8")]
        assert len(records) == texts, output
    tagged = [json.loads(line) for line in open(folder / "t.jsonl", encoding="utf-8")]
    assert [len(r["words"]) for r in tagged] == [len(r["tags"]) for r in tagged]
    assert tagged[0]["words"] == _words(NUM_WORDS)
    for name in ("evaluate tagger", "evaluate span_ner"):
        metrics = json.loads([line for line in results[name].stdout.splitlines()
                              if line.startswith("{")][0])
        assert metrics["sentences"] == 1 + 2 * (1 + LONG_LINES), name
    assert np.load(folder / "e.npy").shape[0] == texts
