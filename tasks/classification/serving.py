"""The serving outputs of a classifier, from raw text (see `tasks.modeling.serving`).

Inputs `text` (and `text_pair` for a pair classifier), 1-D strings, packed
as `[CLS] text [SEP]` (or `[CLS] a [SEP] b [SEP]`) and truncated to
`max_seq_length` by the model's `TextPreprocessor`. Outputs `label` (string
[B]), `label_id` (int32 [B]) and `probabilities` (float32 [B, C], softmax of
the logits, columns in label-id order).
"""

from nlpzoo.tasks.modeling.class_outputs import label_outputs


def classification_outputs(model, preprocessor, labels, text, text_pair=None):
    """`label`, `label_id` and `probabilities` of a classifier, from raw text."""
    return label_outputs(model(preprocessor(text, text_pair), training=False), labels)
