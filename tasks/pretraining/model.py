"""The pretraining model: an encoder with masked-LM, NSP / SOP or span-boundary heads."""

import keras
from keras import ops

from nlpzoo.layers import (
    Encoder,
    MaskedLMHead,
    NextSentenceHead,
    SpanBoundaryHead,
    encoder_head_settings,
    transformer_of,
)
from nlpzoo.layers.masked_lm_head import LEGACY_HEAD_SETTINGS
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel, MaskedAccuracy
from nlpzoo.tasks.modeling.losses import masked_sparse_cross_entropy, replica_weight
from nlpzoo.tasks.pretraining.pair_objectives import pair_objective
from nlpzoo.tasks.pretraining.pipeline import OBJECTIVES

_SPAN_INPUTS = ("span_left", "span_right", "span_offset")


@keras.saving.register_keras_serializable(package="nlpzoo")
class Pretrainer(EncoderTaskModel):
    """Pretrains an encoder with one of four objectives.

    - `"mlm"`: BERT's masked LM; loss = mean cross-entropy over the masked
      positions.
    - `"mlm_nsp"`: masked LM + next sentence prediction on `[CLS] a [SEP] b
      [SEP]` pairs (b follows a, or comes from another document); loss =
      MLM + NSP.
    - `"mlm_sop"`: masked LM + ALBERT's sentence-order prediction on the same
      pairs, two consecutive segments of one document in their order or
      swapped; loss = MLM + SOP.
    - `"span_sbo"`: SpanBERT: masked LM on span-masked input + the span
      boundary objective; loss = MLM + SBO; no NSP.

    The MLM and SBO decoders are tied to the encoder's token embedding table;
    the heads are re-created (and re-tied) from the encoder whenever the model
    is rebuilt, so `.keras` files reload tied. Inputs and labels are the
    elements of `make_pretraining_dataset`. NSP and SOP each classify the
    pooled output two ways with a `NextSentenceHead` (layer `nsp_head` or
    `sop_head`, output `nsp_logits` or `sop_logits`; `pair_objectives`).
    Logged metrics: `mlm_loss`, `mlm_accuracy` and, with their objectives,
    `nsp_loss`, `nsp_accuracy`, `sop_loss`, `sop_accuracy`, `sbo_loss`,
    `sbo_accuracy`; `loss` is their sum.

    Args:
        encoder: an `Encoder` (or the functional encoder of an older
            `.keras` file: anything `transformer_of` accepts).
        objective: "mlm", "mlm_nsp", "mlm_sop" or "span_sbo".
        max_span_length: SBO relative-position embeddings (in tokens).
        mlm_settings: the MLM head's `activation` and `layer_norm_epsilon`;
            None: the encoder's (`layers.encoder_head_settings`). A `.keras`
            file saved before the head followed its encoder reloads with
            BERT's (exact GELU, 1e-12), as it was made.

    Examples:
    >>> import numpy as np
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> model = Pretrainer(encoder, objective="mlm_nsp")
    >>> x = {"token_ids": np.array([[2, 4, 7, 3, 9, 3]]),
    ...      "segment_ids": np.array([[0, 0, 0, 0, 1, 1]]),
    ...      "padding_mask": np.ones((1, 6), "int32"), "mask_positions": np.array([[1]])}
    >>> {name: tuple(value.shape) for name, value in sorted(model(x).items())}
    {'mlm_logits': (1, 1, 50), 'nsp_logits': (1, 2)}
    >>> sorted(Pretrainer(encoder, objective="mlm_sop")(x))
    ['mlm_logits', 'sop_logits']
    """

    def __init__(self, encoder, objective="mlm", max_span_length=30, mlm_settings=None,
                 **kwargs):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        transformer = transformer_of(encoder)
        embedding = transformer.token_embedding
        mlm_settings = dict(mlm_settings or encoder_head_settings(transformer))

        # === Layers ===
        mlm_head = MaskedLMHead(transformer.vocabulary_size, embedding_layer=embedding,
                                name="mlm_head", **mlm_settings)
        pair = pair_objective(objective)
        pair_head = NextSentenceHead(name=pair.head) if pair is not None else None
        sbo_head = None
        if objective == "span_sbo":
            sbo_head = SpanBoundaryHead(transformer.vocabulary_size, embedding_layer=embedding,
                                        max_span_length=max_span_length, name="sbo_head")

        # === Functional Model ===
        names = Encoder.INPUTS + ("mask_positions",)
        if sbo_head is not None:
            names += _SPAN_INPUTS
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in names}
        encoded = encoder({name: inputs[name] for name in Encoder.INPUTS})
        sequence = encoded["sequence_output"]
        outputs = {"mlm_logits": mlm_head(sequence, inputs["mask_positions"])}
        if pair_head is not None:
            outputs[pair.logits] = pair_head(encoded["pooled_output"])
        if sbo_head is not None:
            outputs["sbo_logits"] = sbo_head(
                sequence, *(inputs[name] for name in _SPAN_INPUTS))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.objective = objective
        self.max_span_length = int(max_span_length)
        self.mlm_settings = mlm_settings

        # === Metrics === (updated by compute_loss, so fit and evaluate log them)
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.mlm_accuracy = MaskedAccuracy(name="mlm_accuracy")
        # NSP or SOP: the attributes (which `.keras` files name) and metrics take the
        # pair objective's prefix: nsp_loss_tracker / nsp_accuracy, sop_loss_tracker / ...
        self.nsp_loss_tracker = self.nsp_accuracy = None
        self.sop_loss_tracker = self.sop_accuracy = None
        self.sbo_loss_tracker = self.sbo_accuracy = None
        if pair_head is not None:
            setattr(self, f"{pair.prefix}_loss_tracker",
                    keras.metrics.Mean(name=f"{pair.prefix}_loss"))
            setattr(self, f"{pair.prefix}_accuracy",
                    keras.metrics.SparseCategoricalAccuracy(name=f"{pair.prefix}_accuracy"))
        if sbo_head is not None:
            self.sbo_loss_tracker = keras.metrics.Mean(name="sbo_loss")
            self.sbo_accuracy = MaskedAccuracy(name="sbo_accuracy")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        mlm_labels = ops.cast(y["mlm_labels"], "int32")
        loss = masked_sparse_cross_entropy(mlm_labels, y_pred["mlm_logits"])
        self.mlm_loss_tracker.update_state(loss)
        self.mlm_accuracy.update_state(mlm_labels, y_pred["mlm_logits"])
        pair = pair_objective(self.objective)
        if pair is not None:  # NSP or SOP: two-way cross-entropy on the pooled output
            labels = ops.cast(y[pair.label], "int32")
            pair_loss = ops.mean(keras.losses.sparse_categorical_crossentropy(
                labels, y_pred[pair.logits], from_logits=True)) * replica_weight(
                    ops.shape(labels)[0])
            getattr(self, f"{pair.prefix}_loss_tracker").update_state(pair_loss)
            getattr(self, f"{pair.prefix}_accuracy").update_state(labels, y_pred[pair.logits])
            loss = loss + pair_loss
        if self.sbo_loss_tracker is not None:
            sbo_labels = ops.cast(y["sbo_labels"], "int32")
            sbo_loss = masked_sparse_cross_entropy(sbo_labels, y_pred["sbo_logits"])
            self.sbo_loss_tracker.update_state(sbo_loss)
            self.sbo_accuracy.update_state(sbo_labels, y_pred["sbo_logits"])
            loss = loss + sbo_loss
        return self._plus_layer_losses(loss)

    def _task_config(self):
        return {"objective": self.objective, "max_span_length": self.max_span_length,
                "mlm_settings": dict(self.mlm_settings)}

    @classmethod
    def from_config(cls, config):
        return super().from_config({"mlm_settings": LEGACY_HEAD_SETTINGS, **config})
