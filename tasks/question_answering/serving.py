"""The serving outputs of a question-answering model, from raw questions and contexts.

Inputs `question` and `context`, 1-D strings. Inside the graph, as
`tools/predict.py` does in Python (`tasks.question_answering.windows`): the
context is split into words with their character offsets, the words into
the tokenizer's pieces, each token given its character span; the context is read in
windows of `[CLS] question [SEP] context window [SEP]` (the tokenizer's
`PackTemplate`) that start `doc_stride`
tokens apart. The best answer over all windows is the start and end token
with the highest summed logits, end >= start, at most `max_answer_length`
tokens (every pair is scored: `tools/predict.py` looks at the `n_best_size`
best starts and ends of each window, which holds the best pair unless it
starts or ends outside both lists). Outputs: `answer` (string [B], "" for no
answer), `start_char`, `end_char` (int32 [B], the answer is
`context[start_char:end_char]` in code points; -1 for no answer) and `score`
(float32 [B], the product of the start and end probabilities in its window).
"""

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.ragged_rows import (
    concat_rows,
    ones_per_row,
    row_prefix,
    row_slices,
    row_sums,
    value_rowids,
)
from nlpzoo.tasks.text.word_splitting import split_texts_with_offsets


def _context_tokens(preprocessor, context):
    """Context strings [B] → token ids, character starts and ends, ragged [B, (T)]."""
    tokenizer = preprocessor.tokenizer()
    words, word_starts, word_ends = split_texts_with_offsets(context)
    pieces = tokenizer.word_pieces(words.flat_values)  # [N words, (P)]
    lengths = tf.gather(tf.constant(tokenizer.piece_lengths()), pieces.flat_values)
    lengths = pieces.with_flat_values(lengths)
    piece_word = value_rowids(pieces)
    word_start = tf.gather(word_starts.flat_values, piece_word)
    word_end = tf.gather(word_ends.flat_values, piece_word)
    spelled = tf.equal(row_sums(lengths), word_ends.flat_values - word_starts.flat_values)
    ends_inside = word_start + tf.cumsum(lengths, axis=1).flat_values
    exact = tf.gather(spelled, piece_word)
    starts = tf.where(exact, ends_inside - lengths.flat_values, word_start)
    ends = tf.where(exact, ends_inside, word_end)
    # [N words, (P)] → [B, (T)]: the pieces of each text's words, in order.
    splits = tf.gather(pieces.row_splits, words.row_splits)

    def per_text(values):
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)

    return per_text(pieces.flat_values), per_text(starts), per_text(ends)


def _at(values, offsets, valid):
    """`values[b][offsets[b]]` of ragged [B, (T)] values where `valid`, else -1."""
    padded = tf.concat([values.flat_values, [-1]], axis=0)
    index = tf.where(valid, tf.cast(values.row_starts(), tf.int32) + offsets,
                     tf.size(values.flat_values))
    return tf.gather(padded, index)


