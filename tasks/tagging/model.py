"""The tagging model: encoder → word vectors (first or all subwords) → tag scores (+ CRF)."""

import keras
from keras import ops

from nlpzoo.layers import (
    CRF,
    SUBWORD_POOLINGS,
    Encoder,
    PositionGather,
    SubwordPooling,
    token_transform,
)
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel
from nlpzoo.tasks.modeling.losses import masked_sparse_cross_entropy, replica_weight
from nlpzoo.tasks.words.tags import allowed_transitions
from nlpzoo.tasks.words.preprocessor import WORD_ENDS
from nlpzoo.tasks.words.shapes import CASING_INPUT, concat_word_shape_embedding

HEADS = ("softmax", "crf")
TAGGER_INPUTS = Encoder.INPUTS + ("word_starts", "word_mask")


@keras.saving.register_keras_serializable(package="nlpzoo")
class SequenceTagger(EncoderTaskModel):
    """Tags every word from its first subword's encoder output (or all its subwords').

    The encoder's `sequence_output` is gathered at `word_starts` into a
    compact, left-aligned word sequence, so a CRF sees words without holes;
    a dense layer gives float32 tag scores [batch, words, num_classes].

    With `subword_aggregation` "last", "mean" or "max" a word's vector is
    instead its last subword's, or the mean or element-wise max of all its
    subwords' (`layers.SubwordPooling`, SLP3 §11.3.3; Flair's
    `subtoken_pooling`), and the model takes one more input, `word_ends`
    [batch, words] (one past each word's last subword, from a
    `WordPreprocessor(word_ends=True)`). The dense layer is linear, so "mean"
    gives each word the mean of its subwords' tag scores. "first" (the
    default) builds exactly the model of before the option.

    - `head="softmax"`: each word's tag is the arg-max of its scores; the loss
      is cross-entropy averaged over real words.
    - `head="crf"`: a linear-chain CRF over the word sequence; the loss is the
      negative log-likelihood per real word, decoding is Viterbi. With
      `labels` and `tag_scheme`, transitions the scheme forbids (e.g. `O` →
      `I-PER` in IOB2) are masked in decoding and in training.

    `model(inputs)` returns the tag scores; `model.predict` and
    `predict_on_batch` return decoded tag ids [batch, words] (int32). The
    compiled metrics (`token_accuracy`) see the decoded tags too: Viterbi's
    for a CRF, as one-hot scores.
    Labels are tag ids [batch, words], -1 at padded words.

    With `casing_dim > 0` the model takes one more input, `word_shapes`
    [batch, words] (`tasks.words.shapes`: each word's capitalisation as
    written), and each word's vector is concatenated with a learned
    `casing_dim`-wide embedding of its shape before the tag scores: the
    capitalisation an uncased encoder lower-cased away.

    On an encoder with `pooler_norm=True` (ModernBERT) each word's vector goes
    through the family's prediction head first (`layers.token_transform`:
    dense, activation, LayerNorm; "head_transform"), as
    `ModernBertForTokenClassification` does over every token.

    Args:
        encoder: an `Encoder` (or a functional encoder with inputs
            `Encoder.INPUTS` and a `sequence_output` output).
        num_classes: number of tags.
        head: "softmax" or "crf".
        dropout: dropout on the word vectors.
        labels: tag names in id order (needed for CRF constraints).
        tag_scheme: "IOB2", "IOB1" or "BIOES" to constrain the CRF; None for none.
        casing_dim: width of the word-shape embedding; 0 for none.
        subword_aggregation: one of `layers.SUBWORD_POOLINGS`: which of a
            word's subwords make its vector.

    Examples:
    >>> encoder = Encoder(vocabulary_size=100, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> tagger = SequenceTagger(encoder, num_classes=3, head="crf",
    ...     labels=["O", "B-PER", "I-PER"], tag_scheme="IOB2")
    >>> tagger.output_shape
    (None, None, 3)
    >>> cased = SequenceTagger(encoder, num_classes=3, casing_dim=8)
    >>> "word_shapes" in cased.input
    True
    >>> pooled = SequenceTagger(encoder, num_classes=3, subword_aggregation="mean")
    >>> "word_ends" in pooled.input, "word_ends" in tagger.input
    (True, False)
    """

    reads_pooled_output = False  # word vectors only: the pooler stays out of training

    def __init__(self, encoder, num_classes, head="softmax", dropout=0.1, labels=None,
                 tag_scheme=None, casing_dim=0, subword_aggregation="first", **kwargs):
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        if labels is not None and len(labels) != num_classes:
            raise ValueError(f"{len(labels)} labels given for num_classes={num_classes}")
        if tag_scheme is not None and labels is None:
            raise ValueError("tag_scheme needs the tag names (labels=...)")
        if int(casing_dim) < 0:
            raise ValueError(f"casing_dim must be >= 0, got {casing_dim}")
        if subword_aggregation not in SUBWORD_POOLINGS:
            raise ValueError(f"subword_aggregation must be one of {', '.join(SUBWORD_POOLINGS)}"
                             f", got {subword_aggregation!r}")
        pooled = subword_aggregation != "first"

        # === Layers ===
        # "first" keeps the layer (and the saved models) of before the option.
        gather = (SubwordPooling(subword_aggregation, name="subword_pooling") if pooled
                  else PositionGather(name="first_subwords"))
        transform = token_transform(encoder)
        dropout_layer = keras.layers.Dropout(dropout, name="word_dropout")
        emissions = keras.layers.Dense(
            num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype="float32",
            name="emissions",
        )
        crf = None
        if head == "crf":
            constraints = allowed_transitions(tag_scheme, labels) if tag_scheme else ()
            crf = CRF(num_classes, *constraints, name="crf")

        # === Functional Model ===
        names = (TAGGER_INPUTS + ((CASING_INPUT,) if casing_dim else ())
                 + ((WORD_ENDS,) if pooled else ()))
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in names}
        sequence = encoder({name: inputs[name] for name in Encoder.INPUTS})["sequence_output"]
        spans = (inputs["word_starts"],) + ((inputs[WORD_ENDS],) if pooled else ())
        words = gather(sequence, *spans)
        if transform is not None:
            words = transform(words)
        if casing_dim:
            words = concat_word_shape_embedding(words, inputs[CASING_INPUT], casing_dim)
        words = dropout_layer(words)
        scores = emissions(words)
        if crf is not None:
            scores = crf(scores)
        super().__init__(inputs=inputs, outputs=scores, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.crf = crf
        self.num_classes = int(num_classes)
        self.head = head
        self.dropout = float(dropout)
        self.labels = list(labels) if labels is not None else None
        self.tag_scheme = tag_scheme
        self.casing_dim = int(casing_dim)
        self.subword_aggregation = subword_aggregation

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return self._plus_layer_losses(self.tag_loss(x, y, y_pred), x, training)

    def tag_loss(self, x, y, y_pred):
        """The mean per labelled word (tag -1: not counted) of the CRF's negative
        log-likelihood or the softmax's cross-entropy, weighted by `replica_weight`
        under several replicas; without layer losses and replica scaling."""
        if self.crf is None:
            return masked_sparse_cross_entropy(y, y_pred, weights=x["word_mask"])
        mask = ops.cast(x["word_mask"], "float32") * ops.cast(y >= 0, "float32")
        per_sentence = -self.crf.log_likelihood(y_pred, ops.maximum(y, 0), mask)
        words = ops.sum(mask)
        return ops.sum(per_sentence) / ops.maximum(words, 1.0) * replica_weight(words)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        # A CRF's metrics see the Viterbi tags it outputs (as one-hot scores), not
        # the per-word arg-max of its emissions, which can differ from them.
        if self.crf is not None:
            tags, _ = self.crf.decode(y_pred, ops.cast(x["word_mask"], "int32"))
            y_pred = ops.one_hot(tags, self.num_classes, dtype="float32")
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def decode(self, inputs):
        """Tag ids [batch, words] (int32); 0 at padded words."""
        scores = self(inputs, training=False)
        mask = ops.cast(inputs["word_mask"], "int32")
        if self.crf is not None:
            tags, _ = self.crf.decode(scores, mask)
            return tags
        return ops.cast(ops.argmax(scores, axis=-1), "int32") * mask

    def predict_step(self, data):
        x = data[0] if isinstance(data, tuple) else data
        return self.decode(x)

    def _task_config(self):
        return {
            "num_classes": self.num_classes,
            "head": self.head,
            "dropout": self.dropout,
            "labels": self.labels,
            "tag_scheme": self.tag_scheme,
            "casing_dim": self.casing_dim,
            # Absent for "first": the configs of older models stay as they were.
            **({"subword_aggregation": self.subword_aggregation}
               if self.subword_aggregation != "first" else {}),
        }
