"""A two-layer feed-forward network from span vectors to entity-type logits."""

from nlpzoo.layers.classification_head import ClassificationHead
from nlpzoo.layers.serialization import register


@register
class SpanClassifier(ClassificationHead):
    """Scores each span as NONE or one of the entity types.

    A `ClassificationHead` with two hidden dense layers of width `hidden_dim`
    and `activation`, each followed by dropout (the span vectors themselves
    get none), then a dense layer to `num_classes` logits. Label 0 is NONE
    (not an entity); labels 1.. are the entity types. The logits are float32
    under every dtype policy, so the softmax and loss stay accurate under
    mixed precision.

    Args:
        num_classes: number of entity types + 1 (index 0 is NONE).
        hidden_dim: width of the two hidden layers.
        dropout: dropout rate after each hidden layer.
        activation: activation of the hidden layers (`"relu"` or `"gelu"`).
        initializer_range: stddev of the truncated-normal initialiser.

    Call arguments:
        inputs: [..., D] span vectors, e.g. [B, S, D] from
            `SpanRepresentation`.

    Returns:
        [..., num_classes] float32 logits.

    Examples:
    >>> import keras
    >>> import numpy as np
    >>> classifier = SpanClassifier(num_classes=5, hidden_dim=16, dropout=0.1)
    >>> logits = classifier(np.random.rand(2, 9, 24).astype("float32"))
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((2, 9, 5), 'float32')
    """

    def __init__(
        self,
        num_classes,
        hidden_dim,
        dropout=0.1,
        activation="relu",
        initializer_range=0.02,
        **kwargs,
    ):
        if num_classes < 2:
            raise ValueError(
                f"num_classes counts NONE plus at least one type, got {num_classes}"
            )
        super().__init__(
            num_classes=num_classes,
            dropout=dropout,
            hidden_dim=hidden_dim,
            num_hidden_layers=2,
            activation=activation,
            input_dropout=False,
            initializer_range=initializer_range,
            **kwargs,
        )

    def get_config(self):
        config = super().get_config()
        # The fixed choices are not arguments here.
        for key in ("num_hidden_layers", "input_dropout"):
            del config[key]
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "num_labels" in config:  # saved before the name was `num_classes`
            config["num_classes"] = config.pop("num_labels")
        return cls(**config)
