"""The auxiliary masked-LM loss of fine-tuning: L = L_task + λ_t · L_MLM.

Chronopoulou et al. (2019), "An Embarrassingly Simple Approach for Transfer
Learning from Pretrained Language Models": keeping the language-modelling
objective alive while fine-tuning, on the task's own inputs, holds the
encoder near what pretraining taught it (a regulariser against catastrophic
forgetting) and adapts it to the task's text. For a BERT-style encoder the
language model is the masked LM: each training batch is masked again
(dynamic masking, BERT's 15% with 80/10/10, new masks every step), run
through the shared encoder a second time, and decoded by a masked-LM head
tied to the encoder's token embeddings. The task's own forward pass sees
the unmasked batch, so the task loss is unchanged; a step costs about one
more encoder pass.

λ_t is `weight`, or with `anneal_steps` the linear anneal
`weight · max(0, 1 − step / anneal_steps)` (0 at the end of training).

The loss's gradient reaches the encoder and the masked-LM head only: the
task head is not on its path. The objective is part of the task model
(`EncoderTaskModel.attach_auxiliary_mlm`): its head is saved with the model
and its config restores it, so that a resumed run and a reloaded best model
are the same model; inference never calls it. Logged as
`auxiliary_mlm_loss` and `auxiliary_mlm_accuracy` (validation too, on fixed
masks), beside the task's metrics; `loss` is L.
"""

import keras
import tensorflow as tf
from keras import ops

from nlpzoo.layers import Encoder, MaskedLMHead, encoder_head_settings, transformer_of
from nlpzoo.tasks.modeling.losses import masked_sparse_cross_entropy
from nlpzoo.tasks.text.masking import batch_mlm_mask
from nlpzoo.tasks.text.masking import default_max_predictions

_MASKING_STREAM = 7919  # keeps these masks apart from other uses of the seed


