"""The classification model: an encoder, its pooled output, a classification head."""

import keras

from nlpzoo.layers import ClassificationHead, Encoder, SequencePooling
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel
from nlpzoo.tasks.modeling.pooling_flag import POOLINGS

CLASSIFIER_INPUTS = Encoder.INPUTS


@keras.saving.register_keras_serializable(package="nlpzoo")
class Classifier(EncoderTaskModel):
    """Encoder inputs → one vector per text → `num_classes` float32 logits (or, with
    `num_classes=1`, one float32 score: the regression objective's linear unit).

    The vector is the encoder's `pooled_output` (`pooling="pooler"`, BERT's
    tanh(dense([CLS]))), or a `SequencePooling` of its `sequence_output`:
    the [CLS] vector alone (`"cls"`), or the mean (`"mean"`) or maximum
    (`"max"`) over real tokens. Checkpoints trained for mean pooling
    (sentence-transformers, e.g. all-MiniLM-L6-v2) want `"mean"`, above all
    when the encoder is frozen.

    A functional model that is also an `EncoderTaskModel`, so it can carry
    its labels, vocabulary and task options in its `.keras` file
    (`attach_metadata`). `.keras` files of the
    earlier plain functional classifier still load, as `keras.Model`s.

    Args:
        encoder: an `Encoder` (or a functional encoder with inputs
            `Encoder.INPUTS` and a `pooled_output` output).
        num_classes: number of classes (2 or more), or 1 for one score per
            text (regression: the head's single linear unit).
        dropout: dropout before the logits.
        head_hidden_dim: width of an optional extra dense + tanh layer.
        pooling: "pooler" (the default), "cls", "mean" or "max".

    Examples:
    >>> encoder = Encoder(vocabulary_size=100, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> Classifier(encoder, num_classes=3).output_shape
    (None, 3)
    >>> Classifier(encoder, num_classes=1).output_shape  # a score
    (None, 1)
    """

    def __init__(self, encoder, num_classes, dropout=0.1, head_hidden_dim=None,
                 pooling="pooler", **kwargs):
        if num_classes < 1:
            raise ValueError(f"num_classes must be at least 1 (1: a score), got {num_classes}")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        kwargs.setdefault("name", "classifier")

        # === Layers ===
        head = ClassificationHead(
            num_classes,
            dropout=dropout,
            hidden_dim=head_hidden_dim,
            name="classification_head",
        )

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in CLASSIFIER_INPUTS}
        outputs = encoder(inputs)
        if pooling == "pooler":
            vector = outputs["pooled_output"]
        else:
            vector = SequencePooling(pooling, name="pooling")(
                outputs["sequence_output"], padding_mask=inputs["padding_mask"])
        logits = head(vector)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.head_hidden_dim = None if head_hidden_dim is None else int(head_hidden_dim)
        self.pooling = pooling

    def _task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "head_hidden_dim": self.head_hidden_dim,
            "pooling": self.pooling,
        }
