"""Questions → windows: every context token in a window, labels on the answer's tokens,
character offsets exact for accents, CJK and emoji (checked against brute force)."""

import random
import unicodedata

import numpy as np
import pytest

from nlpzoo.tasks.question_answering.readers import Answer, QAExample
from nlpzoo.tasks.question_answering.windows import (
    make_windows,
    tokenize_contexts,
    window_starts,
)
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.text.word_splitting import split_words

CONTEXTS = [
    "Café Müller opened in 1912, near the Élysée; naïve visitors ordered crème brûlée.",
    "东京 is Tokyo: 東京都庁 stands in Shinjuku 🏙️ (since 1991).",
    "Emoji 😀😀 and flags 🇫🇷 sit beside words, e.g. résumé—CV.",
    "Decomposed e\u0301 accents and the Ｆｕｌｌｗｉｄｔｈ form.",
    "Numbers like 3.14159 and 1,000,000 split at their punctuation.",
]


def _strip_accents_lower(text):
    text = unicodedata.normalize("NFD", text.lower())
    return "".join(c for c in text if unicodedata.category(c) != "Mn")


@pytest.fixture(scope="module")
def preprocessor():
    # Characters alone and as continuations, and a few longer pieces: most words fall
    # into several pieces, some of more than one character.
    characters = sorted({c for text in CONTEXTS + ["who what where when"]
                         for word, _, _ in split_words(_strip_accents_lower(text)) for c in word})
    tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + characters
              + ["##" + c for c in characters] + ["ca", "##fe", "mu", "##ller", "tok", "##yo",
                                                  "19", "##12", "##ed", "who"])
    return TextPreprocessor(tokens, lowercase=True, max_seq_length=24)


def test_tokens_span_their_words_and_spell_them_out(preprocessor):
    contexts = tokenize_contexts(CONTEXTS, preprocessor)
    vocabulary = preprocessor.vocabulary
    for text in CONTEXTS:
        context = contexts[text]
        starts, ends = context.char_starts.tolist(), context.char_ends.tolist()
        assert starts == sorted(starts) and all(s < e for s, e in zip(starts, ends))
        words = split_words(text)
        # Every word's pieces run from its first to its last character, in order.
        for _, word_start, word_end in words:
            inside = [i for i, (s, e) in enumerate(zip(starts, ends))
                      if word_start <= s and e <= word_end]
            assert inside and starts[inside[0]] == word_start and ends[inside[-1]] == word_end
        for token, start, end in zip(context.token_ids.tolist(), starts, ends):
            piece = vocabulary[token].removeprefix("##")
            word = next(w for w, s, e in words if s <= start and end <= e)
            if end - start < len(word) or len(piece) == len(word):
                # A piece of its own span: the text it covers is the piece.
                assert _strip_accents_lower(text[start:end]) == piece


def test_window_starts_cover_the_context():
    for tokens in range(0, 40):
        for length in (1, 3, 8):
            for stride in (1, 2, 5, 9):
                starts = window_starts(tokens, length, stride)
                assert starts[0] == 0 and starts[-1] + length >= tokens
                assert all(b - a == min(stride, length) for a, b in zip(starts, starts[1:]))
                assert len(starts) == 1 or starts[-2] + length < tokens  # none too many


@pytest.mark.parametrize("max_seq_length, doc_stride", [(24, 4), (24, 32), (64, 16)])
def test_every_word_span_answer_is_labelled_and_maps_back_exactly(preprocessor, max_seq_length,
                                                                   doc_stride):
    preprocessor = TextPreprocessor(preprocessor.vocabulary, max_seq_length=max_seq_length)
    rng = random.Random(7)
    examples = []
    for text in CONTEXTS:
        words = split_words(text)
        for _ in range(12):
            first = rng.randrange(len(words))
            last = min(len(words) - 1, first + rng.randrange(4))
            start, end = words[first][1], words[last][2]
            examples.append(QAExample("who what", text, (Answer(text[start:end], start),)))
    windows = make_windows(examples, preprocessor, max_query_length=8, doc_stride=doc_stride)
    contexts = tokenize_contexts(CONTEXTS, preprocessor)
    for index, example in enumerate(examples):
        own = [w for w in windows if w.example_index == index]
        answer = example.answers[0]
        holding = [w for w in own if w.start_position]
        # Every context token is in some window; windows are the plan of window_starts.
        covered = sorted(set().union(*(set(zip(w.char_starts.tolist(), w.char_ends.tolist()))
                                       for w in own)))
        context = contexts[example.context]
        assert covered == sorted(set(zip(context.char_starts.tolist(),
                                         context.char_ends.tolist())))
        for window in own:
            assert len(window.token_ids) <= max_seq_length
            assert window.token_ids[0] == preprocessor.tokenizer().cls_id
            assert window.segment_ids[window.context_start - 1] == 0
            assert (window.segment_ids[window.context_start:] == 1).all()
            mask = window.answer_mask
            assert mask[0] == 1 and mask.sum() == 1 + len(window.char_starts)
        for window in holding:  # the answer's tokens, mapped back, are the answer
            first = window.start_position - window.context_start
            last = window.end_position - window.context_start
            assert window.char_starts[first] == answer.start
            assert window.char_ends[last] == answer.end
        # The answer is labelled in a window whenever one holds all its tokens.
        fits = [w for w in own if w.char_starts[0] <= answer.start
                and answer.end <= w.char_ends[-1]]
        assert [id(w) for w in holding] == [id(w) for w in fits]
        for window in own:
            if window not in holding:
                assert (window.start_position, window.end_position) == (0, 0)


