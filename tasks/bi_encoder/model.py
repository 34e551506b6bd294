"""The bi-encoder: one encoder reads each text of a pair alone (Sentence-BERT)."""

import keras
from keras import ops

from nlpzoo.layers import ClassificationHead, CosineSimilarity, Encoder, PairFeatures, SequencePooling
from nlpzoo.layers import POOLINGS, cosine_similarity
from nlpzoo.tasks.modeling.class_metrics import classification_loss, classification_metrics
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel
from nlpzoo.tasks.bi_encoder.ranking_loss import MultipleNegativesRankingLoss, cosine_matrix

OBJECTIVES = ("softmax", "cosine", "multiple_negatives")
# The second tower's inputs are the encoder's, with this prefix.
PAIR_PREFIX = "pair_"
BI_ENCODER_INPUTS = Encoder.INPUTS + tuple(PAIR_PREFIX + name for name in Encoder.INPUTS)
# The hard negatives' inputs (multiple_negatives with hard negatives), with this prefix.
NEGATIVE_PREFIX = "negative_"
NEGATIVE_INPUTS = tuple(NEGATIVE_PREFIX + name for name in Encoder.INPUTS)


def negative_inputs(features):
    """The encoder inputs of the hard negatives, named as the third tower wants them.

    Examples:
    >>> negative_inputs({"token_ids": 1})
    {'negative_token_ids': 1}
    """
    return {NEGATIVE_PREFIX + name: value for name, value in features.items()}


def pair_inputs(features):
    """The encoder inputs of the second text, named as the second tower wants them.

    Examples:
    >>> pair_inputs({"token_ids": 1, "padding_mask": 2})
    {'pair_token_ids': 1, 'pair_padding_mask': 2}
    """
    return {PAIR_PREFIX + name: value for name, value in features.items()}


def split_towers(features):
    """`(inputs of text a, inputs of text b)`, each keyed by `Encoder.INPUTS`."""
    return ({name: features[name] for name in Encoder.INPUTS},
            {name: features[PAIR_PREFIX + name] for name in Encoder.INPUTS})


