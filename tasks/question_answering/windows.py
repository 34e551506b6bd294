"""Questions → model windows: `[CLS] question [SEP] context window [SEP]` (in the
tokenizer's `PackTemplate`: RoBERTa's `<s> question </s></s> context </s>`), with the
answer's token positions and every context token's character offsets.

A context longer than the model's window is read in overlapping windows, as
BERT's SQuAD recipe does: each window holds as many context tokens as fit
beside the question (cut to `max_query_length` tokens), and the next window
starts `doc_stride` tokens later, until one reaches the end of the context.
The label of a window is the token position of the answer's first and last
token, or 0 ([CLS], "no answer here") when the answer is not wholly inside
it (and for an unanswerable question).

The context is split into words as BERT splits raw text, each word keeping
its character offsets (`tasks.text.word_splitting.split_words`), then into
the tokenizer's pieces, each word as a word of running text. A token's
character span is its piece's place inside the word when the word's pieces
spell it out character for character (`SubwordTokenizer.piece_lengths`;
almost always: "Café" → `cafe` under lower-casing too, "Ġcaf" "Ã©" in
byte-level BPE); otherwise (an unknown token, a character the normalisation
changes, a character split across pieces) every piece of the word spans the
whole word. A decoded answer is the context from its first token's start to
its last token's end: always a piece of the context as written."""

import dataclasses

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.word_splitting import split_words

_TOKENIZE_BATCH = 8192


@dataclasses.dataclass(frozen=True, eq=False)
class QAWindow:
    """One model input of a question: its tokens, labels and the context tokens' offsets.

    `example_index` is the question's index in the list windowed; `example`
    the question itself. `context_start` is the position of the window's
    first context token; `char_starts` and `char_ends` (int arrays) give the
    character span of each context token in the window, in order. Labels:
    `start_position` and `end_position` (0 when the answer is not in the window).
    """

    example: object
    example_index: int
    token_ids: np.ndarray
    segment_ids: np.ndarray
    context_start: int
    char_starts: np.ndarray
    char_ends: np.ndarray
    start_position: int = 0
    end_position: int = 0

    @property
    def answer_mask(self):
        """1 at [CLS] and at the context's tokens, 0 elsewhere."""
        mask = np.zeros(len(self.token_ids), np.int32)
        mask[0] = 1
        mask[self.context_start:self.context_start + len(self.char_starts)] = 1
        return mask


def _piece_ids(tokenize, texts):
    """`tokenize`'s ids of each text, lists in order (in batches of `_TOKENIZE_BATCH`)."""
    result = []
    for first in range(0, len(texts), _TOKENIZE_BATCH):
        batch = texts[first:first + _TOKENIZE_BATCH]
        result.extend(tokenize(tf.constant(batch, tf.string)).to_list())
    return result


def _piece_spans(word_start, word_end, pieces, piece_lengths):
    """`(starts, ends)` of a word's pieces (see the module docstring)."""
    if len(pieces) == 1:
        return [word_start], [word_end]
    lengths = [int(piece_lengths[piece]) for piece in pieces]
    if sum(lengths) != word_end - word_start:
        return [word_start] * len(pieces), [word_end] * len(pieces)
    ends = list(word_start + np.cumsum(lengths))
    return [word_start] + ends[:-1], ends


@dataclasses.dataclass(frozen=True)
class TokenizedContext:
    """A context's tokens and each token's character span."""

    token_ids: np.ndarray
    char_starts: np.ndarray
    char_ends: np.ndarray


def tokenize_contexts(contexts, preprocessor):
    """`TokenizedContext` of each distinct context string: a dict by string.

    Examples:
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cafe", "open",
    ...                                  "##s", "."])
    >>> context = tokenize_contexts(["Café opens."], preprocessor)["Café opens."]
    >>> context.token_ids.tolist(), context.char_starts.tolist(), context.char_ends.tolist()
    ([4, 5, 6, 7], [0, 5, 9, 10], [4, 9, 10, 11])
    """
    tokenizer = preprocessor.tokenizer()
    distinct = list(dict.fromkeys(contexts))
    words = [split_words(context) for context in distinct]
    # Each word as a word of running text (a word with no piece is the unknown token).
    pieces = _piece_ids(tokenizer.word_pieces, [word for row in words for word, _, _ in row])
    piece_lengths = tokenizer.piece_lengths()
    result, position = {}, 0
    for context, row in zip(distinct, words):
        ids, starts, ends = [], [], []
        for _, word_start, word_end in row:
            word_pieces = pieces[position]
            position += 1
            piece_starts, piece_ends = _piece_spans(word_start, word_end, word_pieces,
                                                    piece_lengths)
            ids += word_pieces
            starts += piece_starts
            ends += piece_ends
        result[context] = TokenizedContext(np.asarray(ids, np.int32),
                                           np.asarray(starts, np.int32),
                                           np.asarray(ends, np.int32))
    return result


