"""The serving outputs of a classifier, from raw text (see `tasks.modeling.serving`).

Inputs `text` (and `text_pair` for a pair classifier), 1-D strings, packed
as `[CLS] text [SEP]` (or `[CLS] a [SEP] b [SEP]`) and truncated to
`max_seq_length` by the model's `TextPreprocessor`. Outputs `label` (string
[B]), `label_id` (int32 [B]) and `probabilities` (float32 [B, C], softmax of
the logits, columns in label-id order); a regression classifier's: `score`
(float32 [B]).
"""

from keras import ops

from nlpzoo.tasks.modeling.class_outputs import label_outputs


def classification_outputs(model, preprocessor, labels, text, text_pair=None):
    """`label`, `label_id` and `probabilities` of a classifier, from raw text."""
    return label_outputs(model(preprocessor(text, text_pair), training=False), labels)


def score_outputs(model, preprocessor, text, text_pair=None):
    """`score` (float32 [B]) of a regression classifier, from raw text."""
    scores = model(preprocessor(text, text_pair), training=False)
    return {"score": ops.reshape(ops.cast(scores, "float32"), (-1,))}
