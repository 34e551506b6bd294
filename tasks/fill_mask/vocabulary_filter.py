"""Which vocabulary tokens a fill-mask model may propose, and the top-k of the rest.

Two flags per token of the vocabulary (`token_flags(tokenizer)`, for a tokenizer
of any kind):

- special: the tokenizer's special tokens ([PAD], [UNK], [CLS], [SEP], [MASK];
  RoBERTa's `<s>`, `<pad>`, `</s>`, `<unk>`, `<mask>`, ...) and BERT's
  `[unusedN]` placeholders. They are never proposed: none of them is text.
- continuation: a piece that only continues a word (WordPiece's `##` pieces;
  byte-level BPE's pieces without "Ġ", SentencePiece's without "▁":
  `SubwordTokenizer.word_start_pieces`). It is not proposed for a mask that
  starts a word (`SubwordTokenizer.word_start_context`: for WordPiece at the
  start of the text or after whitespace, punctuation or another mask; for
  BPE after whitespace; for SentencePiece at the start or after whitespace),
  unless continuations are allowed; a mask glued to the letters before it
  ("un[MASK]") may take one.

The probabilities reported are those of the softmax over the whole vocabulary
at the mask (what the model says), not renormalised over the allowed tokens,
so they equal Hugging Face's and those of one mask may sum to less than 1.
"""

import re

import numpy as np
from keras import ops

from nlpzoo.tasks.text.tokenizer import JOINER, RESERVED_TOKENS

_PLACEHOLDER = re.compile(r"\[unused\d+\]")


def special_token_flags(vocabulary):
    """bool [V]: True for the tokens never proposed (reserved tokens and `[unusedN]`).

    Examples:
    >>> special_token_flags(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "paris"]).tolist()
    [True, True, True, True, True, True, False]
    """
    return np.array([token in RESERVED_TOKENS or bool(_PLACEHOLDER.fullmatch(token))
                     for token in vocabulary], bool)


def continuation_token_flags(vocabulary):
    """bool [V]: True for the `##` pieces that continue a word.

    Examples:
    >>> continuation_token_flags(["[PAD]", "##s", "s", "#"]).tolist()
    [False, True, False, False]
    """
    return np.array([token.startswith(JOINER) and len(token) > len(JOINER)
                     for token in vocabulary], bool)


def token_flags(tokenizer):
    """(special, continuation): bool [V] each, for `tokenizer` (a `SubwordTokenizer`).

    Examples:
    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##able"])
    >>> [flags.tolist() for flags in token_flags(tokenizer)]
    [[True, True, True, True, True, False, False], [False, False, False, False, False, False, True]]
    """
    vocabulary = tokenizer.vocabulary
    reserved = set(tokenizer.special_tokens.values()) | set(tokenizer.split_tokens)
    special = np.array([token in reserved or bool(_PLACEHOLDER.fullmatch(token))
                        for token in vocabulary], bool)
    return special, ~np.asarray(tokenizer.word_start_pieces(), bool) & ~special


def allowed_tokens(special, continuation, starts_word, allow_continuations=False):
    """bool [B, M, V]: the tokens each mask may be filled with.

    Args:
        special: bool [V], `special_token_flags`.
        continuation: bool [V], `continuation_token_flags`.
        starts_word: bool [B, M], whether each mask starts a word.
        allow_continuations: propose `##` pieces for word-starting masks too.

    Examples:
    >>> special, continuation = np.array([True, False, False]), np.array([False, False, True])
    >>> allowed_tokens(special, continuation, np.array([[True, False]])).numpy().tolist()
    [[[False, True, False], [False, True, True]]]
    """
    starts_word = ops.cast(ops.convert_to_tensor(starts_word), "bool")[..., None]
    allowed = ops.logical_not(ops.convert_to_tensor(special))[None, None, :]
    if allow_continuations:  # [B, M, V]: every mask the same
        return ops.logical_and(allowed, ops.logical_or(starts_word, ops.logical_not(starts_word)))
    refused = ops.logical_and(starts_word, ops.convert_to_tensor(continuation)[None, None, :])
    return ops.logical_and(allowed, ops.logical_not(refused))


def proposable_k(k, special, continuation, allow_continuations=False):
    """`k`, at most the number of tokens a word-starting mask may take (so that every
    mask has `k` allowed tokens to propose).

    Examples:
    >>> special, continuation = np.array([True, False, False]), np.array([False, False, True])
    >>> proposable_k(5, special, continuation), proposable_k(5, special, continuation, True)
    (1, 2)
    """
    refused = special if allow_continuations else special | continuation
    return max(1, min(int(k), int(np.sum(~refused))))


def top_k_tokens(logits, allowed, k):
    """The `k` most probable allowed tokens of each mask, best first.

    Args:
        logits: float [B, M, V], the model's logits at the masks.
        allowed: bool [B, M, V] (`allowed_tokens`).
        k: how many tokens per mask: at most the allowed tokens of every mask
            (`proposable_k`), else refused ones fill the end of the list.

    Returns:
        `(probabilities, ids)`: float32 [B, M, k], the softmax over the whole
        vocabulary at those tokens, and int32 [B, M, k] their ids.

    Examples:
    >>> logits = np.log(np.array([[[0.5, 0.3, 0.2]]], "float32"))
    >>> probabilities, ids = top_k_tokens(logits, np.array([[[False, True, True]]]), k=2)
    >>> [round(float(p), 4) for p in probabilities.numpy().ravel()], ids.numpy().tolist()
    ([0.3, 0.2], [[[1, 2]]])
    """
    probabilities = ops.softmax(ops.cast(logits, "float32"), axis=-1)
    # Refused tokens score below every probability, so they come last (never, with k allowed).
    scores = ops.where(allowed, probabilities, -1.0)
    _, ids = ops.top_k(scores, k=k)
    return ops.take_along_axis(probabilities, ids, axis=-1), ops.cast(ids, "int32")