@keras.saving.register_keras_serializable(package="nlpzoo")
class BiEncoder(EncoderTaskModel):
    """Two texts → one shared encoder and pooling each → a class or a cosine.

    A siamese network with tied weights (Reimers & Gurevych 2019): the same
    encoder (one set of variables) reads text a and text b, each packed
    alone as `[CLS] text [SEP]`, and `SequencePooling` turns each into a
    sentence vector, u and v (the mean over real tokens by default). The
    output depends on the objective:

    - `"softmax"`: class logits [B, num_classes] (float32) from a dense
      layer over `PairFeatures` (u, v, |u − v|), trained with
      cross-entropy (SBERT's classification objective, for NLI or MRPC);
    - `"cosine"`: cos(u, v) [B] (float32), trained with the mean squared
      error against a graded score in [-1, 1] (SBERT's regression
      objective, for STS);
    - `"multiple_negatives"`: cos(u_i, v_j) of every anchor with every
      positive of the batch, [B, B] float32, and with `hard_negatives` a
      third tower (inputs prefixed `negative_`) whose vectors w are more
      candidates: [B, 2B] = [cos(u_i, v_j) | cos(u_i, w_j)]; trained with
      `ranking_loss.MultipleNegativesRankingLoss` (in-batch negatives).

    Inputs are the encoder's three (`token_ids`, `segment_ids`,
    `padding_mask`) for text a and the same with the prefix `pair_` for text
    b, int32 [B, T] and [B, T'] (the two lengths may differ). `embed` gives
    the sentence vector of one text; `pair_outputs` the vectors, the cosine
    and (softmax) the logits of a pair, in one pass.

    Args:
        encoder: an `Encoder` (or a functional encoder with inputs
            `Encoder.INPUTS` and a `sequence_output` output).
        objective: "softmax", "cosine" or "multiple_negatives".
        num_classes: classes of the softmax objective (2 or more; the cosine
            objective has none and ignores it).
        pooling: "mean" (the default), "cls" or "max".
        dropout: dropout on the pair features before the dense layer
            (SBERT has none there; the encoder keeps its own).
        combination: the `PairFeatures` terms of the softmax objective.
        hard_negatives: multiple_negatives: a third tower reads a hard
            negative per pair.

    Examples:
    >>> encoder = Encoder(vocabulary_size=100, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> BiEncoder(encoder, num_classes=3).output_shape
    (None, 3)
    >>> BiEncoder(encoder, objective="cosine").output_shape
    (None,)
    >>> BiEncoder(encoder, objective="multiple_negatives", hard_negatives=True).output_shape
    (None, None)

    References:
        Reimers & Gurevych 2019, Sentence-BERT: Sentence Embeddings using
        Siamese BERT-Networks.
    """

    def __init__(self, encoder, objective="softmax", num_classes=2, pooling="mean",
                 dropout=0.1, combination="u,v,|u-v|", hard_negatives=False, **kwargs):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, "
                             f"got {objective!r}")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        if objective == "softmax" and num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        if hard_negatives and objective != "multiple_negatives":
            raise ValueError("hard negatives are candidates of the multiple_negatives "
                             f"objective, not of {objective!r}")
        kwargs.setdefault("name", "bi_encoder")

        # === Layers ===
        pooling_layer = SequencePooling(pooling, name="pooling")
        if objective == "softmax":
            features = PairFeatures(combination, name="pair_features")
            head = ClassificationHead(num_classes, dropout=dropout, name="classification_head")
        elif objective == "cosine":
            cosine = CosineSimilarity(name="cosine")

        # === Functional Model ===
        names = BI_ENCODER_INPUTS + (NEGATIVE_INPUTS if hard_negatives else ())
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in names}
        towers = split_towers(inputs)
        if hard_negatives:
            towers += ({name: inputs[NEGATIVE_PREFIX + name] for name in Encoder.INPUTS},)
        vectors = []
        for tower in towers:
            sequence = encoder(tower)["sequence_output"]
            vectors.append(pooling_layer(sequence, padding_mask=tower["padding_mask"]))
        u, v = vectors[:2]
        if objective == "softmax":
            output = head(features(u, v))
        elif objective == "cosine":
            output = cosine(u, v)
        else:  # every anchor against every candidate of the batch
            output = cosine_matrix(u, keras.ops.concatenate(vectors[1:], axis=0))
        super().__init__(inputs=inputs, outputs=output, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.objective = objective
        self.num_classes = int(num_classes)
        self.pooling = pooling
        self.dropout = float(dropout)
        self.combination = combination
        self.hard_negatives = bool(hard_negatives)

    def embed(self, features, training=False):
        """The sentence vector [B, H] of one text from its encoder inputs (`Encoder.INPUTS`)."""
        inputs = {name: features[name] for name in Encoder.INPUTS}
        sequence = self.encoder(inputs, training=training)["sequence_output"]
        return self.get_layer("pooling")(sequence, padding_mask=inputs["padding_mask"])

    def pair_outputs(self, features, training=False):
        """`embedding` (u), `pair_embedding` (v), `cosine` and, for softmax, `logits` of a
        batch of pairs (the model's inputs); what the model computes, and more."""
        a, b = split_towers(features)
        u, v = self.embed(a, training), self.embed(b, training)
        outputs = {"embedding": u, "pair_embedding": v, "cosine": cosine_similarity(u, v)}
        if self.objective == "softmax":
            pair = self.get_layer("pair_features")(u, v)
            outputs["logits"] = self.get_layer("classification_head")(pair, training=training)
        return outputs

    def _task_config(self):
        return {
            "objective": self.objective,
            "num_classes": self.num_classes,
            "pooling": self.pooling,
            "dropout": self.dropout,
            "combination": self.combination,
            "hard_negatives": self.hard_negatives,
        }


@keras.saving.register_keras_serializable(package="nlpzoo")
def cosine_squared_error(scores, cosines):
    """Per-pair squared error (score − cos)² [B], float32: the cosine objective's loss.

    Examples:
    >>> import numpy as np
    >>> cosine_squared_error(np.array([1.0, 0.0]), np.array([0.5, 0.5])).numpy().tolist()
    [0.25, 0.25]
    """
    scores = ops.reshape(ops.cast(scores, "float32"), (-1,))
    cosines = ops.reshape(ops.cast(cosines, "float32"), (-1,))
    return ops.square(scores - cosines)


def bi_encoder_loss(objective, ranking_scale=20.0, symmetric=False):
    """Cross-entropy on the logits (softmax), the mean squared error of the cosine, or the
    multiple-negatives ranking loss (`ranking_scale`, `symmetric`: see `ranking_loss`)."""
    if objective == "softmax":
        return classification_loss()
    if objective == "multiple_negatives":
        return MultipleNegativesRankingLoss(scale=ranking_scale, symmetric=symmetric)
    return cosine_squared_error


def bi_encoder_metrics(objective, num_classes=None):
    """Accuracy (and F1 of class 1 for two classes), or the cosine's mean squared error;
    multiple_negatives: none (its validation ranks the validation pairs: the task's
    `evaluate`)."""
    if objective == "softmax":
        return classification_metrics(num_classes)
    if objective == "multiple_negatives":
        return []
    return [keras.metrics.MeanMetricWrapper(cosine_squared_error, name="mse")]
