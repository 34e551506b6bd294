"""Fill-mask predictions: the top-k tokens of every mask, and the text with the best filled in."""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.fill_mask.preprocessor import model_inputs
from nlpzoo.tasks.fill_mask.vocabulary_filter import (
    allowed_tokens,
    proposable_k,
    token_flags,
    top_k_tokens,
)
from nlpzoo.tasks.text.tokenizer import JOINER, MASK


def _where(example):
    return f"{example.source}:{example.line}" if example.source else "text"


def require_masks(examples, mask=MASK):
    """Raises `ValueError` naming the first text without a mask token (`mask`).

    >>> from nlpzoo.tasks.text.sentences import Sentence
    >>> require_masks([Sentence("A [MASK] day", "in.txt", 1), Sentence("No mask", "in.txt", 2)])
    Traceback (most recent call last):
    ...
    ValueError: in.txt:2: no [MASK] in the text; put [MASK] where a word is to be predicted: 'No mask'
    """
    for example in examples:
        if mask not in example.text:
            raise ValueError(f"{_where(example)}: no {mask} in the text; put {mask} where a "
                             f"word is to be predicted: {example.text[:60]!r}")


def check_kept_masks(examples, num_masks, kept_masks, max_seq_length, mask=MASK):
    """Raises `ValueError` naming the first text whose masks fall past `max_seq_length`."""
    for example, given, kept in zip(examples, num_masks, kept_masks):
        if kept < given:
            raise ValueError(f"{_where(example)}: {given - kept} of its {given} {mask} tokens "
                             f"lie past max_seq_length={max_seq_length} word pieces")


def predict_top_k(model, preprocessor, examples, k, allow_continuations=False, batch_size=32):
    """The `k` best tokens of every mask of every example: a list (one per example) of
    `(ids [M, k], probabilities [M, k], tokens, sequence)`, numpy arrays, the tokens'
    strings (M lists of k), M its masks in text order, and the text with each mask's best
    token written in (`filled_text` with the tokenizer's `piece_text`).

    Raises:
        ValueError: an example has no mask, or masks past `max_seq_length`.
    """
    mask = preprocessor.mask_token
    require_masks(examples, mask)
    vocabulary = preprocessor.vocabulary
    tokenizer = preprocessor.tokenizer()
    special, continuation = token_flags(tokenizer)
    k = proposable_k(k, special, continuation, allow_continuations)
    results = []
    for start in range(0, len(examples), batch_size):
        batch = examples[start:start + batch_size]
        features = preprocessor(tf.constant([example.text for example in batch]))
        kept = features["num_masks_kept"].numpy()
        check_kept_masks(batch, features["num_masks"].numpy(), kept, preprocessor.max_seq_length,
                         mask)
        logits = model.predict_on_batch(model_inputs(features))
        allowed = allowed_tokens(special, continuation, features["mask_starts_word"],
                                 allow_continuations)
        probabilities, ids = top_k_tokens(logits, allowed, k)
        probabilities, ids = np.asarray(probabilities), np.asarray(ids)
        for row, count in enumerate(kept):
            tokens = [[vocabulary[i] for i in mask] for mask in ids[row, :count].tolist()]
            sequence = filled_text(batch[row].text, [mask[0] for mask in tokens], mask,
                                   tokenizer.piece_text)
            results.append((ids[row, :count], probabilities[row, :count], tokens, sequence))
    return results


def _wordpiece_text(token):
    return token[len(JOINER):] if token.startswith(JOINER) else token


def filled_text(text, tokens, mask=MASK, piece_text=_wordpiece_text):
    """`text` with its masks (`mask`) replaced by `tokens` in order, each written as
    `piece_text` gives it (the tokenizer's `piece_text`; by default a `##` piece joins
    the word).

    Examples:
    >>> filled_text("Paris is [MASK] [MASK] .", ["a", "city"])
    'Paris is a city .'
    >>> filled_text("un[MASK] day", ["##able"])
    'unable day'
    """
    parts = text.split(mask)
    pieces = [parts[0]]
    for token, after in zip(tokens, parts[1:]):
        pieces += [piece_text(token), after]
    return "".join(pieces)


def prediction_record(example, ids, probabilities, tokens, sequence=None):
    """One text's result: `text`, `sequence` (the text with each mask's best token) and
    `masks`, per mask its tokens best first (`token`, `token_id`, `probability`).

    `ids`, `probabilities`, `tokens` and `sequence` are one element of
    `predict_top_k` (`sequence` None: the best tokens put in with `filled_text`'s
    WordPiece defaults).

    Examples:
    >>> from nlpzoo.tasks.text.sentences import Sentence
    >>> record = prediction_record(Sentence("It is [MASK] ."), [[7, 9]], [[0.5, 0.25]],
    ...                            [["red", "blue"]])
    >>> record["sequence"], record["masks"][0][1]
    ('It is red .', {'token': 'blue', 'token_id': 9, 'probability': 0.25})
    """
    masks = [[{"token": token, "token_id": int(i), "probability": float(p)}
              for i, p, token in zip(mask_ids, mask_probabilities, mask_tokens)]
             for mask_ids, mask_probabilities, mask_tokens in zip(ids, probabilities, tokens)]
    return {"text": example.text,
            "sequence": (sequence if sequence is not None else
                         filled_text(example.text, [mask[0]["token"] for mask in masks])),
            "masks": masks}