def test_an_unanswerable_question_labels_every_window_cls(preprocessor):
    example = QAExample("who", CONTEXTS[0], is_impossible=True)
    windows = make_windows([example], preprocessor, doc_stride=4)
    assert len(windows) > 1
    assert {(w.start_position, w.end_position) for w in windows} == {(0, 0)}


def test_long_questions_are_cut_and_a_window_too_short_is_an_error(preprocessor):
    long_question = QAExample(" ".join(["who what where when"] * 10), CONTEXTS[1],
                              (Answer("Tokyo", CONTEXTS[1].index("Tokyo")),))
    windows = make_windows([long_question], preprocessor, max_query_length=5, doc_stride=8)
    assert all(w.context_start == 1 + 5 + 1 for w in windows)
    with pytest.raises(ValueError, match="leaves no room for the context"):
        make_windows([long_question], preprocessor, max_query_length=64)


def test_labels_point_at_the_answer_tokens():
    preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "who", "the", "denver",
                                     "bro", "##ncos", "won"], max_seq_length=32)
    text = "the Denver Broncos won"
    [window] = make_windows([QAExample("who", text, (Answer("Denver Broncos", 4),))],
                            preprocessor)
    assert window.token_ids.tolist() == [2, 4, 3, 5, 6, 7, 8, 9, 3]
    assert (window.start_position, window.end_position) == (4, 6)
    assert window.char_starts.tolist() == [0, 4, 11, 14, 19]
    assert window.char_ends.tolist() == [3, 10, 14, 18, 22]
    assert np.array_equal(window.answer_mask, [1, 0, 0, 1, 1, 1, 1, 1, 0])


@pytest.mark.parametrize("fixture, normalize", [
    ("roberta_bpe/tokenizer_json", lambda text: text),  # bytes: every character as written
    ("xlm_roberta_spm/tokenizer_json", lambda text: unicodedata.normalize("NFKC", text)),
])
def test_byte_pair_and_sentencepiece_pieces_get_their_own_characters(fixture, normalize):
    """A piece's span spells the piece (its "Ġ"/"▁" left out) whenever the word's pieces add
    up to the word, as every ASCII word's without an unknown piece do, so answers are not rounded out to words; a
    word with a character split into bytes or unknown spans the word with each piece."""
    from nlpzoo.zoo import load_tokenizer
    from tests.helpers.paths import ROOT

    tokenizer = load_tokenizer(f"{ROOT}/tests/fixtures/tokenizers/{fixture}")
    preprocessor = TextPreprocessor(tokenizer, max_seq_length=64)
    contexts = tokenize_contexts(CONTEXTS, preprocessor)
    ascii_words = 0
    for text in CONTEXTS:
        context = contexts[text]
        spans = list(zip(context.token_ids.tolist(), context.char_starts.tolist(),
                         context.char_ends.tolist()))
        words = split_words(text)
        counts = [len(pieces) for pieces in
                  tokenizer.word_pieces([word for word, _, _ in words]).to_list()]
        assert sum(counts) == len(spans)
        ends = np.cumsum(counts)
        for (_, word_start, word_end), count, end in zip(words, counts, ends):
            inside = spans[end - count:end]  # the word's pieces
            assert inside[0][1] == word_start and inside[-1][2] == word_end
            if len(inside) == 1:
                continue
            # Each piece after the one before (or, the fallback, each the whole word).
            exact = all(a[2] == b[1] for a, b in zip(inside, inside[1:]))
            known = tokenizer.unk_id not in [token for token, _, _ in inside]
            if text[word_start:word_end].isascii() and known:
                ascii_words += 1
                assert exact, inside
            if exact:
                for token, s, e in inside:
                    assert normalize(text[s:e]) == tokenizer.piece_text(
                        tokenizer.vocabulary[token]), (text, s, e)
            else:
                assert all((s, e) == (word_start, word_end) for _, s, e in inside), inside
    assert ascii_words > 10


@pytest.mark.parametrize("fixture, separators, context_segment", [
    ("roberta_bpe/tokenizer_json", 2, 0),  # <s> q </s></s> c </s>, one segment
    ("albert_spm/legacy", 1, 1),           # [CLS] q [SEP] c [SEP]
])
def test_windows_follow_the_family_template(fixture, separators, context_segment):
    from nlpzoo.zoo import load_tokenizer
    from tests.helpers.paths import ROOT

    tokenizer = load_tokenizer(f"{ROOT}/tests/fixtures/tokenizers/{fixture}")
    preprocessor = TextPreprocessor(tokenizer, max_seq_length=24)
    example = QAExample("Who opened it?", CONTEXTS[0], (Answer("Café Müller", 0),))
    windows = make_windows([example], preprocessor, doc_stride=4)
    question = tokenizer.tokenize_flat([example.question]).to_list()[0]
    assert len(windows) > 1
    for window in windows:
        ids = window.token_ids.tolist()
        assert ids[:1 + len(question) + separators] == (
            [tokenizer.cls_id] + question + [tokenizer.sep_id] * separators)
        assert window.context_start == 1 + len(question) + separators
        assert ids[-1] == tokenizer.sep_id and len(ids) <= 24
        assert (window.segment_ids[:window.context_start] == 0).all()
        assert (window.segment_ids[window.context_start:] == context_segment).all()