def question_answering_outputs(model, preprocessor, question, context, max_query_length=64,
                               doc_stride=128, max_answer_length=30, allow_no_answer=False,
                               no_answer_threshold=0.0):
    """`answer`, `start_char`, `end_char` and `score` of each (question, context)."""
    tokenizer = preprocessor.tokenizer()
    max_length = preprocessor.max_seq_length
    batch = tf.shape(question)[0]
    question_ids = tokenizer.tokenize_flat(question)
    template = tokenizer.template
    special = template.special_tokens(pair=True)
    question_ids = row_prefix(question_ids, tf.minimum(
        tf.cast(question_ids.row_lengths(), tf.int32),
        min(max_query_length, max_length - special - 1)))
    context_ids, char_starts, char_ends = _context_tokens(preprocessor, context)
    question_length = tf.cast(question_ids.row_lengths(), tf.int32)
    context_length = tf.cast(context_ids.row_lengths(), tf.int32)
    window = max_length - question_length - special  # [B] context tokens per window, >= 1
    step = tf.minimum(doc_stride, window)
    windows = 1 + tf.maximum(context_length - window + step - 1, 0) // step  # [B]
    index = tf.ragged.range(windows)
    rows = tf.cast(value_rowids(index), tf.int32)  # [N] each window's question
    begin = tf.cast(index.flat_values, tf.int32) * tf.gather(step, rows)
    end = tf.minimum(begin + tf.gather(window, rows), tf.gather(context_length, rows))
    count = tf.shape(rows)[0]
    questions = row_slices(question_ids, 0, tf.gather(question_length, rows), rows)
    contexts = row_slices(context_ids, begin, end, rows)

    def filled(value, like):
        return like.with_flat_values(tf.fill(tf.shape(like.flat_values), value))

    cls, sep = ones_per_row(tokenizer.cls_id, count), ones_per_row(tokenizer.sep_id, count)
    separators = template.separators
    token_ids = concat_rows([cls, questions] + [sep] * separators + [contexts, sep])
    zero, one = ones_per_row(0, count), ones_per_row(1, count)
    second = template.second_segment_id
    features = preprocessor.pad({
        "token_ids": token_ids,
        "segment_ids": concat_rows([zero, filled(0, questions)] + [zero] * separators
                                   + [filled(second, contexts), ones_per_row(second, count)]),
        "padding_mask": tf.ones_like(token_ids),
        "answer_mask": concat_rows([one, filled(0, questions)] + [zero] * separators
                                   + [filled(1, contexts), zero]),
    })
    logits = tf.cast(model(features, training=False), tf.float32)  # [N, 2, L]
    start_logits, end_logits = logits[:, 0], logits[:, 1]
    length = tf.shape(start_logits)[1]
    positions = tf.range(length)
    context_first = tf.gather(question_length, rows) + 1 + separators  # [N]
    in_context = ((positions[None, :] >= context_first[:, None]) &
                  (positions[None, :] < (context_first + end - begin)[:, None]))
    pair_ok = (in_context[:, :, None] & in_context[:, None, :] &
               (positions[None, :, None] <= positions[None, None, :]) &
               (positions[None, None, :] < positions[None, :, None] + max_answer_length))
    scores = tf.where(pair_ok, start_logits[:, :, None] + end_logits[:, None, :], -np.inf)
    flat = tf.reshape(scores, [count, -1])
    best_pair = tf.argmax(flat, axis=1, output_type=tf.int32)
    best_score = tf.reduce_max(flat, axis=1)  # [N]; -inf for a window with no context
    first, last = best_pair // length, best_pair % length
    null = start_logits[:, 0] + end_logits[:, 0]
    # The best window of each question (the first of equals), and its lowest no-answer score.
    question_best = tf.math.unsorted_segment_max(best_score, rows, batch)
    candidates = tf.where(tf.equal(best_score, tf.gather(question_best, rows)),
                          tf.range(count), count)
    chosen = tf.math.unsorted_segment_min(candidates, rows, batch)  # [B]
    chosen = tf.minimum(chosen, count - 1)
    question_null = tf.math.unsorted_segment_min(null, rows, batch)
    token_first = tf.gather(begin, chosen) + tf.gather(first, chosen) - tf.gather(
        context_first, chosen)
    token_last = tf.gather(begin, chosen) + tf.gather(last, chosen) - tf.gather(
        context_first, chosen)
    answered = tf.math.is_finite(question_best) & (context_length > 0)
    start_char = _at(char_starts, token_first, answered)
    end_char = _at(char_ends, token_last, answered)
    log_p_start = tf.nn.log_softmax(tf.gather(start_logits, chosen))
    log_p_end = tf.nn.log_softmax(tf.gather(end_logits, chosen))
    probability = tf.exp(tf.gather(log_p_start, tf.gather(first, chosen), batch_dims=1)
                         + tf.gather(log_p_end, tf.gather(last, chosen), batch_dims=1))
    if allow_no_answer:
        answered &= ~(question_null - question_best > no_answer_threshold)
    start_char = tf.where(answered, start_char, -1)
    end_char = tf.where(answered, end_char, -1)
    # Offsets count the characters of the text as split (invalid UTF-8 replaced by U+FFFD).
    text = tf.strings.unicode_transcode(context, "UTF-8", "UTF-8", errors="replace",
                                        replacement_char=0xFFFD)
    answer = tf.where(answered, tf.strings.substr(
        text, tf.maximum(start_char, 0), tf.maximum(end_char - start_char, 0),
        unit="UTF8_CHAR"), "")
    return {"answer": answer, "start_char": start_char, "end_char": end_char,
            "score": tf.where(answered, probability, 0.0)}

