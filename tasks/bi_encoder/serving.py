"""The serving outputs of a bi-encoder, from raw text (see `tasks.modeling.serving`).

Inputs `text` and `text_pair`, 1-D strings; each is packed alone as
`[CLS] text [SEP]` and truncated to `max_seq_length` by the model's
`TextPreprocessor`, and padded to its own bucket length. Outputs:
`embedding` and `pair_embedding` (float32 [B, H], the pooled sentence
vectors of `text` and `text_pair`), `cosine` (float32 [B], their cosine
similarity) and, for the softmax objective, `label` (string [B]),
`label_id` (int32 [B]) and `probabilities` (float32 [B, C], columns in
label-id order).
"""

from keras import ops

from nlpzoo.tasks.bi_encoder.model import pair_inputs
from nlpzoo.tasks.modeling.class_outputs import label_outputs


def bi_encoder_outputs(model, preprocessor, labels, text, text_pair):
    """The outputs above, from raw text pairs."""
    features = {**preprocessor(text), **pair_inputs(preprocessor(text_pair))}
    outputs = model.pair_outputs(features, training=False)
    served = {name: ops.cast(outputs[name], "float32")
              for name in ("embedding", "pair_embedding", "cosine")}
    if "logits" in outputs:
        served.update(label_outputs(outputs["logits"], labels))
    return served
