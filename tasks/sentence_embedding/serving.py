"""The serving output of a sentence embedding model, from raw text (see `tasks.modeling.serving`).

Input `text`, 1-D strings, packed as `[CLS] text [SEP]` and truncated to
`max_seq_length` by the model's `TextPreprocessor` (the same `encode` as
`tools/embed.py` and `tools/predict.py`). Output `embedding` (float32
[B, hidden_dim]), in input order; unit L2 norm when the model normalises.
"""

from keras import ops


def embedding_outputs(model, preprocessor, text):
    """`embedding` of a `SentenceEmbedder`, from raw text."""
    return {"embedding": ops.cast(model(preprocessor(text), training=False), "float32")}
