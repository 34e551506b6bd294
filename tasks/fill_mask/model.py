"""The fill-mask model: an encoder and its masked-LM head, logits at the masks."""

import keras

from nlpzoo.layers import Encoder, MaskedLMHead, encoder_head_settings, transformer_of
from nlpzoo.layers.masked_lm_head import LEGACY_HEAD_SETTINGS
from nlpzoo.tasks.fill_mask.preprocessor import MODEL_INPUTS
from nlpzoo.tasks.modeling.encoder_task_model import EncoderTaskModel


@keras.saving.register_keras_serializable(package="nlpzoo")
class FillMaskModel(EncoderTaskModel):
    """Encoder inputs and `mask_positions` [B, M] → float32 logits [B, M, vocabulary].

    The head is BERT's masked-LM head (`layers.MaskedLMHead`, named
    "mlm_head": dense + GELU + LayerNorm, decoded with the encoder's word
    embeddings and its own bias), with the encoder's GELU form and LayerNorm
    epsilon (`layers.encoder_head_settings`): the head `tools/pretrain.py`
    trains and Hugging Face's `*ForMaskedLM` checkpoints carry
    (`cls.predictions.*`, RoBERTa's `lm_head.*`, ...; `zoo.checkpoints.heads`).
    Built here it starts at random: `zoo.load_pretrained(path, "fill_mask")`
    and the binaries load it from the checkpoint, and refuse a checkpoint
    without one. Nothing of it trains here (the task's `trainable` is False).

    Args:
        encoder: an `Encoder` (anything `transformer_of` accepts).
        mlm_settings: the head's `activation` and `layer_norm_epsilon`; None:
            the encoder's. A `.keras` file saved before the head followed its
            encoder reloads with BERT's (exact GELU, 1e-12), as it was made.

    Examples:
    >>> import numpy as np
    >>> encoder = Encoder(vocabulary_size=50, num_layers=1, num_heads=2,
    ...                   hidden_dim=16, intermediate_dim=32)
    >>> model = FillMaskModel(encoder)
    >>> ids = np.array([[2, 9, 4, 3]])
    >>> logits = model.predict_on_batch({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                                  "padding_mask": np.ones_like(ids),
    ...                                  "mask_positions": np.array([[2]])})
    >>> logits.shape, logits.dtype
    ((1, 1, 50), dtype('float32'))
    """

    reads_pooled_output = False

    def __init__(self, encoder, mlm_settings=None, **kwargs):
        transformer = transformer_of(encoder)
        kwargs.setdefault("name", "fill_mask")
        mlm_settings = dict(mlm_settings or encoder_head_settings(transformer))

        # === Layers ===
        mlm_head = MaskedLMHead(transformer.vocabulary_size,
                                embedding_layer=transformer.token_embedding, name="mlm_head",
                                **mlm_settings)

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in MODEL_INPUTS}
        encoded = encoder({name: inputs[name] for name in Encoder.INPUTS})
        logits = mlm_head(encoded["sequence_output"], inputs["mask_positions"])
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.mlm_settings = mlm_settings

    def _task_config(self):
        return {"mlm_settings": dict(self.mlm_settings)}

    @classmethod
    def from_config(cls, config):
        return super().from_config({"mlm_settings": LEGACY_HEAD_SETTINGS, **config})