def window_starts(num_tokens, window_length, doc_stride):
    """Where each window of a context of `num_tokens` tokens starts.

    >>> window_starts(10, 4, 3), window_starts(3, 4, 3), window_starts(0, 4, 3)
    ([0, 3, 6], [0], [0])
    """
    starts = [0]
    while starts[-1] + window_length < num_tokens:
        starts.append(starts[-1] + min(doc_stride, window_length))
    return starts


def answer_token_span(context, answer):
    """`(first, last)` context token of a located answer, or None when no token is in it.

    >>> context = TokenizedContext(np.array([7, 8, 9]), np.array([0, 4, 8]), np.array([3, 7, 11]))
    >>> from nlpzoo.tasks.question_answering.readers import Answer
    >>> answer_token_span(context, Answer("bbb ccc", 4)), answer_token_span(context, Answer("b", 5))
    ((1, 2), (1, 1))
    """
    if answer is None or answer.start is None:
        return None
    inside = np.nonzero((context.char_ends > answer.start) &
                        (context.char_starts < answer.end))[0]
    if not len(inside):
        return None
    return int(inside[0]), int(inside[-1])


def make_windows(examples, preprocessor, max_query_length=64, doc_stride=128):
    """The `QAWindow`s of `examples` (`QAExample`s), in order; see the module docstring.

    Args:
        examples: the questions.
        preprocessor: the model's `TextPreprocessor` (vocabulary, casing and
            `max_seq_length`, the length of every window).
        max_query_length: the longest question, in tokens (longer ones are cut).
        doc_stride: tokens between the starts of two windows of a context.

    Raises:
        DataFormatError: (a ValueError naming the question's file and line) the windows
            leave no room for the context beside the question.

    Examples:
    >>> from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    >>> from nlpzoo.tasks.question_answering.readers import Answer, QAExample
    >>> preprocessor = TextPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c",
    ...                                  "who"], max_seq_length=8)
    >>> example = QAExample("who", "a b c a b c", (Answer("c", 10),))
    >>> [(w.token_ids.tolist(), w.start_position) for w in make_windows([example], preprocessor,
    ...                                                                 doc_stride=2)]
    [([2, 7, 3, 4, 5, 6, 4, 3], 0), ([2, 7, 3, 6, 4, 5, 6, 3], 6)]
    """
    examples = list(examples)
    tokenizer = preprocessor.tokenizer()
    template = tokenizer.template
    contexts = tokenize_contexts([example.context for example in examples], preprocessor)
    # A question is running text, as the serving graph reads it (`tokenize_flat`).
    questions = _piece_ids(tokenizer.tokenize_flat, [example.question for example in examples])
    max_length = preprocessor.max_seq_length
    windows = []
    for index, (example, question) in enumerate(zip(examples, questions)):
        question = question[:max_query_length]
        window_length = max_length - len(question) - template.special_tokens(pair=True)
        if window_length < 1:
            raise DataFormatError(
                f"{example.location}: max_seq_length={max_length} leaves no room for the "
                f"context beside a {len(question)}-token question; raise --max_seq_length or "
                "lower --max_query_length")
        context = contexts[example.context]
        answer = None if example.is_impossible else answer_token_span(
            context, example.located_answer())
        head = [tokenizer.cls_id] + question + [tokenizer.sep_id] * template.separators
        for start in window_starts(len(context.token_ids), window_length, doc_stride):
            end = min(start + window_length, len(context.token_ids))
            token_ids = np.asarray(head + context.token_ids[start:end].tolist()
                                   + [tokenizer.sep_id], np.int32)
            segment_ids = np.zeros(len(token_ids), np.int32)
            segment_ids[len(head):] = template.second_segment_id
            positions = (0, 0)
            if answer is not None and start <= answer[0] and answer[1] < end:
                positions = (answer[0] - start + len(head), answer[1] - start + len(head))
            windows.append(QAWindow(example, index, token_ids, segment_ids, len(head),
                                    context.char_starts[start:end],
                                    context.char_ends[start:end], *positions))
    return windows
