"""The prompt-based classifier: encoder + masked-LM head at the masks → verbalizer scores."""

import keras

from nlpzoo.layers import Encoder, PatternRows, VerbalizerScores, pattern_rows
from nlpzoo.tasks.fill_mask.model import FillMaskModel
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel

_SEQUENCE_INPUTS = Encoder.INPUTS


@keras.saving.register_keras_serializable(package="nlpzoo")
class PromptClassifier(EncoderTaskModel):
    """`PromptPreprocessor` features → class scores [B, C] (float32), used as logits.

    Each of the P filled-in patterns of an example is encoded as its own row
    (`layers.PatternRows`); the masked-LM head gives logits over the
    vocabulary at its n masks; `layers.VerbalizerScores` turns them into each
    label word's mean log-probability (log-softmax over the vocabulary) and
    averages them over the patterns. A softmax over these scores gives the
    class probabilities, and training is cross-entropy on them.

    The head is the fill-mask model's (`tasks.fill_mask.model.FillMaskModel`:
    the layer "mlm_head", tied to the encoder's word embeddings), so whatever
    head the fill-mask task builds for an encoder is the head here; it starts
    at random and is loaded from the checkpoint (`Task.pretrained_heads`).

    Args:
        encoder: an `Encoder`.
        num_classes: C, the labels (2 or more).
        num_patterns: P, the patterns each example is read with.

    Examples:
    >>> import numpy as np
    >>> encoder = Encoder(vocabulary_size=40, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> model = PromptClassifier(encoder, num_classes=2, num_patterns=2)
    >>> ids = np.array([[[2, 2], [9, 4], [4, 7], [3, 4], [0, 3]]])  # [B=1, T=5, P=2]
    >>> scores = model.predict_on_batch({
    ...     "token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": ids > 0,
    ...     "mask_positions": np.array([[[2, 1], [3, 2]]]),           # [B, n=2, P]
    ...     "label_piece_ids": np.array([[[11, -1], [12, 13]]])})     # [B, C, n]
    >>> scores.shape, bool((scores < 0).all())  # mean log-probabilities
    ((1, 2), True)
    """

    reads_pooled_output = False

    def __init__(self, encoder, num_classes, num_patterns=1, **kwargs):
        if int(num_classes) < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        kwargs.setdefault("name", "prompt_classifier")

        # === Layers ===
        # The fill-mask task's head for this encoder, shared into this graph.
        mlm_head = FillMaskModel(encoder).get_layer("mlm_head")
        rows = PatternRows(name="pattern_rows")
        verbalizer = VerbalizerScores(num_patterns, name="verbalizer_scores")

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None, num_patterns), dtype="int32", name=name)
                  for name in _SEQUENCE_INPUTS}
        inputs["mask_positions"] = keras.Input(shape=(None, num_patterns), dtype="int32",
                                               name="mask_positions")
        inputs["label_piece_ids"] = keras.Input(shape=(num_classes, None), dtype="int32",
                                                name="label_piece_ids")
        encoded = encoder({name: rows(inputs[name]) for name in _SEQUENCE_INPUTS})
        logits = mlm_head(encoded["sequence_output"], rows(inputs["mask_positions"]))
        scores = verbalizer(logits, inputs["label_piece_ids"])
        super().__init__(inputs=inputs, outputs=scores, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.num_patterns = int(num_patterns)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        # The padding fraction counts the encoder's rows: one per (example, pattern).
        if isinstance(x, dict) and "padding_mask" in x:
            x = {**x, "padding_mask": pattern_rows(x["padding_mask"])}
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def attach_auxiliary_mlm(self, objective):
        raise ValueError("a prompt-based classifier already trains through its masked-LM "
                         "head; an auxiliary masked-LM loss is not available for it")

    def _task_config(self):
        return {"num_classes": self.num_classes, "num_patterns": self.num_patterns}
