"""The serving outputs of a fill-mask model, from raw text (see `tasks.modeling.serving`).

Input `text`, 1-D strings with one or more mask tokens (the tokenizer's: [MASK],
`<mask>`), packed as `[CLS] text [SEP]` (or the family's template) by the model's `FillMaskPreprocessor` (the same `encode` as
Python prediction and tools/predict.py). Outputs, per text and mask slot M
(the most masks of a text in the batch), best first: `token` (string
[B, M, k]), `token_id` (int32 [B, M, k]), `probability` (float32 [B, M, k]),
and `num_masks` (int32 [B]): the slots of each text that hold a mask (the
rest are padding; masks past `max_seq_length` are dropped). Special tokens
are never proposed, nor continuation pieces for a mask that starts a word unless the
model's task allows them (`vocabulary_filter`).
"""

import tensorflow as tf

from nlpzoo.tasks.fill_mask.preprocessor import model_inputs
from nlpzoo.tasks.fill_mask.vocabulary_filter import (
    allowed_tokens,
    proposable_k,
    token_flags,
    top_k_tokens,
)


def fill_mask_outputs(model, preprocessor, text, top_k, allow_continuations=False):
    """`token`, `token_id`, `probability` and `num_masks` of a `FillMaskModel`, from raw text."""
    vocabulary = preprocessor.vocabulary
    features = preprocessor(text)
    logits = model(model_inputs(features), training=False)
    special, continuation = token_flags(preprocessor.tokenizer())
    allowed = allowed_tokens(special, continuation, features["mask_starts_word"],
                             allow_continuations)
    k = proposable_k(top_k, special, continuation, allow_continuations)
    probabilities, ids = top_k_tokens(logits, allowed, k)
    return {"token": tf.gather(tf.constant(list(vocabulary)), ids), "token_id": ids,
            "probability": tf.cast(probabilities, tf.float32),
            "num_masks": features["num_masks_kept"]}
