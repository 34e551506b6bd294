"""The extractive question-answering model: an encoder and a start/end head."""

import keras

from nlpzoo.layers import Encoder, SpanEndpointHead, token_transform
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel

# The encoder's inputs and the positions an answer may take ([CLS] and the context).
QA_INPUTS = Encoder.INPUTS + ("answer_mask",)


@keras.saving.register_keras_serializable(package="nlpzoo")
class QuestionAnswerer(EncoderTaskModel):
    """`[CLS] question [SEP] context [SEP]` → start and end logits [B, 2, L] (float32).

    `answer_mask` [B, L] is 1 at the positions an answer may start or end:
    the context's tokens and [CLS], which stands for "no answer in this
    window" (SQuAD v2.0's unanswerable questions, and windows of a long
    context that do not hold the answer). The loss (`Task.loss`) is the mean
    of the start and the end cross-entropy. On an encoder with `pooler_norm=True`
    (ModernBERT) the token vectors go through the family's prediction head
    first (`layers.token_transform`), as `ModernBertForQuestionAnswering` does.

    Args:
        encoder: an `Encoder`.
        dropout: dropout on the token vectors before the head.

    Examples:
    >>> encoder = Encoder(vocabulary_size=100, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> QuestionAnswerer(encoder).output_shape
    (None, 2, None)
    """

    reads_pooled_output = False  # token vectors only: the pooler stays out of training

    def __init__(self, encoder, dropout=0.1, **kwargs):
        kwargs.setdefault("name", "question_answerer")
        head = SpanEndpointHead(dropout=dropout, name="span_endpoints")
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in QA_INPUTS}
        sequence = encoder({name: inputs[name] for name in Encoder.INPUTS})["sequence_output"]
        transform = token_transform(encoder)
        if transform is not None:
            sequence = transform(sequence)
        logits = head(sequence, allowed=inputs["answer_mask"])
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.dropout = float(dropout)

    def _task_config(self):
        return {"dropout": self.dropout}
