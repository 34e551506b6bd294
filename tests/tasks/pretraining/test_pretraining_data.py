"""Corpus reading, packing and the pretraining tf.data pipeline."""

import numpy as np
import pytest

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.corpus import read_corpus
from nlpzoo.tasks.pretraining.packing import (
    continuation_flags,
    pack_sentence_pairs,
    pack_single_segments,
    segment_document,
    tokenize_documents,
)
from nlpzoo.tasks.pretraining.pipeline import make_pretraining_dataset
from nlpzoo.tasks.text.masking import default_max_predictions
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from tests.helpers.paths import shared_data_path

CLS, SEP, PAD, MASK = 2, 3, 0, 4
SPECIAL = (0, 1, 2, 3, 4)


def _write(tmp_path, text, name="corpus.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def test_blank_line_documents(tmp_path):
    path = _write(tmp_path, "First  doc , line one .\nLine two .\n\n\n Second doc .\n\n")
    assert read_corpus(path) == [["First doc , line one .", "Line two ."], ["Second doc ."]]


def test_wikitext_documents_and_escapes(tmp_path):
    text = (" = Alpha = Alpha is a 1 @,@ 000 @-@ year story .\n"
            " = = History = = It began &quot; early &quot; with <unk> care .\n"
            "\n"
            " = Beta = \n"
            "Beta is &lt; unk &gt; 3 @.@ 5 m long .\n")
    documents = read_corpus(_write(tmp_path, text))
    assert documents == [
        ["Alpha is a 1,000-year story .", 'It began " early " with care .'],
        ["Beta is 3.5 m long ."],
    ]
    # Forced blank-line reading keeps the headings as text and the blank line as a break.
    assert len(read_corpus(_write(tmp_path, text), "blank_lines")) == 2


def test_corpus_errors_name_the_file_and_line(tmp_path):
    bad = _write(tmp_path, b"fine line\nbad \xff byte\n", "bad.txt")
    with pytest.raises(DataFormatError, match=r"bad\.txt:2: not valid UTF-8"):
        read_corpus(bad)
    with pytest.raises(DataFormatError, match="holds no text"):
        read_corpus(_write(tmp_path, "\n\n  \n", "empty.txt"))
    with pytest.raises(DataFormatError, match="missing.txt: no such file"):
        read_corpus(str(tmp_path / "missing.txt"))


def _random_documents(rng, count=30, vocabulary=60):
    return [[rng.integers(5, vocabulary, size=rng.integers(1, 40)).astype(np.int32)
             for _ in range(rng.integers(1, 8))] for _ in range(count)]


def test_single_segment_packing_keeps_every_token_in_order():
    rng = np.random.default_rng(0)
    documents = _random_documents(rng)
    continuation = np.zeros(60, bool)
    continuation[50:] = True  # ids 50-59 continue a word
    out = pack_single_segments(documents, 32, cls_id=CLS, sep_id=SEP, pad_id=PAD,
                               continuation=continuation, rng=rng,
                               short_sequence_probability=0.0)
    ids = out["token_ids"]
    assert ids.shape[1] == 32 and np.all(out["segment_ids"] == 0)
    contents = []
    for row in ids:
        length = int((row != PAD).sum())
        assert row[0] == CLS and row[length - 1] == SEP and np.all(row[length:] == PAD)
        contents.append(row[1:length - 1])
    assert np.array_equal(np.concatenate(contents),
                          np.concatenate([line for doc in documents for line in doc]))
    # Packed full: a sequence ends early only when the next line would not fit
    # or its document ends, so most sequences are long.
    assert (ids != PAD).sum(1).mean() > 20


def test_long_lines_are_cut_at_word_starts_and_short_targets_are_drawn():
    continuation = np.zeros(60, bool)
    continuation[50:] = True
    line = np.array([5, 50, 51, 6, 52, 7, 8, 53, 54, 55, 9], np.int32)
    segments = segment_document([line], 4, np.random.default_rng(0), continuation)
    assert all(len(s) <= 4 for s in segments)
    assert np.array_equal(np.concatenate(segments), line)
    assert all(not continuation[s[0]] for s in segments[:-1] + segments[-1:])
    rng = np.random.default_rng(1)
    documents = _random_documents(rng, count=200)
    out = pack_single_segments(documents, 64, cls_id=CLS, sep_id=SEP, pad_id=PAD,
                               continuation=np.zeros(60, bool), rng=rng,
                               short_sequence_probability=0.5)
    lengths = (out["token_ids"] != PAD).sum(1)
    assert (lengths < 20).mean() > 0.1  # many short sequences with probability 0.5


def test_sentence_pairs_follow_or_come_from_another_document():
    rng = np.random.default_rng(2)
    # Each document uses its own id range, so a pair's origin is visible.
    documents = [[np.full(rng.integers(1, 6), 10 + d, np.int32) + np.arange(0, 1) * 0
                  for _ in range(6)] for d in range(20)]
    out = pack_sentence_pairs(documents, 20, cls_id=CLS, sep_id=SEP, pad_id=PAD,
                              continuation=np.zeros(40, bool), rng=rng,
                              short_sequence_probability=0.0)
    for row, segment_ids, is_next in zip(out["token_ids"], out["segment_ids"],
                                         out["next_sentence"]):
        seps = np.flatnonzero(row == SEP)
        assert row[0] == CLS and len(seps) == 2
        a, b = row[1:seps[0]], row[seps[0] + 1:seps[1]]
        assert np.all(segment_ids[:seps[0] + 1] == 0)
        assert np.all(segment_ids[seps[0] + 1:seps[1] + 1] == 1)
        assert np.all(segment_ids[seps[1] + 1:] == 0)
        assert (a[0] == b[0]) == bool(is_next)  # same document iff "next"
    assert abs(out["next_sentence"].mean() - 0.5) < 0.1


def _vocabulary():
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "."]
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + ["##s", "##ing"]


