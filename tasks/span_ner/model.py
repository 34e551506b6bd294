"""The span NER model: encoder → word vectors → every span of ≤ L words → type or NONE."""

import keras
from keras import ops

from nlpzoo.layers import Encoder, PositionGather, SpanClassifier, SpanGrid, SpanRepresentation
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel
from nlpzoo.tasks.modeling.losses import masked_sparse_cross_entropy
from nlpzoo.tasks.words.shapes import CASING_INPUT, concat_word_shape_embedding

SPAN_INPUTS = Encoder.INPUTS + ("word_starts", "word_mask")


@keras.saving.register_keras_serializable(package="nlpzoo")
class SpanNER(EncoderTaskModel):
    """Classifies every span of up to `max_span_width` words into an entity type or NONE.

    Word vectors are the encoder outputs at each word's first subword; spans
    are laid out as a [words, max_span_width] grid (`SpanGrid`), represented
    by `SpanRepresentation` (boundary vectors, pooled content, a width
    embedding) and scored by `SpanClassifier`. Memory grows with T·L.

    `model(inputs)` returns float32 logits [batch, T·L, num_classes] (label 0 is
    NONE); `predict_on_batch` returns the probabilities. Labels are [batch, T, L]
    span label ids, -1 where the span runs past the sentence or is padding.
    The loss is cross-entropy averaged over valid spans, NONE spans weighted
    by `none_weight` (below 1 to favour recall on rare entities).

    With `casing_dim > 0` the model takes one more input, `word_shapes`
    [batch, words] (`tasks.words.shapes`), and each word's vector carries a
    learned embedding of its capitalisation into the span representation.

    Args:
        encoder: an `Encoder` (or a functional encoder with inputs
            `Encoder.INPUTS` and a `sequence_output` output).
        num_classes: entity types + 1 (NONE).
        max_span_width: the longest span, in words.
        combination: boundary terms for `SpanRepresentation` ("x,y", ...).
        pooling: "attention", "mean" or None.
        width_embedding_dim: size of the span-width embedding (0: none).
        hidden_dim: width of the classifier's hidden layers.
        dropout: dropout in the classifier.
        none_weight: loss weight of NONE spans.
        casing_dim: width of the word-shape embedding; 0 for none.

    Examples:
    >>> encoder = Encoder(vocabulary_size=100, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> model = SpanNER(encoder, num_classes=5, max_span_width=4)
    >>> model.output_shape
    (None, None, 5)
    """

    reads_pooled_output = False  # word vectors only: the pooler stays out of training

    def __init__(self, encoder, num_classes, max_span_width=10, combination="x,y",
                 pooling="attention", width_embedding_dim=32, hidden_dim=256,
                 dropout=0.1, none_weight=1.0, casing_dim=0, **kwargs):
        if num_classes < 2:
            raise ValueError(f"num_classes counts NONE and must be >= 2, got {num_classes}")
        if none_weight <= 0:
            raise ValueError(f"none_weight must be > 0, got {none_weight}")
        if int(casing_dim) < 0:
            raise ValueError(f"casing_dim must be >= 0, got {casing_dim}")

        # === Layers ===
        gather = PositionGather(name="first_subwords")
        grid = SpanGrid(max_span_width, name="spans")
        representation = SpanRepresentation(
            combination=combination,
            max_span_width=max_span_width,
            width_embedding_dim=width_embedding_dim,
            pooling=pooling,
            name="span_representation",
        )
        classifier = SpanClassifier(num_classes, hidden_dim, dropout=dropout,
                                    name="span_classifier")

        # === Functional Model ===
        names = SPAN_INPUTS + ((CASING_INPUT,) if casing_dim else ())
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in names}
        sequence = encoder({name: inputs[name] for name in Encoder.INPUTS})["sequence_output"]
        words = gather(sequence, inputs["word_starts"])
        if casing_dim:
            words = concat_word_shape_embedding(words, inputs[CASING_INPUT], casing_dim)
        spans = grid(inputs["word_mask"])
        logits = classifier(representation(sequence=words, **spans))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.max_span_width = int(max_span_width)
        self.combination = combination
        self.pooling = pooling
        self.width_embedding_dim = int(width_embedding_dim)
        self.hidden_dim = int(hidden_dim)
        self.dropout = float(dropout)
        self.none_weight = float(none_weight)
        self.casing_dim = int(casing_dim)
        self._grid = grid

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        labels = ops.reshape(ops.cast(y, "int32"), (ops.shape(y)[0], -1))  # [B, T·L]
        valid = ops.cast(self._grid(x["word_mask"])["span_mask"], "float32")
        weight = valid * ops.where(labels == 0, self.none_weight, 1.0)
        loss = masked_sparse_cross_entropy(labels, y_pred, weights=weight)
        return self._plus_layer_losses(loss, x, training)

    def predict_step(self, data):
        x = data[0] if isinstance(data, tuple) else data
        return ops.softmax(self(x, training=False), axis=-1)

    def _task_config(self):
        return {
            "num_classes": self.num_classes,
            "max_span_width": self.max_span_width,
            "combination": self.combination,
            "pooling": self.pooling,
            "width_embedding_dim": self.width_embedding_dim,
            "hidden_dim": self.hidden_dim,
            "dropout": self.dropout,
            "none_weight": self.none_weight,
            "casing_dim": self.casing_dim,
        }
