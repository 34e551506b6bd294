"""Masked-LM evaluation of plain text: a fixed masking, then top-1, top-5 and perplexity.

The masking is `tasks.text.masking.mlm_mask` (the pretraining code) with only
its [MASK] treatment: 15% of each text's word pieces (rounded half up, at
least one, at most `default_max_predictions(max_seq_length)`), never [CLS],
[SEP], [PAD], [UNK] or [MASK], each replaced by [MASK] (no random or kept
tokens, so the figure does not depend on the 80/10/10 draw). It is keyed by
`(seed, the text's index)`: the same file and seed give the same masks on
every run, whatever the batch size. Texts longer than `max_seq_length` are
truncated first, as in prediction.

Scores are over every masked position of the file, with the softmax over
the whole vocabulary (as in pretraining's `mlm_accuracy`; no token is
filtered out): top-1 and top-5 accuracy, the mean cross-entropy (nats) and
perplexity = exp(mean cross-entropy), and the number of masked tokens.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from nlpzoo.tasks.text.masking import default_max_predictions, mlm_mask

_TOKEN_FEATURES = ("token_ids", "segment_ids", "padding_mask")
_ENCODE_BATCH = 512


def evaluation_special_ids(tokenizer):
    """The ids never masked for evaluation: [PAD], [UNK], [CLS], [SEP] and [MASK]."""
    return tuple(sorted({tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id,
                         tokenizer.sep_id, tokenizer.mask_id}))


def masked_evaluation_dataset(texts, preprocessor, batch_size=32, seed=0, mask_rate=0.15):
    """Batches `(features, target_ids)` of `texts` masked for evaluation (module docstring).

    Args:
        texts: the texts, in order (their index keys their masks).
        preprocessor: a `FillMaskPreprocessor`.
        batch_size: texts per batch.
        seed: an int; with the text's index, it decides the masks.
        mask_rate: the share of eligible word pieces masked.

    Returns:
        A `tf.data.Dataset` of `(features, targets)`: the model's inputs
        (`token_ids` with the masks in place, `segment_ids`, `padding_mask`,
        `mask_positions` [B, P]) and int32 `targets` [B, P], the original ids,
        -1 in unused slots. In text order.

    Examples:
    >>> from nlpzoo.tasks.fill_mask.preprocessor import FillMaskPreprocessor
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d"]
    >>> preprocessor = FillMaskPreprocessor(vocabulary, max_seq_length=16)
    >>> features, targets = next(iter(masked_evaluation_dataset(["a b c d a b c d"], preprocessor)))
    >>> int((targets.numpy() >= 0).sum()), tuple(targets.shape)  # round(.15 × 8), ceil(.15 × 16)
    (1, (1, 3))
    >>> ids = features["token_ids"].numpy()[0]
    >>> int(ids[features["mask_positions"].numpy()[0, 0]]), int(targets[0, 0]) in (5, 6, 7, 8)
    (4, True)
    """
    tokenizer = preprocessor.tokenizer()
    max_predictions = default_max_predictions(preprocessor.max_seq_length, mask_rate)
    special_ids = evaluation_special_ids(tokenizer)
    indices = tf.range(len(texts), dtype=tf.int64)
    dataset = tf.data.Dataset.from_tensor_slices((tf.constant(list(texts), tf.string), indices))

    def encode(text, index):
        features = preprocessor.encode(text)
        return {name: features[name] for name in _TOKEN_FEATURES}, index

    def mask(features, index):
        masked = mlm_mask(features["token_ids"], seed=tf.stack([tf.cast(seed, tf.int64), index]),
                          vocabulary_size=tokenizer.vocabulary_size, mask_id=tokenizer.mask_id,
                          max_predictions=max_predictions, special_ids=special_ids,
                          mask_rate=mask_rate, mask_token_rate=1.0, random_token_rate=0.0)
        inputs = {"token_ids": masked["masked_token_ids"],
                  "segment_ids": features["segment_ids"],
                  "padding_mask": features["padding_mask"],
                  "mask_positions": masked["mask_positions"]}
        targets = tf.where(masked["mask_weights"] > 0, masked["target_ids"], -1)
        return inputs, targets

    dataset = dataset.batch(_ENCODE_BATCH).map(encode).unbatch().map(mask)
    padding = ({"token_ids": tf.constant(tokenizer.pad_id, tf.int32),
                "segment_ids": 0, "padding_mask": 0, "mask_positions": 0}, -1)
    return dataset.padded_batch(batch_size, padding_values=padding)


@dataclasses.dataclass
class MaskedLMScores:
    """Running totals of masked-LM scores; `add` a batch, then `result()`.

    Examples:
    >>> scores = MaskedLMScores()
    >>> logits = np.log(np.array([[[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]]]))
    >>> scores.add(logits, np.array([[0, 1]]))
    >>> result = scores.result()
    >>> result["top1_accuracy"], result["masked_tokens"]
    (0.5, 2)
    >>> round(result["perplexity"], 4) == round(float(np.exp(-(np.log(0.7) + np.log(0.3)) / 2)), 4)
    True
    """

    top1: int = 0
    top5: int = 0
    cross_entropy: float = 0.0
    count: int = 0

    def add(self, logits, targets):
        """One batch: `logits` [B, P, V], `targets` [B, P] (-1: no mask in that slot)."""
        targets = np.asarray(targets)
        real = targets >= 0
        logits = np.asarray(logits, np.float64)[real]  # [N, V]
        targets = targets[real]
        if not len(targets):
            return
        shifted = logits - logits.max(axis=-1, keepdims=True)
        log_normaliser = np.log(np.exp(shifted).sum(axis=-1))
        target_logits = np.take_along_axis(shifted, targets[:, None], axis=-1)[:, 0]
        self.cross_entropy += float(np.sum(log_normaliser - target_logits))
        # The target's rank: how many tokens score strictly higher (ties favour the target).
        rank = np.sum(shifted > target_logits[:, None], axis=-1)
        self.top1 += int(np.sum(rank < 1))
        self.top5 += int(np.sum(rank < 5))
        self.count += len(targets)

    def result(self):
        """`top1_accuracy`, `top5_accuracy`, `cross_entropy` (mean, nats), `perplexity`
        and `masked_tokens`."""
        if not self.count:
            raise ValueError("no token was masked: the texts have no word pieces to predict")
        mean = self.cross_entropy / self.count
        return {"top1_accuracy": self.top1 / self.count, "top5_accuracy": self.top5 / self.count,
                "cross_entropy": mean, "perplexity": float(np.exp(mean)),
                "masked_tokens": self.count}


def masked_lm_scores(model, dataset):
    """`MaskedLMScores(...).result()` of `model` (a `FillMaskModel`) on
    `masked_evaluation_dataset` batches."""
    scores = MaskedLMScores()
    for features, targets in dataset:
        scores.add(model.predict_on_batch(features), targets)
    return scores.result()