def test_tokenize_documents_drops_empty_lines():
    tokenizer = WordPieceTokenizer(_vocabulary())
    documents = tokenize_documents([["The cats sat .", "   "], ["!!!"]], tokenizer)
    # "!!!" is three [UNK] pieces: kept; the blank line is dropped.
    assert [[row.tolist() for row in doc] for doc in documents] == [
        [[5, 6, 14, 7, 13]], [[1, 1, 1]]]
    assert continuation_flags(tokenizer.vocabulary).tolist()[-3:] == [False, True, True]


def _masked_batches(objective, arrays, **options):
    dataset = make_pretraining_dataset(
        arrays, objective=objective, continuation=np.zeros(300, bool), special_ids=SPECIAL,
        mask_id=MASK, batch_size=50, max_predictions=20, **options)
    return dataset


def _corpus_arrays(rng, n=400, t=128):
    ids = np.zeros((n, t), np.int32)
    for row in ids:
        length = rng.integers(40, t + 1)
        row[1:length - 1] = rng.integers(5, 300, size=length - 2)
        row[0], row[length - 1] = CLS, SEP
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids),
            "next_sentence": rng.integers(0, 2, size=n).astype(np.int32)}


@pytest.mark.parametrize("objective", ["mlm", "mlm_nsp", "span_sbo"])
def test_pipeline_rates_shapes_and_fresh_masks(objective):
    arrays = _corpus_arrays(np.random.default_rng(3))
    dataset = _masked_batches(objective, arrays, training=True, seed=7)
    assert dataset.options().autotune.enabled is False  # tasks/text/autotuning.py
    iterator = iter(dataset)
    selected = eligible = 0
    treatments = np.zeros(3)
    first_positions = []
    for _ in range(16):  # two passes over the 400 sequences
        x, y = next(iterator)
        labels = y["mlm_labels"].numpy()
        ids, positions = x["token_ids"].numpy(), x["mask_positions"].numpy()
        assert ids.shape == (50, 128) and positions.shape == (50, 20)
        assert set(x) >= {"token_ids", "segment_ids", "padding_mask", "mask_positions"}
        real = labels >= 0
        selected += real.sum()
        eligible += (x["padding_mask"].numpy().sum(1) - 2).sum()
        new = np.take_along_axis(ids, positions, 1)[real]
        treatments += [(new == MASK).sum(), ((new != MASK) & (new != labels[real])).sum(),
                       (new == labels[real]).sum()]
        first_positions.append(positions[0].tolist())
        if objective == "mlm_nsp":
            assert y["next_sentence"].shape == (50,)
        if objective == "span_sbo":
            sbo = y["sbo_labels"].numpy()
            assert np.all((sbo == labels) | (sbo == -1))
            assert x["span_left"].shape == (50, 20)
    assert abs(selected / eligible - 0.15) < 0.01
    shares = treatments / treatments.sum()
    assert abs(shares[0] - 0.8) < 0.03 and abs(shares[1] - 0.1) < 0.03
    # The same sequences in the second pass get new masks (up to the shuffle).
    assert len({tuple(p) for p in first_positions}) == len(first_positions)


def test_evaluation_pipeline_masks_are_fixed():
    arrays = _corpus_arrays(np.random.default_rng(4), n=120)
    dataset = _masked_batches("span_sbo", arrays, training=False, seed=1)
    first = [x["mask_positions"].numpy() for x, _ in dataset]
    second = [x["mask_positions"].numpy() for x, _ in dataset]
    assert len(first) == 3 and first[-1].shape[0] == 20  # one pass, last batch kept
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_default_max_predictions():
    assert default_max_predictions(128) == 20
    assert default_max_predictions(512) == 77


def test_wikitext_packs_into_full_sequences():
    path = shared_data_path("wikitext2", "valid.txt")
    documents = read_corpus(path)
    lines = [line for document in documents for line in document]
    assert 40 < len(documents) < 80  # one per "= Title =" article (43 at line starts)
    # Headings are gone, except a few that this copy's sentence splitting cut in two.
    assert sum("= =" in line for line in lines) < 0.002 * len(lines)
    assert not any("<unk>" in line or "@-@" in line or "&quot;" in line for line in lines)