@keras.saving.register_keras_serializable(package="nlpzoo")
class AuxiliaryMaskedLM(keras.layers.Layer):
    """The masked-LM objective that a task model adds to its loss while it trains.

    Not a layer of the model's graph: the task model calls `loss` from its
    `compute_loss` with the batch's features, its encoder and the step.
    Build it with `auxiliary_mlm_for` (which reads the special ids off a
    tokenizer) and attach it with `model.attach_auxiliary_mlm`.

    Args:
        weight: λ, > 0.
        vocabulary_size: V of the encoder.
        mask_id: the [MASK] id.
        special_ids: ids never masked ([PAD], [CLS], [SEP], [MASK], [UNK]).
        max_predictions: masked slots per sequence (static).
        anneal_steps: anneal λ linearly to 0 over this many steps (0: constant).
        mask_rate: share of the eligible tokens masked (BERT's 0.15).
        seed: keys the masks, with the step: the same run masks the same way.

    Examples:
    >>> import numpy as np
    >>> objective = AuxiliaryMaskedLM(weight=0.5, vocabulary_size=50, mask_id=4,
    ...                               special_ids=(0, 1, 2, 3, 4), max_predictions=3,
    ...                               anneal_steps=100)
    >>> [round(float(objective.weight_at(step)), 3) for step in (0, 50, 100, 150)]
    [0.5, 0.25, 0.0, 0.0]
    >>> AuxiliaryMaskedLM.from_config(objective.get_config()).get_config() == objective.get_config()
    True
    """

    def __init__(self, weight, vocabulary_size, mask_id, special_ids, max_predictions=20,
                 anneal_steps=0, mask_rate=0.15, seed=0, **kwargs):
        super().__init__(**kwargs)
        if not weight > 0:
            raise ValueError(f"the auxiliary masked-LM weight must be > 0, got {weight}")
        if anneal_steps < 0:
            raise ValueError(f"anneal_steps must be >= 0, got {anneal_steps}")
        self.weight = float(weight)
        self.vocabulary_size = int(vocabulary_size)
        self.mask_id = int(mask_id)
        self.special_ids = tuple(sorted(set(int(i) for i in special_ids) | {int(mask_id)}))
        self.max_predictions = int(max_predictions)
        self.anneal_steps = int(anneal_steps)
        self.mask_rate = float(mask_rate)
        self.seed = int(seed)
        self.head = None
        self.loss_tracker = keras.metrics.Mean(name="auxiliary_mlm_loss")
        self.accuracy = keras.metrics.SparseCategoricalAccuracy(name="auxiliary_mlm_accuracy")

    def tie(self, encoder):
        """Creates and builds the head, its decoder tied to `encoder`'s token embeddings."""
        transformer = transformer_of(encoder)
        if transformer.vocabulary_size != self.vocabulary_size:
            raise ValueError(f"the encoder has {transformer.vocabulary_size} token "
                             f"embeddings, the objective {self.vocabulary_size}")
        # The encoder's GELU form and LayerNorm epsilon, as pretraining's head has them
        # (BERT's defaults otherwise: a RoBERTa-style encoder's 1e-5 epsilon would be lost).
        self.head = MaskedLMHead(self.vocabulary_size,
                                 embedding_layer=transformer.token_embedding,
                                 name="auxiliary_mlm_head", **encoder_head_settings(transformer))
        self.head.build((None, None, transformer.hidden_dim), (None, self.max_predictions))
        self.built = True
        return self

    def weight_at(self, step):
        """λ at optimizer step `step` (a float32 scalar)."""
        weight = ops.convert_to_tensor(self.weight, "float32")
        if not self.anneal_steps:
            return weight
        done = ops.cast(step, "float32") / float(self.anneal_steps)
        return weight * ops.maximum(1.0 - done, 0.0)

    def loss(self, encoder, features, step, training):
        """λ_step · L_MLM on `features` masked afresh (the unweighted loss is logged).

        With `training` False (validation), the masks are those of step 0 and
        the weight is 0: the MLM loss is logged but not part of the total.
        """
        if self.head is None:
            raise ValueError("the auxiliary masked-LM objective is not tied to an encoder: "
                             "attach it with model.attach_auxiliary_mlm")
        step = ops.cast(step, "int64") if training else ops.zeros((), "int64")
        seed = tf.stack([tf.constant(self.seed, tf.int64) * _MASKING_STREAM, step])
        masked = batch_mlm_mask(features["token_ids"], seed=seed,
                                vocabulary_size=self.vocabulary_size, mask_id=self.mask_id,
                                max_predictions=self.max_predictions,
                                special_ids=self.special_ids, mask_rate=self.mask_rate)
        inputs = {name: features[name] for name in Encoder.INPUTS}
        inputs["token_ids"] = masked["masked_token_ids"]
        # The last block's output, as in pretraining, whatever layer mix the task reads.
        sequence = transformer_of(encoder)(**inputs, training=training)["sequence_output"]
        logits = self.head(sequence, masked["mask_positions"])
        labels = masked["target_ids"]
        loss = masked_sparse_cross_entropy(labels, logits)
        self.loss_tracker.update_state(loss)
        self.accuracy.update_state(ops.maximum(labels, 0), logits,
                                   sample_weight=masked["mask_weights"])
        if not training:
            return ops.zeros((), "float32")
        return self.weight_at(step) * loss

    def get_config(self):
        config = super().get_config()
        config.update(weight=self.weight, vocabulary_size=self.vocabulary_size,
                      mask_id=self.mask_id, special_ids=list(self.special_ids),
                      max_predictions=self.max_predictions, anneal_steps=self.anneal_steps,
                      mask_rate=self.mask_rate, seed=self.seed)
        return config


def auxiliary_mlm_for(tokenizer, weight, max_seq_length, anneal_steps=0, seed=0):
    """The objective for a model whose inputs come from `tokenizer` (a `WordPieceTokenizer`).

    [PAD], [UNK], [CLS], [SEP] and [MASK] are never masked; a vocabulary
    without [MASK] is refused. `max_predictions` covers 15% of a
    `max_seq_length` sequence.

    Examples:
    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> objective = auxiliary_mlm_for(tokenizer, weight=0.3, max_seq_length=128)
    >>> objective.special_ids, objective.max_predictions
    ((0, 1, 2, 3, 4), 20)
    """
    if "[MASK]" not in tokenizer.vocabulary:
        raise ValueError("the vocabulary has no [MASK] token, which masked-LM needs")
    return AuxiliaryMaskedLM(
        weight, vocabulary_size=len(tokenizer.vocabulary), mask_id=tokenizer.mask_id,
        special_ids=(tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id),
        max_predictions=default_max_predictions(max_seq_length), anneal_steps=anneal_steps,
        seed=seed, name="auxiliary_mlm")
